package report

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
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
// dashed line. It needs at least one point with a TTFT sample.
func WritePlot(w io.Writer, s Sweep) error {
	type pt struct{ x, thr, good float64 }
	var pts []pt
	var labels []string
	for i, p := range s.Points {
		_, x, ok := tail(p.TTFT)
		if !ok {
			continue
		}
		g := math.NaN()
		if p.Goodput != nil {
			g = p.Goodput.TokensPerSecond
		}
		pts = append(pts, pt{x * 1000, p.OutputThroughput, g})
		labels = append(labels, s.LoadLabel(i))
	}
	if len(pts) == 0 {
		return errors.New("plot: no point has a TTFT sample")
	}
	pName := "p99"
	if p, _, ok := tail(s.Points[0].TTFT); ok {
		pName = "p" + fmtG(p)
	}
	xmax, ymax := 0.0, 0.0
	for _, p := range pts {
		xmax, ymax = math.Max(xmax, p.x), math.Max(ymax, p.thr)
	}
	var ttftLimit float64
	hasLimit := false
	if s.Knee >= 0 {
		if l, ok := threshold(s.Points[s.Knee].Goodput.Objectives, "ttft"); ok {
			ttftLimit, hasLimit = l*1000, true
			xmax = math.Max(xmax, ttftLimit)
		}
	}
	xt, yt := niceTicks(xmax), niceTicks(ymax)
	xTop, yTop := xt[len(xt)-1], yt[len(yt)-1]
	iw, ih := float64(plotW-marginL-marginR), float64(plotH-marginT-marginB)
	sx := func(v float64) float64 { return marginL + v/xTop*iw }
	sy := func(v float64) float64 { return marginT + ih - v/yTop*ih }

	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<title>Throughput and goodput against %s TTFT</title>
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="24" font-size="16" font-weight="bold">Output tokens/s against %s TTFT, one point per benchmark run</text>
`, plotW, plotH, plotW, plotH, pName, marginL, pName)
	// Grid, ticks and tick labels.
	b.WriteString(`<g id="axes" stroke="#000" stroke-width="1">` + "\n")
	for _, v := range xt {
		x := sx(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n",
			x, marginT, x, marginT+ih, x, marginT+ih, x, marginT+ih+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" stroke="none">%s</text>`+"\n", x, marginT+ih+20, fmtTick(v))
	}
	for _, v := range yt {
		y := sy(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n",
			marginL, y, marginL+iw, y, marginL-5, y, marginL, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" stroke="none">%s</text>`+"\n", marginL-8, y, fmtTick(v))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%d" y1="%d" x2="%d" y2="%.1f"/>`+"\n",
		marginL, marginT+ih, marginL+iw, marginT+ih, marginL, marginT, marginL, marginT+ih)
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s time to first token (ms)</text>`+"\n", marginL+iw/2, plotH-15, pName)
	fmt.Fprintf(&b, `<text x="20" y="%.1f" text-anchor="middle" transform="rotate(-90 20 %.1f)">output tokens per second</text>`+"\n", marginT+ih/2, marginT+ih/2)
	if hasLimit {
		x := sx(ttftLimit)
		fmt.Fprintf(&b, `<line id="ttft-objective" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="6 4"/>`+"\n", x, marginT, x, marginT+ih)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#555">TTFT objective %s ms</text>`+"\n", x+4, marginT+12, fmtTick(ttftLimit))
	}
	curve := func(id, color string, y func(pt) float64, marker string) {
		var coords []string
		for _, p := range pts {
			if !math.IsNaN(y(p)) {
				coords = append(coords, fmt.Sprintf("%.1f,%.1f", sx(p.x), sy(y(p))))
			}
		}
		if len(coords) == 0 {
			return
		}
		fmt.Fprintf(&b, `<g id="%s-curve"><polyline id="%s" points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", id, id, strings.Join(coords, " "), color)
		for _, c := range coords {
			xy := strings.Split(c, ",")
			if marker == "square" {
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="8" height="8" transform="translate(-4 -4)" fill="%s"/>`+"\n", xy[0], xy[1], color)
			} else {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="4" fill="%s"/>`+"\n", xy[0], xy[1], color)
			}
		}
		b.WriteString("</g>\n")
	}
	curve("throughput", throughputColor, func(p pt) float64 { return p.thr }, "circle")
	curve("goodput", goodputColor, func(p pt) float64 { return p.good }, "square")
	for i, p := range pts {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#333">%s</text>`+"\n", sx(p.x)+6, sy(p.thr)-6, html.EscapeString(labels[i]))
	}
	if s.Knee >= 0 {
		if _, x, ok := tail(s.Points[s.Knee].TTFT); ok {
			k := s.Points[s.Knee]
			cx, cy := sx(x*1000), sy(k.Goodput.TokensPerSecond)
			fmt.Fprintf(&b, `<circle id="knee" cx="%.1f" cy="%.1f" r="10" fill="none" stroke="#000" stroke-width="2"/>`+"\n", cx, cy)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">knee</text>`+"\n", cx+12, cy+16)
		}
	}
	// Legend.
	lx := float64(plotW - marginR + 15)
	fmt.Fprintf(&b, `<g id="legend"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/><circle cx="%.1f" cy="%d" r="4" fill="%s"/><text x="%.1f" y="%d" dominant-baseline="middle">throughput</text>`+"\n",
		lx, marginT+10, lx+30, marginT+10, throughputColor, lx+15, marginT+10, throughputColor, lx+38, marginT+10)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/><rect x="%.1f" y="%d" width="8" height="8" fill="%s"/><text x="%.1f" y="%d" dominant-baseline="middle">goodput (within SLO)</text>`+"\n",
		lx, marginT+32, lx+30, marginT+32, goodputColor, lx+11, marginT+28, goodputColor, lx+38, marginT+32)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="#333">point labels: offered load</text></g>`+"\n", lx, marginT+56)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
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
