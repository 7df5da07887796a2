package exporter

import (
	"bytes"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// landingTemplate is plain server-rendered HTML: html/template escapes every
// value (a model name is untrusted input), and a meta refresh keeps it current
// without JavaScript.
var landingTemplate = template.Must(template.New("landing").Funcs(template.FuncMap{
	"num":     formatNumber,
	"pct":     formatPercent,
	"window":  FormatWindow,
	"bounded": formatBounded,
	"metrics": func() []slo.Metric { return slo.Metrics },
	"pq":      func(q float64) string { return strconv.FormatFloat(100*q, 'f', -1, 64) },
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>vllm-slo-exporter</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.up { color: #176117; } .down { color: #a31515; font-weight: bold; }
.firing { color: #a31515; font-weight: bold; } .pending { color: #9a6700; }
small { color: #666; }
.warning { color: #9a6700; }
</style>
</head>
<body>
<h1>vllm-slo-exporter</h1>
<p><a href="/metrics">/metrics</a> · <a href="/config">configuration</a> (secrets redacted) · <a href="/-/ready">/-/ready</a> · <a href="/-/healthy">/-/healthy</a></p>
{{if not .Report}}<p>No evaluation yet: waiting for the first scrapes.</p>{{else}}
<p><small>Evaluated at {{.Report.Time.UTC.Format "2006-01-02 15:04:05 MST"}}. Ranges are honest bounds: the true value cannot leave them.</small></p>
<h2>Alerts</h2>
{{if .Report.Alerts}}<table id="alerts"><tr><th>alert</th><th>severity</th><th>state</th><th>SLO</th><th>target</th><th>model</th><th>active since</th><th>summary</th></tr>
{{range .Report.Alerts}}<tr class="alert"><td>{{.Name}}</td><td>{{index .Labels "severity"}}</td><td class="{{.State}}">{{.State}}</td><td>{{index .Labels "slo"}}</td><td>{{index .Labels "target"}}</td><td>{{index .Labels "model_name"}}</td><td>{{ago $.Report.Time .ActiveAt}}</td><td>{{index .Annotations "summary"}}</td></tr>
{{end}}</table>{{else}}<p id="alerts">No alert is pending, firing or recently resolved.</p>{{end}}
<h2>Targets</h2>
<table id="targets"><tr><th>target</th><th>state</th><th>last scrape</th><th>duration</th><th>resets</th><th>missing families</th><th>error</th></tr>
{{range .Report.Targets}}<tr class="target"><td>{{.Name}}</td>
<td>{{if not .Tried}}not scraped yet{{else if .Up}}<span class="up">up</span>{{else}}<span class="down">down</span>{{end}}</td>
<td>{{ago $.Report.Time .LastScrape}}</td><td>{{num .ScrapeDuration}} s</td><td>{{num .Resets}}</td>
<td>{{range .Missing}}{{.}} {{end}}</td><td>{{.LastError}}</td></tr>
{{end}}</table>
{{range $t := .Report.Targets}}{{range .Warnings}}<p class="warning"><b>{{$t.Name}}:</b> {{.}}</p>
{{end}}{{end}}
{{range $t := .Report.Targets}}{{range $m := .Models}}
<h2 class="model">{{$t.Name}} · {{$m.Name}}</h2>
<table class="slos"><tr><th>window</th><th>SLO</th><th>objective</th><th>attainment</th><th>burn rate</th><th>goodput tokens/s</th><th>finished tokens/s</th><th>goodput req/s</th><th>req/s</th></tr>
{{range $w := $m.Windows}}{{range $s := $w.SLOs}}{{range $obj, $a := $s.Objectives}}<tr class="slo"><td>{{window $w.Window.Nominal}}</td><td>{{$s.Name}}</td><td>{{$obj}}</td><td>{{pct $a}}</td>
{{if eq $obj "all"}}<td>{{bounded $s.BurnRate}}</td><td>{{bounded $s.GoodputTokensPerSecond}}</td><td>{{num $s.FinishedTokensPerSecond}}</td><td>{{bounded $s.GoodputRequestsPerSecond}}</td><td>{{num $w.RequestsPerSecond}}</td>{{else}}<td></td><td></td><td></td><td></td><td></td>{{end}}</tr>
{{end}}{{if $s.Unknown}}<tr class="slo unknown"><td>{{window $w.Window.Nominal}}</td><td>{{$s.Name}}</td><td>all</td><td colspan="6">unknown: the target exposes no {{range $s.Unknown}}{{.}} {{end}}histogram, so nothing says its requests met it</td></tr>
{{end}}{{end}}{{end}}</table>
{{if $m.Windows}}<table class="latency"><tr><th>window</th><th>metric</th><th>observations</th>{{range $q := $.Quantiles}}<th>p{{pq $q}} (bracket)</th>{{end}}</tr>
{{range $w := $m.Windows}}{{range $metric := metrics}}{{with index $w.Quantiles $metric}}<tr><td>{{window $w.Window.Nominal}}</td><td>{{$metric}}</td><td>{{num (index $w.Requests $metric)}}</td>{{range .}}<td>{{bounded .Bounded}} s</td>{{end}}</tr>
{{end}}{{end}}{{end}}</table>{{end}}
{{if $m.Budgets}}<p>Error budget remaining: {{range $m.Budgets}}{{if .Known}}<b>{{.SLO}}</b> {{pct .Remaining}} {{end}}{{end}}</p>{{end}}
{{end}}{{end}}
{{end}}
</body>
</html>
`))

type landingData struct {
	Refresh int
	Report  *pipeline.Report
	// Quantiles head the latency table: those of the first window that has any.
	Quantiles []float64
}

func landingHandler(e Endpoints) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		data := landingData{Refresh: e.RefreshSeconds, Report: e.Report()}
		if data.Refresh <= 0 {
			data.Refresh = 15
		}
		data.Quantiles = reportQuantiles(data.Report)
		// Render fully before writing, so a template error is a clean 500.
		var buf bytes.Buffer
		if err := landingTemplate.Execute(&buf, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
	})
}

// reportQuantiles returns the quantiles the report's latency series use.
func reportQuantiles(rep *pipeline.Report) []float64 {
	if rep == nil {
		return nil
	}
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, w := range m.Windows {
				for _, qs := range w.Quantiles {
					out := make([]float64, len(qs))
					for i, q := range qs {
						out[i] = q.Q
					}
					return out
				}
			}
		}
	}
	return nil
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
