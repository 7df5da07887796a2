package console

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

const escapedHostile = `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`

// liveMarkup finds a <script> element that is not one of ours.
var liveMarkup = regexp.MustCompile(`<script>alert`)

// checkPagesEscapeModelNames: the overview and the detail view show a hostile
// model name as text, and the data endpoint as a JSON string with the markup
// characters escaped.
func checkPagesEscapeModelNames(t *testing.T, r *rig) {
	c := r.console()
	code, overview := get(t, c, "/")
	if code != http.StatusOK || !strings.HasSuffix(strings.TrimSpace(overview), "</html>") {
		t.Fatalf("overview: %d, cut short: %v", code, !strings.HasSuffix(strings.TrimSpace(overview), "</html>"))
	}
	code, detail := get(t, c, "/slo?target=gpu0&slo=interactive&model="+strings.ReplaceAll(hostile, " ", "+"))
	if code != http.StatusOK {
		t.Fatalf("detail: %d", code)
	}
	for name, page := range map[string]string{"overview": overview, "detail": detail} {
		if liveMarkup.MatchString(page) {
			t.Errorf("%s holds live markup from the model name", name)
		}
		if !strings.Contains(page, escapedHostile) {
			t.Errorf("%s does not show the escaped model name", name)
		}
	}
	_, data := get(t, c, seriesURL(hostile, "1h", ""))
	if strings.Contains(data, "<script") || !strings.Contains(data, `\u003cscript\u003e`) {
		t.Errorf("series JSON does not escape the model name: %.200s", data)
	}
	for _, want := range []string{`href="/slo?model=`, "interactive", `http-equiv="refresh"`, "/metrics", "rests on 29m45s of 1d"} {
		if !strings.Contains(overview, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	for _, want := range []string{`src="/assets/uPlot.iife.min.js"`, `data-series-url="/api/series?`, "range="} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
}

// TestOverviewWorstFirst: firing before pending before quiet, then the least
// budget left; each other order is available and ends by name.
func TestOverviewWorstFirst(t *testing.T) {
	alert := func(model string, st pipeline.AlertState) pipeline.Alert {
		return pipeline.Alert{State: st, Labels: map[string]string{"alertname": pipeline.AlertBurnRate, "target": "t", "model_name": model, "slo": "s"}}
	}
	page := pipeline.BurnAlert{SLO: "s", Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4}
	model := func(name string, lower float64, burn float64) pipeline.ModelReport {
		return pipeline.ModelReport{Name: name,
			Budgets: []pipeline.Budget{{SLO: "s", Known: true, Remaining: slo.Bounded{Estimate: lower + 0.1, Lower: lower, Upper: lower + 0.2}}},
			Burns:   []pipeline.BurnCheck{{Alert: page, Known: true, Long: slo.Exact(burn), Short: slo.Exact(burn)}}}
	}
	rep := &pipeline.Report{
		Targets: []pipeline.TargetReport{{Name: "t", Models: []pipeline.ModelReport{
			model("a-quiet-low", -0.5, 1), model("b-pending", 0.9, 20), model("c-firing", 0.8, 30), model("d-quiet-high", 0.7, 2),
		}}},
		Alerts: []pipeline.Alert{alert("b-pending", pipeline.StatePending), alert("c-firing", pipeline.StateFiring)},
	}
	order := func(by string) string {
		var names []string
		for _, r := range buildOverview(rep, nil, by).Rows {
			names = append(names, r.Model)
		}
		return strings.Join(names, " ")
	}
	for by, want := range map[string]string{
		"":       "c-firing b-pending a-quiet-low d-quiet-high",
		"name":   "a-quiet-low b-pending c-firing d-quiet-high",
		"budget": "a-quiet-low d-quiet-high c-firing b-pending",
		"burn":   "c-firing b-pending d-quiet-high a-quiet-low",
	} {
		if got := order(by); got != want {
			t.Errorf("sort %q: %s, want %s", by, got, want)
		}
	}
}

// checkWriteStatic: the static file needs no server (no link to /assets or
// /api), inlines the data, and escapes the model name.
func checkWriteStatic(t *testing.T, r *rig) {
	var buf bytes.Buffer
	if err := WriteStatic(&buf, r.pipe, r.rep, 60); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, banned := range []string{`src="/`, `href="/assets`, "data-series-url", "http://", "https://fonts"} {
		if strings.Contains(page, banned) {
			t.Errorf("static page refers to %q", banned)
		}
	}
	if liveMarkup.MatchString(page) || !strings.Contains(page, escapedHostile) {
		t.Error("static page does not escape the model name")
	}
	if n := strings.Count(page, `class="series-data"`); n != 1 {
		t.Errorf("%d inlined series, want 1", n)
	}
	if !strings.Contains(page, "uPlot") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Error("static page lacks uPlot or is cut short")
	}
}

// TestAssets serves the embedded files with their types, and nothing else.
func TestAssets(t *testing.T) {
	c := New(Options{})
	for path, want := range map[string]int{
		"/assets/uPlot.iife.min.js": http.StatusOK, "/assets/console.css": http.StatusOK,
		"/assets/LICENSE.uPlot": http.StatusNotFound, "/assets/..%2fconsole.go": http.StatusNotFound,
	} {
		if code, _ := get(t, c, path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	if code, _ := get(t, c, "/slo?target=a&model=b&slo=c"); code != http.StatusNotFound {
		t.Errorf("detail without history: %d", code)
	}
	if code, body := get(t, c, "/"); code != http.StatusOK || !strings.Contains(body, "No evaluation yet") {
		t.Errorf("overview before the first evaluation: %d", code)
	}
}

// TestOverviewShowsExactBesideHistograms: a window that vLLM's spans covered
// shows its exact attainment, the histograms' own estimate beside it, and
// says loudly when a histogram bound failed; a window without spans shows
// the bounded number alone.
func TestOverviewShowsExactBesideHistograms(t *testing.T) {
	window := func(d time.Duration, all slo.Bounded) slo.WindowReport {
		return slo.WindowReport{Window: slo.Window{Nominal: d}, SLOs: []slo.SLOResult{{Name: "s", Objectives: map[string]slo.Bounded{slo.AllKey: all}}}}
	}
	covered := traces.Result{Nominal: time.Minute, Covered: true, Calibration: traces.Calibration{Checked: 4,
		AttainmentErrors: []traces.AttainmentError{{SLO: "s", Objective: slo.AllKey, Error: -0.0125}}}}
	model := pipeline.ModelReport{Name: "m",
		Windows: []slo.WindowReport{window(time.Minute, slo.Exact(0.975)), window(5*time.Minute, slo.Bounded{Estimate: 0.9, Lower: 0.85, Upper: 0.95})},
		Budgets: []pipeline.Budget{{SLO: "s"}},
		Traces:  []traces.Result{covered, {Nominal: 5 * time.Minute}}}
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "t", Tried: true, Up: true, Models: []pipeline.ModelReport{model}}}}
	c := New(Options{Report: func() *pipeline.Report { return rep }})
	_, body := get(t, c, "/")
	if !regexp.MustCompile(`>97.50%</span></span><br><small class="source">exact, from traces; histograms 96.25%`).MatchString(body) {
		t.Errorf("the covered 1m window does not show the exact and the histogram numbers side by side")
	}
	if strings.Count(body, "exact, from traces") != 1 || !strings.Contains(body, "from histograms") {
		t.Errorf("a window without spans is marked exact, or not said to come from the histograms")
	}
	if strings.Contains(body, "a histogram bound failed") {
		t.Errorf("a held calibration is reported as failed")
	}
	rep.Targets[0].Models[0].Traces[0].Calibration.Failures = []string{"all: 0.9 outside [0.95, 0.96]"}
	if _, body := get(t, c, "/"); !strings.Contains(body, "a histogram bound failed") {
		t.Errorf("a failed histogram bound is not shown")
	}
}

// TestFormatRough: how long a budget lasts, to its two largest units.
func TestFormatRough(t *testing.T) {
	for d, want := range map[time.Duration]string{
		23*24*time.Hour + 5*time.Hour + 48*time.Minute + 10*time.Second: "23d5h",
		4*time.Hour + 14*time.Minute + 53*time.Second:                   "4h14m",
		2*24*time.Hour + 5*time.Minute:                                  "2d",
		90 * time.Second:                                                "1m30s",
		300 * time.Millisecond:                                          "under 1s",
	} {
		if got := formatRough(d); got != want {
			t.Errorf("formatRough(%v) = %q, want %q", d, got, want)
		}
	}
}
