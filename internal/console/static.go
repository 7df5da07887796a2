package console

import (
	"bytes"
	"fmt"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"html/template"
	"io"
)

// staticPage is one self-contained file: the overview table and the detail
// charts of every SLO of every model over the whole history, with the
// stylesheets, the scripts and the data inlined.
type staticPage struct {
	Overview
	CSS      template.CSS
	Script   template.JS
	Sections []*Series
}

var staticTemplate = template.Must(template.New("static").Funcs(funcs).Parse(numTemplate + sloTable + `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>vllm-slo-exporter · recording report</title>
<style>{{.CSS}}</style>
</head>
<body>
<header><h1>vllm-slo-exporter · recording report</h1></header>
{{if .Report}}<p class="note">Windows ending at the recorded scrapes, up to {{.Report.Time.UTC.Format "2006-01-02 15:04:05 MST"}}. Every range is an honest bound: the true value cannot leave it.</p>
{{template "slos" .Overview}}{{end}}
{{range .Sections}}<section class="slo-detail">
<h2>{{.SLO.Name}} · {{.Target}} · <span class="model">{{.Model}}</span></h2>
<p class="status">Drawing…</p><div class="charts"></div>
<script type="application/json" class="series-data">{{.}}</script>
</section>
{{end}}
<script>{{.Script}}</script>
</body>
</html>
`))

// WriteStatic writes the console as one HTML file that needs no server: the
// overview of rep and, for every target, model and SLO, the detail charts
// over all of the history with points windows, everything inlined. The
// report command uses it for recordings.
func WriteStatic(w io.Writer, h History, rep *pipeline.Report, points int) error {
	page := staticPage{Overview: buildOverview(rep, slosOf(h), "name")}
	page.Static = true
	var css, js bytes.Buffer
	for _, name := range []string{"uPlot.min.css", "console.css"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return fmt.Errorf("console: read asset %s: %w", name, err)
		}
		css.Write(b)
	}
	for _, name := range []string{"uPlot.iife.min.js", "console.js"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return fmt.Errorf("console: read asset %s: %w", name, err)
		}
		js.Write(b)
		js.WriteString(";\n")
	}
	page.CSS, page.Script = template.CSS(css.String()), template.JS(js.String())
	if rep != nil {
		for _, r := range page.Rows {
			s, err := buildSeries(h, query{Target: r.Target, Model: r.Model, SLO: r.SLO, Range: "all", Points: points}, nil)
			if err != nil {
				return fmt.Errorf("console: %s %s %s: %w", r.Target, r.Model, r.SLO, err)
			}
			page.Sections = append(page.Sections, s)
		}
	}
	var buf bytes.Buffer
	if err := staticTemplate.Execute(&buf, page); err != nil {
		return fmt.Errorf("console: render: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("console: write: %w", err)
	}
	return nil
}

// slosOf returns the configured SLOs, nil without a history.
func slosOf(h History) []slo.SLO {
	if h == nil {
		return nil
	}
	return h.Spec().SLOs
}
