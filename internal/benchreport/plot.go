package benchreport

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                       = 800, 500
	marginL, marginR, marginT, marginB = 80, 190, 50, 60
)

// The two curves' colours (colour-blind-safe blue and orange).
const (
	throughputColor = "#0072B2"
	goodputColor    = "#D55E00"
)

// WritePlot draws the sweep as SVG: output token throughput and goodput
// (tokens/s, one axis) against p99 TTFT (ms), one marker per file labelled
// with its offered load, the knee circled, and the TTFT objective as a
// dashed line. It needs at least one point with a TTFT sample. Labels stay
// inside the plotting area, clear of the legend in the right margin.
func WritePlot(w io.Writer, s Sweep) error {
	pl, err := newPlot(s)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<title>Throughput and goodput against %s TTFT</title>
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="24" font-size="16" font-weight="bold">Output tokens/s against %s TTFT, one point per benchmark run</text>
`, plotW, plotH, plotW, plotH, pl.pName, marginL, pl.pName)
	pl.writeAxes(&b)
	if pl.hasLimit {
		pl.writeObjective(&b)
	}
	pl.writeCurve(&b, "throughput", throughputColor, func(p plotPoint) float64 { return p.thr }, "circle")
	pl.writeCurve(&b, "goodput", goodputColor, func(p plotPoint) float64 { return p.good }, "square")
	pl.writePointLabels(&b)
	pl.writeKnee(&b, s)
	writeLegend(&b)
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// plotPoint is one benchmark run on the plot: p99 TTFT in ms, throughput and
// goodput in tokens/s (goodput NaN without objectives), and its label.
type plotPoint struct {
	x, thr, good float64
	label        string
}

// plot holds what the parts of the SVG share: the points, the axes' ticks
// and the TTFT objective.
type plot struct {
	pts      []plotPoint
	pName    string // the TTFT percentile plotted ("p99")
	xt, yt   []float64
	ttftMs   float64 // the knee's TTFT objective, when hasLimit
	hasLimit bool
}

// newPlot places the sweep's points with a TTFT sample and chooses ticks
// that hold them and the knee's TTFT objective.
func newPlot(s Sweep) (*plot, error) {
	pl := &plot{pName: "p99"}
	for i, p := range s.Points {
		_, x, ok := tail(p.TTFT)
		if !ok {
			continue
		}
		g := math.NaN()
		if p.Goodput != nil {
			g = p.Goodput.TokensPerSecond
		}
		pl.pts = append(pl.pts, plotPoint{x * 1000, p.OutputThroughput, g, s.LoadLabel(i)})
	}
	if len(pl.pts) == 0 {
		return nil, errors.New("plot: no point has a TTFT sample")
	}
	if p, _, ok := tail(s.Points[0].TTFT); ok {
		pl.pName = "p" + fmtG(p)
	}
	xmax, ymax := 0.0, 0.0
	for _, p := range pl.pts {
		xmax, ymax = math.Max(xmax, p.x), math.Max(ymax, p.thr)
	}
	if s.Knee >= 0 {
		if l, ok := threshold(s.Points[s.Knee].Goodput.Objectives, "ttft"); ok {
			pl.ttftMs, pl.hasLimit = l*1000, true
			xmax = math.Max(xmax, pl.ttftMs)
		}
	}
	pl.xt, pl.yt = niceTicks(xmax), niceTicks(ymax)
	return pl, nil
}

// The plotting area's size, inside the margins.
const innerW, innerH = float64(plotW - marginL - marginR), float64(plotH - marginT - marginB)

// sx and sy map data to SVG coordinates.
func (pl *plot) sx(v float64) float64 { return marginL + v/pl.xt[len(pl.xt)-1]*innerW }
func (pl *plot) sy(v float64) float64 { return marginT + innerH - v/pl.yt[len(pl.yt)-1]*innerH }

// writeAxes writes the grid, the ticks and their labels, and the axis titles.
func (pl *plot) writeAxes(b *strings.Builder) {
	b.WriteString(`<g id="axes" stroke="#000" stroke-width="1">` + "\n")
	for _, v := range pl.xt {
		x := pl.sx(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n",
			x, marginT, x, marginT+innerH, x, marginT+innerH, x, marginT+innerH+5)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" stroke="none">%s</text>`+"\n", x, marginT+innerH+20, fmtTick(v))
	}
	for _, v := range pl.yt {
		y := pl.sy(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n",
			marginL, y, marginL+innerW, y, marginL-5, y, marginL, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" stroke="none">%s</text>`+"\n", marginL-8, y, fmtTick(v))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%d" y1="%d" x2="%d" y2="%.1f"/>`+"\n",
		marginL, marginT+innerH, marginL+innerW, marginT+innerH, marginL, marginT, marginL, marginT+innerH)
	b.WriteString("</g>\n")
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s time to first token (ms)</text>`+"\n", marginL+innerW/2, plotH-15, pl.pName)
	fmt.Fprintf(b, `<text x="20" y="%.1f" text-anchor="middle" transform="rotate(-90 20 %.1f)">output tokens per second</text>`+"\n", marginT+innerH/2, marginT+innerH/2)
}

