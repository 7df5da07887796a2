package console

import (
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// The capacity page: for every target, model and SLO the learned curve of
// attainment against load (each window's estimate with the ledger's band,
// the monotone fit with the fits of the bounds, the goal, the knee with its
// prediction interval and the current operating point) drawn as inline
// SVG, and the numbers /metrics exports beside it; above them, for every
// model and SLO, the replica signal (Report.Replicas). Every number comes
// from the report; the page only maps them to pixels.

// Chart geometry, in SVG user units.
const (
	chartW, chartH               = 640.0, 320.0
	padLeft, padRight            = 48.0, 12.0
	padTop, padBottom            = 12.0, 32.0
	plotW, plotH                 = chartW - padLeft - padRight, chartH - padTop - padBottom
	capacityTicks                = 5
	capacityPointRadius          = 2.5
	capacityOperatingPointRadius = 5.0
)

// capacityPage is the data of the capacity template.
type capacityPage struct {
	Refresh  int
	Replicas []replicaTable
	Charts   []capacityChart
}

// replicaTable is the replica signal of one model and SLO: its rows, as
// the capacity table's are.
type replicaTable struct {
	Model, SLO string
	Numbers    []capacityNumber
}

// capacityChart is one estimate, its numbers and its chart in pixels.
type capacityChart struct {
	capacity.Report
	Labels string // the target's extra labels, k=v
	// Numbers is the table beside the chart.
	Numbers []capacityNumber
	// The chart: W and H the view box, the rest in its coordinates.
	W, H             float64
	Plot             rect
	Windows          []chartPoint
	FitLine, FitBand string  // polyline and polygon points
	Goal             float64 // y of the goal
	Knee             *kneeMark
	Operating        *chartPoint
	XTicks, YTicks   []tick
}

type rect struct{ X, Y, W, H float64 }

// chartPoint is a point with its band (Y of the estimate, Lo and Hi the
// band's ends), and its values for the tooltip.
type chartPoint struct {
	X, Y, Lo, Hi, R float64
	Title           string
}

// kneeMark is the knee's line and the prediction interval's shading.
type kneeMark struct {
	X     float64
	Band  rect
	Title string
}

type tick struct {
	At    float64
	Label string
}

// capacityNumber is one row of the table: a /metrics series and its
// value, or (Info) a series whose label carries the value.
type capacityNumber struct {
	Name, Series, Value string
	Info                string
}

var capacityTemplate = template.Must(template.New("capacity").Funcs(funcs).Parse(head + `<!DOCTYPE html>
<html lang="en">
<head>
{{template "head"}}
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>vllm-slo-exporter · capacity</title>
<style>
svg.capacity { width: 100%; max-width: 640px; height: auto; border: 1px solid var(--grid); border-radius: 6px; }
svg.capacity text { fill: var(--muted); font-size: 11px; }
svg.capacity .axis { stroke: var(--grid); }
svg.capacity .band { stroke: #0072B2; stroke-opacity: 0.35; }
svg.capacity .window { fill: #0072B2; fill-opacity: 0.7; }
svg.capacity .fitband { fill: #E69F00; fill-opacity: 0.2; stroke: none; }
svg.capacity .fit { fill: none; stroke: #E69F00; stroke-width: 2; }
svg.capacity .goal { stroke: var(--muted); stroke-dasharray: 4 3; }
svg.capacity .knee { stroke: #D55E00; stroke-width: 2; }
svg.capacity .kneeband { fill: #D55E00; fill-opacity: 0.12; }
svg.capacity .operating { fill: #009E73; stroke: var(--bg); stroke-width: 1.5; }
svg.capacity .opband { stroke: #009E73; stroke-width: 3; }
.capacity-row { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }
</style>
</head>
<body>
<header><h1><a href="/">SLO console</a> › capacity</h1></header>
<p class="note">The replica signal is the replicas a model needs to keep the SLO: the model's load, projected ahead along a rising trend, over the load planned per replica, which is the capacity's lower end less the margin (docs/autoscaling.md). A prediction, not a bound: its interval is the replicas the capacity's prediction interval allows, without the margin.</p>
<p class="note">The capacity is a prediction, not a bound: the load at which the SLO's attainment falls below its goal, learned from this server's windows (docs/capacity.md). Blue: each two-minute window's attainment, between the ledger's bounds; orange: the monotone fit, shaded between the fits of the bounds; red: the knee and its 90% prediction interval; green: the load now and the attainment of the last ten minutes.</p>
{{range .Replicas}}<section class="replicas" id="replicas/{{.Model}}/{{.SLO}}">
<h2>replicas · <span class="model">{{.Model}}</span> · {{.SLO}}</h2>
<table class="replica-numbers"><tbody>
{{range .Numbers}}<tr><td>{{.Name}}</td><td>{{if .Series}}<span class="num" title="{{.Series}}" data-series="{{.Series}}">{{.Value}}</span>{{else}}{{.Value}}{{end}}</td></tr>
{{end}}</tbody></table>
</section>
{{end}}{{range $c := .Charts}}<section class="capacity" id="{{.Target}}/{{.Model}}/{{.SLO}}">
<h2>{{.SLO}} · {{.Target}} · <span class="model">{{.Model}}</span> · {{.Estimate.Kind}}{{if .Labels}} <small>{{.Labels}}</small>{{end}}</h2>
{{if .Estimate.Reason}}<p class="note">{{.Estimate.Reason}}</p>{{end}}
<div class="capacity-row">
{{if .Windows}}<svg class="capacity" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="attainment against load">
<line class="axis" x1="{{.Plot.X}}" y1="{{.Plot.Y}}" x2="{{.Plot.X}}" y2="{{.Goal}}"/>
{{range .XTicks}}<line class="axis" x1="{{.At}}" y1="{{$c.Plot.Y}}" x2="{{.At}}" y2="{{$c.H}}"/><text x="{{.At}}" y="{{$c.H}}" dy="-4" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .YTicks}}<line class="axis" x1="{{$c.Plot.X}}" y1="{{.At}}" x2="{{$c.W}}" y2="{{.At}}"/><text x="{{$c.Plot.X}}" y="{{.At}}" dx="-4" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}<text x="{{$c.W}}" y="{{$c.H}}" dy="-16" text-anchor="end">load (req/s)</text>
{{with .Knee}}<rect class="kneeband" x="{{.Band.X}}" y="{{.Band.Y}}" width="{{.Band.W}}" height="{{.Band.H}}"><title>{{.Title}}</title></rect>
<line class="knee" x1="{{.X}}" y1="{{.Band.Y}}" x2="{{.X}}" y2="{{$c.H}}"><title>{{.Title}}</title></line>
{{end}}<line class="goal" x1="{{.Plot.X}}" y1="{{.Goal}}" x2="{{.W}}" y2="{{.Goal}}"><title>goal {{.Estimate.Goal}}</title></line>
{{range .Windows}}<line class="band" x1="{{.X}}" y1="{{.Lo}}" x2="{{.X}}" y2="{{.Hi}}"/><circle class="window" cx="{{.X}}" cy="{{.Y}}" r="{{.R}}"><title>{{.Title}}</title></circle>
{{end}}{{if .FitBand}}<polygon class="fitband" points="{{.FitBand}}"/>{{end}}
{{if .FitLine}}<polyline class="fit" points="{{.FitLine}}"/>{{end}}
{{with .Operating}}<line class="opband" x1="{{.X}}" y1="{{.Lo}}" x2="{{.X}}" y2="{{.Hi}}"/><circle class="operating" cx="{{.X}}" cy="{{.Y}}" r="{{.R}}"><title>{{.Title}}</title></circle>{{end}}
</svg>{{else}}<p class="none">No window with judged requests yet.</p>{{end}}
<table class="capacity-numbers"><tbody>
{{range .Numbers}}<tr><td>{{.Name}}</td><td>{{if .Series}}<span class="num" title="{{.Series}}" data-series="{{.Series}}">{{.Value}}</span>{{else if .Info}}<span class="info" title="{{.Info}}" data-info="{{.Info}}">{{.Value}}</span>{{else}}{{.Value}}{{end}}</td></tr>
{{end}}</tbody></table>
</div>
</section>
{{else}}<p>No capacity estimate yet: the learners need windows of judged requests.</p>{{end}}
</body>
</html>
`))

// serveCapacity shows the replica signal (Report.Replicas) and draws every
// capacity estimate (Report.Capacity) of the latest report, what /metrics
// renders from the same report.
func (c *Console) serveCapacity(w http.ResponseWriter, _ *http.Request) {
	page := capacityPage{Refresh: c.opts.RefreshSeconds}
	if rep := c.report(); rep != nil {
		for _, n := range rep.Replicas {
			page.Replicas = append(page.Replicas, replicaTable{Model: n.Model, SLO: n.SLO, Numbers: replicaNumbers(n)})
		}
		for _, r := range rep.Capacity {
			page.Charts = append(page.Charts, buildCapacityChart(r))
		}
	}
	render(w, capacityTemplate, page)
}

// buildCapacityChart maps one estimate to the chart's pixels and the
// table's rows.
func buildCapacityChart(r capacity.Report) capacityChart {
	e := r.Estimate
	ch := capacityChart{Report: r, Labels: strings.Join(sortedLabels(r.Labels), " "), Numbers: capacityNumbers(e), W: chartW, H: chartH,
		Plot: rect{X: padLeft, Y: padTop, W: plotW, H: plotH}}
	cv := e.Curve
	if len(cv.Windows) == 0 {
		return ch
	}
	xmax, ymin := 0.0, 1.0
	for _, p := range cv.Windows {
		xmax, ymin = finiteMax(xmax, p.Load), finiteMin(ymin, p.Attainment.Lower)
	}
	xmax = finiteMax(xmax, e.Load)
	if e.Kind != capacity.Unknown {
		xmax = finiteMax(xmax, e.Requests.Upper)
		xmax = finiteMax(xmax, e.Requests.Estimate)
	}
	xmax = niceCeil(xmax * 1.05)
	ymin = math.Max(0, math.Min(ymin, e.Goal)-0.02)
	ymin = math.Floor(ymin*20) / 20
	x := func(v float64) float64 { return round1(padLeft + plotW*math.Min(math.Max(v, 0), xmax)/xmax) }
	y := func(v float64) float64 {
		return round1(padTop + plotH*(1-(math.Min(math.Max(v, ymin), 1)-ymin)/(1-ymin)))
	}
	for k := 0; k <= capacityTicks; k++ {
		v := xmax * float64(k) / capacityTicks
		ch.XTicks = append(ch.XTicks, tick{At: x(v), Label: formatNumber(v)})
		a := ymin + (1-ymin)*float64(k)/capacityTicks
		ch.YTicks = append(ch.YTicks, tick{At: y(a), Label: formatNumber(a)})
	}
	ch.Goal = y(e.Goal)
	for _, p := range cv.Windows {
		a := p.Attainment
		ch.Windows = append(ch.Windows, chartPoint{X: x(p.Load), Y: y(a.Estimate), Lo: y(a.Lower), Hi: y(a.Upper), R: capacityPointRadius,
			Title: "load " + formatNumber(p.Load) + " req/s, attainment " + formatNumber(a.Estimate) + " [" + formatNumber(a.Lower) + ", " + formatNumber(a.Upper) + "]"})
	}
	var line, upper, lower []string
	for _, p := range cv.Fit {
		px := strconv.FormatFloat(x(p.Load), 'f', -1, 64)
		line = append(line, px+","+strconv.FormatFloat(y(p.Attainment.Estimate), 'f', -1, 64))
		upper = append(upper, px+","+strconv.FormatFloat(y(p.Attainment.Upper), 'f', -1, 64))
		lower = append([]string{px + "," + strconv.FormatFloat(y(p.Attainment.Lower), 'f', -1, 64)}, lower...)
	}
	ch.FitLine, ch.FitBand = strings.Join(line, " "), strings.Join(append(upper, lower...), " ")
	if e.Kind != capacity.Unknown {
		req := e.Requests
		hi := padLeft + plotW
		if !math.IsInf(req.Upper, 1) {
			hi = x(req.Upper)
		}
		ch.Knee = &kneeMark{X: x(req.Estimate), Band: rect{X: x(req.Lower), Y: padTop, W: round1(hi - x(req.Lower)), H: plotH},
			Title: "capacity " + formatNumber(req.Estimate) + " req/s, 90% prediction interval [" + formatNumber(req.Lower) + ", " + formatNumber(req.Upper) + "]" + methodNote(e.Method)}
	}
	if cv.Known {
		a := cv.Operating.Attainment
		ch.Operating = &chartPoint{X: x(cv.Operating.Load), Y: y(a.Estimate), Lo: y(a.Lower), Hi: y(a.Upper), R: capacityOperatingPointRadius,
			Title: "now: load " + formatNumber(cv.Operating.Load) + " req/s, attainment of the last 10 minutes " + formatNumber(a.Estimate) + " [" + formatNumber(a.Lower) + ", " + formatNumber(a.Upper) + "]"}
	}
	return ch
}

// capacityNumbers is the table of an estimate: each row a /metrics series
// (absent ones are left out, as /metrics leaves them out).
func capacityNumbers(e capacity.Estimate) []capacityNumber {
	var out []capacityNumber
	add := func(name, series string, v float64, unit string) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		out = append(out, capacityNumber{Name: name, Series: series, Value: formatNumber(v) + unit})
	}
	add("load now", "vllm_slo_capacity_load_requests_per_second", e.Load, " req/s")
	if e.Kind != capacity.Unknown {
		for _, p := range []struct {
			name, prefix, suffix, unit string
			r                          capacity.Range
		}{
			{"capacity", "capacity", "requests_per_second", " req/s", e.Requests},
			{"capacity in tokens", "capacity", "tokens_per_second", " tokens/s", e.Tokens},
			{"concurrency at the knee", "capacity", "concurrency", "", e.Concurrency},
			{"headroom", "capacity_headroom", "ratio", "", e.Headroom},
		} {
			add(p.name, "vllm_slo_"+p.prefix+"_"+p.suffix, p.r.Estimate, p.unit)
			add(p.name+", lower end", "vllm_slo_"+p.prefix+"_lower_"+p.suffix, p.r.Lower, p.unit)
			if e.Kind == capacity.Bounded {
				add(p.name+", upper end", "vllm_slo_"+p.prefix+"_upper_"+p.suffix, p.r.Upper, p.unit)
			}
		}
		if e.Method != "" {
			// A label of its own series, as /metrics has it: which fit
			// placed the knee and its interval.
			out = append(out, capacityNumber{Name: "method", Info: "vllm_slo_capacity_method_info", Value: string(e.Method)})
		}
		if e.HasBreach && e.TimeToBreach > 0 {
			out = append(out, capacityNumber{Name: "time to breach", Series: "vllm_slo_capacity_time_to_breach_seconds", Value: formatDuration(e.TimeToBreach)})
		}
		if e.HasBreach && e.TimeToBreachLower > 0 {
			out = append(out, capacityNumber{Name: "time to breach, earliest", Series: "vllm_slo_capacity_time_to_breach_earliest_seconds", Value: formatDuration(e.TimeToBreachLower)})
		}
	}
	if !e.Since.IsZero() {
		out = append(out, capacityNumber{Name: "learning since", Series: "vllm_slo_capacity_learning_since_timestamp_seconds", Value: e.Since.UTC().Format(time.DateTime + " MST")})
	}
	out = append(out, capacityNumber{Name: "windows fitted", Value: strconv.Itoa(e.Windows)})
	return out
}

