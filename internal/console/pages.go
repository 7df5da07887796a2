package console

import (
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// funcs format numbers for the pages; html/template escapes everything else.
var funcs = template.FuncMap{
	"num":    formatNumber,
	"window": formatWindow,
	"dur":    formatDuration,
	"pq":     func(q float64) string { return strconv.FormatFloat(100*q, 'f', -1, 64) },
	"labels": sortedLabels,
	"join":   strings.Join,
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
	"for": func(now, t time.Time) string {
		return formatDuration(now.Sub(t))
	},
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05 MST") },
}

// head is the part every page shares: offline styles, light and dark.
const head = `{{define "head"}}<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="stylesheet" href="/assets/console.css">{{end}}`

// numTemplate prints a Num, with the /metrics series it is as a tooltip.
const numTemplate = `{{define "num"}}{{if .Series}}<span class="num" title="{{.Series}}" data-series="{{.Series}}" data-format="{{.Format}}">{{.Text}}</span>{{else}}<span class="num">{{.Text}}</span>{{end}}{{end}}`

// sloTable is the overview's table of SLOs, shared with the static file
// (where the rows link nowhere).
const sloTable = `{{define "slos"}}<div class="scroll"><table id="slos" class="overview">
<thead><tr>
<th><a href="?sort=worst">state</a></th><th><a href="?sort=name">target</a></th><th>model</th><th>SLO</th>
{{range .Windows}}<th><a href="?sort=attainment">attainment {{window .}}</a></th>{{end}}
<th><a href="?sort=budget">error budget left</a></th>
<th><a href="?sort=burn">burn rate</a><br><small>estimate ≤ upper bound, long · short window</small></th>
{{if not .Static}}<th></th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr class="slo {{.Alert}}" data-model="{{.Model}}" data-slo="{{.SLO}}" data-state="{{if .Alert}}{{.Alert}}{{else}}ok{{end}}">
<td class="state {{.Alert}}">{{if .Alert}}{{.Alert}}<br><small>since {{clock .Since}}</small>{{else}}ok{{end}}</td>
<td>{{.Target}}</td><td class="model">{{.Model}}</td>
<td class="slo-name"><b>{{.SLO}}</b>{{if .Goal}}<br><small class="goal">goal {{.Goal}}{{if .Objectives}} · {{join .Objectives ", "}}{{end}}{{if .Status.SLO.Period}} · {{dur .Status.SLO.Period}}{{end}}</small>{{end}}</td>
{{range .Attainment}}<td class="attainment{{if .Filling}} filling{{end}}">{{if not .Present}}{{else if .Known}}<span class="att {{.Class}}{{if .Certain}} certain{{end}}">{{template "num" .Estimate}}</span>{{if .Bounded}}<br><small class="nw">[{{template "num" .Lower}}, {{template "num" .Upper}}]</small>{{end}}{{if .Source}}<br><small class="source">{{if eq .Source "traces"}}exact, from traces{{if .HasHistogram}}; histograms {{.Histogram}}{{end}}{{if not .BoundsHeld}}, <span class="over">a histogram bound failed</span>{{end}}{{else}}from histograms{{end}}</small>{{end}}{{else if .Unknown}}<span class="none">unknown: {{.Unknown}}</span>{{else}}<span class="none">no request</span>{{end}}{{if and .Present .Filling}}<br><small class="filling-mark">filling: {{if .Coverage.Text}}{{template "num" .Coverage}} of {{window .Window}}{{else}}no data yet{{end}}</small>{{end}}</td>
{{end}}<td class="budget{{if .Budget.Filling}} muted{{end}}">{{if .Budget.Known}}<meter min="-0.0001" max="1" low="0.25" high="0.5" optimum="1" value="{{.Budget.Bar}}"></meter> {{template "num" .Budget.Estimate}}<br><small class="nw">[{{template "num" .Budget.Lower}}, {{template "num" .Budget.Upper}}]</small><br><small class="covered">rests on {{dur .Budget.Covered}}{{if .Budget.Period}} of {{dur .Budget.Period}}{{end}}{{if .Budget.Filling}} (filling){{end}}</small>{{if .Budget.Exhausted}}<br><small class="over">exhausted</small>{{else if .Budget.Lasts}}<br><small title="{{.Budget.LastsAt}}">lasts {{.Budget.Lasts}} at this burn</small>{{end}}{{else}}<span class="none">unknown</span>{{end}}</td>
<td class="burns">{{range .Burns}}<div class="burn{{if .Active}} over{{end}}"><small>{{.Severity}} &gt; {{.Factor}}:</small> {{template "burn" .Long}} {{template "burn" .Short}}{{if .Paging}}<br><small>the alert reads the histograms' upper bounds {{.Paging}}</small>{{end}}</div>{{else}}<span class="none">no alert</span>{{end}}</td>
{{if not $.Static}}<td><a class="detail" href="{{.Link}}">charts</a></td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
{{define "burn"}}<span class="w"><small>{{.Window}}</small> {{if .Known}}{{template "num" .Estimate}} <small>≤ {{template "num" .Upper}}{{if .Source}} · {{.Source}}{{end}}</small>{{else}}<span class="none">no request</span>{{end}}</span>{{end}}`

// overviewPage is the data of the overview template.
type overviewPage struct {
	Refresh int
	Overview
}

var overviewTemplate = template.Must(template.New("overview").Funcs(funcs).Parse(head + numTemplate + sloTable + calibrationPanel + `<!DOCTYPE html>
<html lang="en">
<head>
{{template "head"}}
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>vllm-slo-exporter · SLO console</title>
</head>
<body>
<header><h1>vllm-slo-exporter</h1>
<nav><a href="/metrics">/metrics</a> · <a href="/capacity">capacity</a> · <a href="/config">configuration</a> (secrets redacted) · <a href="/-/ready">/-/ready</a> · <a href="/-/healthy">/-/healthy</a></nav></header>
{{if not .Report}}<p>No evaluation yet: waiting for the first scrapes.</p>{{else}}
<p class="note">Evaluated at {{.Report.Time.UTC.Format "2006-01-02 15:04:05 MST"}}. Each number is the estimate; the range beside it is an honest bound the true value cannot leave. Attainment is green where the estimate reaches the goal, red where it does not (bold when the whole bound is on that side). A window or budget resting on less than half its length is marked filling.{{if .Exact}} Exact mode is on: each number says whether it comes from vLLM's traces (exact) or the histograms.{{end}} Hover a number for its /metrics series.</p>
<h2>SLOs</h2>
{{if .Rows}}{{template "slos" .Overview}}
<p class="note">Sorted {{if eq .Sort "worst"}}worst first: firing, pending, then the least error budget left (pessimistic){{else}}by {{.Sort}}{{end}}. Attainment is of every objective together ("all"). An alert pages when the burn rate's upper bound and its evidence (the larger of its lower bound and the observed burn rate, abandoned and rejected requests counted as the SLO counts them) both exceed its threshold over both windows.</p>
{{else}}<p>No SLO has been evaluated yet.</p>{{end}}
{{template "calibration" .Overview}}
<h2>Alerts</h2>
{{if .Active}}<div class="scroll"><table id="alerts"><thead><tr><th>alert</th><th>severity</th><th>state</th><th>since</th><th>SLO</th><th>model</th><th>target</th><th>other labels</th><th>summary</th></tr></thead><tbody>
{{range .Active}}<tr class="alert {{.State}}"><td>{{.Name}}</td><td>{{index .Labels "severity"}}</td><td class="state {{.State}}">{{.State}}</td><td>{{if eq .State "firing"}}{{for $.Report.Time .FiredAt}} (fired {{clock .FiredAt}}){{else}}{{for $.Report.Time .ActiveAt}} (began {{clock .ActiveAt}}){{end}}</td><td>{{index .Labels "slo"}}</td><td class="model">{{index .Labels "model_name"}}</td><td>{{join .Targets ", "}}</td><td><small>{{join (labels .Labels) " "}}</small></td><td>{{index .Annotations "summary"}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p id="alerts">No alert is pending or firing.</p>{{end}}
{{if .Resolved}}<h3>Recently resolved</h3>
<div class="scroll"><table id="resolved"><thead><tr><th>alert</th><th>severity</th><th>resolved</th><th>was active</th><th>SLO</th><th>model</th><th>target</th><th>summary</th></tr></thead><tbody>
{{range .Resolved}}<tr class="alert resolved"><td>{{.Name}}</td><td>{{index .Labels "severity"}}</td><td>{{clock .ResolvedAt}} ({{ago $.Report.Time .ResolvedAt}})</td><td>{{clock .ActiveAt}} – {{clock .ResolvedAt}}</td><td>{{index .Labels "slo"}}</td><td class="model">{{index .Labels "model_name"}}</td><td>{{join .Targets ", "}}</td><td>{{index .Annotations "summary"}}</td></tr>
{{end}}</tbody></table></div>{{end}}
<h2>Targets</h2>
<div class="scroll"><table id="targets"><thead><tr><th>target</th><th>state</th><th>last scrape</th><th>duration</th><th>resets</th><th>models</th><th>missing families</th><th>error</th></tr></thead><tbody>
{{range .Report.Targets}}<tr class="target"><td>{{.Name}}</td>
<td>{{if not .Tried}}not scraped yet{{else if .Up}}<span class="up">up</span>{{else}}<span class="down">down</span>{{end}}</td>
<td>{{ago $.Report.Time .LastScrape}}</td><td>{{num .ScrapeDuration}} s</td><td>{{num .Resets}}</td><td>{{range .Models}}<span class="model">{{.Name}}</span> {{end}}</td>
<td>{{range .Missing}}{{.}} {{end}}</td><td>{{.LastError}}</td></tr>
{{end}}</tbody></table></div>
{{range $t := .Report.Targets}}{{range .Warnings}}<p class="warning"><b>{{$t.Name}}:</b> {{.}}</p>
{{end}}{{end}}
{{end}}
</body>
</html>
`))

// detailPage is the data of the detail template.
type detailPage struct {
	Query   query
	DataURL string
	Ranges  []choice
	Windows []choice
	// Refresh is how often the page redraws itself, in seconds.
	Refresh int
	// Tiles are the headline of the latest evaluation (nil: the model or
	// the SLO is not in it).
	Tiles *tiles
}

// tiles are the detail page's headline: the SLO's row of the overview at
// the latest evaluation, and the window its attainment "now" is read over.
type tiles struct {
	Row
	Now        time.Time
	Attainment AttainmentCell
	// Alerts are the alerts of this model and SLO, worst first.
	Alerts []AlertRow
}

// choice is one link of a selector.
type choice struct {
	Name, Link string
	Current    bool
}

var detailTemplate = template.Must(template.New("detail").Funcs(funcs).Parse(head + numTemplate + `<!DOCTYPE html>
<html lang="en">
<head>
{{template "head"}}
<link rel="stylesheet" href="/assets/uPlot.min.css">
<title>{{.Query.SLO}} · {{.Query.Model}} · {{.Query.Target}} · SLO console</title>
</head>
<body>
<header><h1><a href="/">SLO console</a> › {{.Query.SLO}} · {{.Query.Target}} · <span class="model">{{.Query.Model}}</span></h1>
<nav class="choices">range: {{range .Ranges}}<a href="{{.Link}}"{{if .Current}} class="current" aria-current="page"{{end}}>{{.Name}}</a> {{end}}
· window: {{range .Windows}}<a href="{{.Link}}"{{if .Current}} class="current" aria-current="page"{{end}}>{{.Name}}</a> {{end}}</nav></header>
{{with .Tiles}}<section class="tiles" data-evaluated="{{.Now.UTC.Format "2006-01-02T15:04:05Z07:00"}}">
<div class="tile"><h3>attainment now <small>{{window .Attainment.Window}}</small></h3>{{if .Attainment.Known}}<p class="big att {{.Attainment.Class}}{{if .Attainment.Certain}} certain{{end}}">{{template "num" .Attainment.Estimate}}</p><small>{{if .Attainment.Bounded}}bounds [{{template "num" .Attainment.Lower}}, {{template "num" .Attainment.Upper}}]{{else}}exact{{end}}{{if .Goal}} · goal {{.Goal}}{{end}}{{if .Attainment.Source}} · {{.Attainment.Source}}{{end}}{{if .Attainment.Filling}} · filling{{end}}</small>{{else}}<p class="big none">no request</p>{{end}}</div>
<div class="tile{{if .Budget.Filling}} muted{{end}}"><h3>error budget left</h3>{{if .Budget.Known}}<p class="big">{{template "num" .Budget.Estimate}}</p><meter min="-0.0001" max="1" low="0.25" high="0.5" optimum="1" value="{{.Budget.Bar}}"></meter><br><small>rests on {{dur .Budget.Covered}}{{if .Budget.Period}} of {{dur .Budget.Period}}{{end}}{{if .Budget.Filling}} (filling){{end}}</small>{{else}}<p class="big none">unknown</p>{{end}}</div>
<div class="tile"><h3>time to exhaustion</h3>{{if .Budget.Exhausted}}<p class="big over">exhausted</p>{{else if .Budget.Lasts}}<p class="big">{{.Budget.Lasts}}</p><small>{{.Budget.LastsAt}}</small>{{else}}<p class="big none">not burning</p><small>no budget spent at the current burn rate</small>{{end}}</div>
<div class="tile state {{.Alert}}"><h3>alert</h3><p class="big" data-state="{{if .Alert}}{{.Alert}}{{else}}ok{{end}}">{{if .Alert}}{{.Alert}}{{else}}ok{{end}}</p>{{if .Alert}}<small>since {{clock .Since}} ({{for .Now .Since}})</small>{{end}}{{range .Alerts}}<br><small>{{index .Labels "severity"}} {{index .Labels "long_window"}}/{{index .Labels "short_window"}}: {{.State}}</small>{{end}}</div>
</section>{{end}}
<section class="slo-detail" data-series-url="{{.DataURL}}" data-refresh="{{.Refresh}}"><p class="status">Loading the windows of the range…</p><div class="charts"></div></section>
<script src="/assets/uPlot.iife.min.js"></script>
<script src="/assets/console.js"></script>
</body>
</html>
`))

func (q query) values() url.Values {
	v := url.Values{"target": {q.Target}, "model": {q.Model}, "slo": {q.SLO}, "range": {q.Range}}
	if q.Window != "" {
		v.Set("window", q.Window)
	}
	if q.Points > 0 {
		v.Set("points", strconv.Itoa(q.Points))
	}
	return v
}

// rangeChoices are the ranges a detail view offers.
func rangeChoices(q query) []choice {
	var out []choice
	for _, name := range []string{"1h", "1d", "period", "all"} {
		alt := q
		alt.Range = name
		out = append(out, choice{Name: name, Link: "/slo?" + alt.values().Encode(), Current: q.Range == name})
	}
	return out
}

// windowChoices are the configured windows a detail view offers; "auto"
// picks one for the range.
func windowChoices(h History, q query) []choice {
	alt := q
	alt.Window = ""
	out := []choice{{Name: "auto", Link: "/slo?" + alt.values().Encode(), Current: q.Window == ""}}
	for _, w := range h.Spec().Windows {
		alt.Window = formatWindow(w)
		out = append(out, choice{Name: alt.Window, Link: "/slo?" + alt.values().Encode(), Current: q.Window == alt.Window})
	}
	return out
}

func formatNumber(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "n/a"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// formatPercent2 writes a ratio as a percentage with two decimals, the
// console's rounding of attainment and budget.
func formatPercent2(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatNumber(v)
	}
	return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
}

// formatPercent0 writes a ratio as a whole percentage (coverage).
func formatPercent0(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatNumber(v)
	}
	return strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
}

// formatSeconds writes an objective's threshold as the configuration does:
// milliseconds below a second ("500ms"), seconds from there ("20s").
func formatSeconds(s float64) string {
	if s < 1 {
		return strconv.FormatFloat(1000*s, 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(s, 'f', -1, 64) + "s"
}

// formatRough writes a long duration to its two largest units ("23d6h",
// "4h15m", "12m30s"): how long a budget lasts is an estimate, not a clock.
func formatRough(d time.Duration) string {
	units := []struct {
		name string
		unit time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var b strings.Builder
	n := 0
	for _, u := range units {
		if d >= u.unit && n < 2 {
			b.WriteString(strconv.FormatInt(int64(d/u.unit), 10) + u.name)
			d %= u.unit
			n++
		} else if n > 0 {
			n = 2 // the second unit must be the next one down
		}
	}
	if n == 0 {
		return "under 1s"
	}
	return b.String()
}

// formatDuration writes a duration the way the configuration does ("1h30m").
func formatDuration(d time.Duration) string {
	return model.Duration(d.Round(time.Second)).String()
}
