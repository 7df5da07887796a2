package console

import (
	"html/template"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// funcs format numbers for the pages; html/template escapes everything else.
var funcs = template.FuncMap{
	"num":     formatNumber,
	"bounded": formatBounded,
	"pct":     formatPercent,
	"pctv":    func(v float64) string { return formatPercent(slo.Exact(v)) },
	"window":  formatWindow,
	"dur":     formatDuration,
	"pq":      func(q float64) string { return strconv.FormatFloat(100*q, 'f', -1, 64) },
	"metrics": func() []slo.Metric { return slo.Metrics },
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
}

// head is the part every page shares: offline styles, light and dark.
const head = `{{define "head"}}<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="stylesheet" href="/assets/console.css">{{end}}`

// overviewPage is the data of the overview template.
type overviewPage struct {
	Refresh int
	Overview
}

var overviewTemplate = template.Must(template.New("overview").Funcs(funcs).Parse(head + `<!DOCTYPE html>
<html lang="en">
<head>
{{template "head"}}
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>vllm-slo-exporter · SLO console</title>
</head>
<body>
<header><h1>vllm-slo-exporter</h1>
<nav><a href="/metrics">/metrics</a> · <a href="/config">configuration</a> (secrets redacted) · <a href="/-/ready">/-/ready</a> · <a href="/-/healthy">/-/healthy</a></nav></header>
{{if not .Report}}<p>No evaluation yet: waiting for the first scrapes.</p>{{else}}
<p class="note">Evaluated at {{.Report.Time.UTC.Format "2006-01-02 15:04:05 MST"}}. Every range is an honest bound: the true value cannot leave it. Burn rates page on the upper bound.</p>
<h2>SLOs</h2>
{{if .Rows}}<table id="slos" class="overview">
<thead><tr>
<th><a href="?sort=name">target</a></th><th>model</th><th>SLO</th>
{{range .Windows}}<th><a href="?sort=attainment">attainment {{window .}}</a></th>{{end}}
<th><a href="?sort=budget">error budget left</a></th>
{{range .Pairs}}<th><a href="?sort=burn">burn {{.}}</a></th>{{end}}
<th><a href="?sort=worst">alert</a></th><th></th></tr></thead>
<tbody>
{{range .Rows}}<tr class="slo {{.Alert}}"><td>{{.Target}}</td><td class="model">{{.Model}}</td><td>{{.SLO}}</td>
{{range .Attainment}}<td>{{if .Known}}{{pct .Bounded}}{{if .Exact}}<br><small>exact, from traces{{if .HasHistogram}}; histograms {{pctv .Histogram}}{{end}}{{if not .BoundsHeld}}, <span class="over">a histogram bound failed</span>{{end}}</small>{{end}}{{else if .Unknown}}<span class="none">unknown: {{.Unknown}}</span>{{else}}<span class="none">no request</span>{{end}}</td>{{end}}
<td>{{if .Budget.Known}}{{pct .Budget.Bounded}}<br><small>rests on {{dur .Covered}}{{if .Period}} of {{dur .Period}}{{end}}</small>{{else}}<span class="none">unknown</span>{{end}}</td>
{{range .Burns}}<td>{{if not .Present}}{{else if .Long.Known}}<span class="{{if .Active}}over{{end}}">{{num .Long.Upper}} / {{num .Short.Upper}}</span><br><small>over {{num .Factor}} pages</small>{{else}}<span class="none">no request</span>{{end}}</td>{{end}}
<td class="state {{.Alert}}">{{if .Alert}}{{.Alert}}{{else}}ok{{end}}</td>
<td><a class="detail" href="{{.Link}}">charts</a></td></tr>
{{end}}</tbody></table>
<p class="note">Sorted {{if eq .Sort "worst"}}worst first: firing, pending, then the least error budget left (pessimistic){{else}}by {{.Sort}}{{end}}. Attainment is of every objective together ("all"); burn rates are the upper bounds of the long and short windows.</p>
{{else}}<p>No SLO has been evaluated yet.</p>{{end}}
<h2>Alerts</h2>
{{if .Report.Alerts}}<table id="alerts"><thead><tr><th>alert</th><th>severity</th><th>state</th><th>SLO</th><th>target</th><th>model</th><th>active since</th><th>summary</th></tr></thead><tbody>
{{range .Report.Alerts}}<tr class="alert"><td>{{.Name}}</td><td>{{index .Labels "severity"}}</td><td class="state {{.State}}">{{.State}}</td><td>{{index .Labels "slo"}}</td><td>{{index .Labels "target"}}</td><td>{{index .Labels "model_name"}}</td><td>{{ago $.Report.Time .ActiveAt}}</td><td>{{index .Annotations "summary"}}</td></tr>
{{end}}</tbody></table>{{else}}<p id="alerts">No alert is pending, firing or recently resolved.</p>{{end}}
<h2>Targets</h2>
<table id="targets"><thead><tr><th>target</th><th>state</th><th>last scrape</th><th>duration</th><th>resets</th><th>models</th><th>missing families</th><th>error</th></tr></thead><tbody>
{{range .Report.Targets}}<tr class="target"><td>{{.Name}}</td>
<td>{{if not .Tried}}not scraped yet{{else if .Up}}<span class="up">up</span>{{else}}<span class="down">down</span>{{end}}</td>
<td>{{ago $.Report.Time .LastScrape}}</td><td>{{num .ScrapeDuration}} s</td><td>{{num .Resets}}</td><td>{{range .Models}}<span class="model">{{.Name}}</span> {{end}}</td>
<td>{{range .Missing}}{{.}} {{end}}</td><td>{{.LastError}}</td></tr>
{{end}}</tbody></table>
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
}

// choice is one link of a selector.
type choice struct {
	Name, Link string
	Current    bool
}

var detailTemplate = template.Must(template.New("detail").Funcs(funcs).Parse(head + `<!DOCTYPE html>
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
<section class="slo-detail" data-series-url="{{.DataURL}}"><p class="status">Loading the windows of the range…</p><div class="charts"></div></section>
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
	case math.IsNaN(v):
		return "n/a"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func formatBounded(b slo.Bounded) string {
	if b.IsExact() {
		return formatNumber(b.Estimate)
	}
	return formatNumber(b.Estimate) + " [" + formatNumber(b.Lower) + ", " + formatNumber(b.Upper) + "]"
}

func formatPercent(b slo.Bounded) string {
	p := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }
	if b.IsExact() {
		return p(b.Estimate)
	}
	return p(b.Estimate) + " [" + p(b.Lower) + ", " + p(b.Upper) + "]"
}

// formatDuration writes a duration the way the configuration does ("1h30m").
func formatDuration(d time.Duration) string {
	return model.Duration(d.Round(time.Second)).String()
}