// replicaNumbers is the table of one model's replica signal: the replicas
// serving it now, the recommendation (the vllm_slo_capacity_replicas
// series) and the whole number an autoscaler rounds it up to, the
// interval, the margin and what the recommendation rests on.
func replicaNumbers(n capacity.ModelNeed) []capacityNumber {
	now := "unknown"
	if n.Serving > 0 {
		now = strconv.Itoa(n.Serving)
	}
	margin, counted := formatPercent0(n.Margin), string(n.Kind)
	switch {
	case n.Missed:
		margin += " (no capacity: the SLO was missed at every load served)"
		counted = "half the lowest load the SLO was missed at"
	case n.Kind != capacity.Bounded:
		margin += " (a " + string(n.Kind) + " capacity is planned at without it)"
	}
	serving := capacityNumber{Name: "replicas serving now", Value: now + " (" + strconv.Itoa(n.Answered) + " of " + strconv.Itoa(n.Of) + " estimates with a capacity)"}
	if math.IsNaN(n.Replicas) || math.IsInf(n.Replicas, 0) {
		// vllm_slo_capacity_replicas is absent, as on /metrics.
		return []capacityNumber{serving, {Name: "recommended replicas", Value: "none yet: no estimate has a capacity (each estimate below says why)"},
			{Name: "load now", Value: formatNumber(n.Load) + " req/s"}}
	}
	return []capacityNumber{
		serving,
		{Name: "recommended replicas", Series: "vllm_slo_capacity_replicas", Value: formatNumber(n.Replicas)},
		{Name: "recommended, rounded up", Value: formatNumber(math.Ceil(n.Replicas))},
		{Name: "interval (the capacity's 90% prediction interval, without the margin)", Value: "[" + formatNumber(n.Spread.Lower) + ", " + formatNumber(n.Spread.Upper) + "], at the estimate " + formatNumber(n.Spread.Estimate)},
		{Name: "margin", Value: margin},
		{Name: "capacity counted per replica", Value: formatNumber(n.PerReplica) + " req/s (" + counted + ")"},
		{Name: "load planned per replica", Value: formatNumber(n.Planned) + " req/s"},
		{Name: "load now", Value: formatNumber(n.Load) + " req/s"},
		{Name: "load projected " + formatDuration(n.Policy.Lead) + " ahead", Value: formatNumber(n.Projected) + " req/s"},
	}
}

// methodNote names the fit that placed a bounded knee, for its tooltip.
func methodNote(m capacity.Method) string {
	if m == "" {
		return ""
	}
	return ", placed by the " + string(m) + " fit"
}

func finiteMax(a, b float64) float64 {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return a
	}
	return math.Max(a, b)
}

func finiteMin(a, b float64) float64 {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return a
	}
	return math.Min(a, b)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0).
func niceCeil(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