// writeObjective draws the TTFT objective as a dashed vertical line with its
// label at the top, on the side of the line that keeps it in the area.
func (pl *plot) writeObjective(b *strings.Builder) {
	x := pl.sx(pl.ttftMs)
	fmt.Fprintf(b, `<line id="ttft-objective" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="6 4"/>`+"\n", x, marginT, x, marginT+innerH)
	text := "TTFT objective " + fmtTick(pl.ttftMs) + " ms"
	lx, anchor := labelX(x, 4, text, 12)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="%s" fill="#555">%s</text>`+"\n", lx, marginT+12, anchor, text)
}

// writeCurve draws one curve through the points where y is a number, with a
// marker ("square" or a circle) on each.
func (pl *plot) writeCurve(b *strings.Builder, id, color string, y func(plotPoint) float64, marker string) {
	var coords [][2]float64
	for _, p := range pl.pts {
		if !math.IsNaN(y(p)) {
			coords = append(coords, [2]float64{pl.sx(p.x), pl.sy(y(p))})
		}
	}
	if len(coords) == 0 {
		return
	}
	points := make([]string, len(coords))
	for i, c := range coords {
		points[i] = fmt.Sprintf("%.1f,%.1f", c[0], c[1])
	}
	fmt.Fprintf(b, `<g id="%s-curve"><polyline id="%s" points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", id, id, strings.Join(points, " "), color)
	for _, c := range coords {
		if marker == "square" {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="8" height="8" transform="translate(-4 -4)" fill="%s"/>`+"\n", c[0], c[1], color)
		} else {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", c[0], c[1], color)
		}
	}
	b.WriteString("</g>\n")
}

// pointLabelSize is the font size of the offered-load labels.
const pointLabelSize = 11

// writePointLabels labels each throughput marker with its offered load:
// above and to the right of the marker, or to its left and below it where
// that would leave the plotting area (the legend is beside it).
func (pl *plot) writePointLabels(b *strings.Builder) {
	b.WriteString(`<g id="point-labels">` + "\n")
	for _, p := range pl.pts {
		x, y := pl.sx(p.x), pl.sy(p.thr)
		lx, anchor := labelX(x, 6, p.label, pointLabelSize)
		ly := y - 6
		if ly-pointLabelSize < marginT {
			ly = y + 6 + pointLabelSize
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d" fill="#333">%s</text>`+"\n",
			lx, ly, anchor, pointLabelSize, html.EscapeString(p.label))
	}
	b.WriteString("</g>\n")
}

// writeKnee circles the knee's goodput marker and labels it.
func (pl *plot) writeKnee(b *strings.Builder, s Sweep) {
	if s.Knee < 0 {
		return
	}
	_, x, ok := tail(s.Points[s.Knee].TTFT)
	if !ok {
		return
	}
	cx, cy := pl.sx(x*1000), pl.sy(s.Points[s.Knee].Goodput.TokensPerSecond)
	fmt.Fprintf(b, `<circle id="knee" cx="%.1f" cy="%.1f" r="10" fill="none" stroke="#000" stroke-width="2"/>`+"\n", cx, cy)
	lx, anchor := labelX(cx, 12, "knee", 12)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-weight="bold">knee</text>`+"\n", lx, cy+16, anchor)
}

// writeLegend writes the legend in the right margin.
func writeLegend(b *strings.Builder) {
	lx := float64(legendX)
	fmt.Fprintf(b, `<g id="legend"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/><circle cx="%.1f" cy="%d" r="4" fill="%s"/><text x="%.1f" y="%d" dominant-baseline="middle">throughput</text>`+"\n",
		lx, marginT+10, lx+30, marginT+10, throughputColor, lx+15, marginT+10, throughputColor, lx+38, marginT+10)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/><rect x="%.1f" y="%d" width="8" height="8" fill="%s"/><text x="%.1f" y="%d" dominant-baseline="middle">goodput (within SLO)</text>`+"\n",
		lx, marginT+32, lx+30, marginT+32, goodputColor, lx+11, marginT+28, goodputColor, lx+38, marginT+32)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11" fill="#333">point labels: offered load</text></g>`+"\n", lx, marginT+56)
}

// legendX is where the legend starts, in the right margin.
const legendX = plotW - marginR + 15

// textWidth is a generous estimate of the width of text in sans-serif at
// size: 0.6 em per character, wider than the average glyph of the usual
// sans-serif fonts, so that a label estimated to fit does fit.
func textWidth(text string, size float64) float64 {
	return 0.6 * size * float64(utf8.RuneCountInString(text))
}

// labelX places a label gap units to the right of x (text-anchor start), or,
// when it would then pass the plotting area's right edge and run into the
// legend, gap units to the left of x, ending there (text-anchor end).
func labelX(x, gap float64, text string, size float64) (float64, string) {
	if x+gap+textWidth(text, size) <= marginL+innerW {
		return x + gap, "start"
	}
	return x - gap, "end"
}

// niceTicks returns ticks 0, step, …, >= top with a 1-2-5 step, about 5 of them.
func niceTicks(top float64) []float64 {
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		ticks = append(ticks, v)
		if v >= top*(1-1e-12) {
			return ticks
		}
	}
}

// fmtTick prints a tick value without float noise.
func fmtTick(v float64) string {
	return fmtG(math.Round(v*1e6) / 1e6)
}
