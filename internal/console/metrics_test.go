package console_test

import (
	"html"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestOverviewPrintsWhatMetricsExports serves one evaluation's console and
// /metrics from the same handler and checks that every number the overview
// ties to a series (each carries it in data-series) reads, at the console's
// rounding, as that series' value: attainment and its bounds per window,
// window coverage, the error budget and its bounds, the burn rates of the
// configured windows. It does so for a pipeline that watched an overload
// and for a report in exact mode, where some windows come from the spans.
func TestOverviewPrintsWhatMetricsExports(t *testing.T) {
	t.Run("overload", func(t *testing.T) {
		rep, p := overload(t)
		names := compareOverview(t, exporter.NewHandler(exporter.Endpoints{Report: func() *pipeline.Report { return rep }, History: p}))
		wantNames(t, names, "vllm_slo_attainment_ratio", "vllm_slo_attainment_lower_ratio", "vllm_slo_attainment_upper_ratio",
			"vllm_slo_window_coverage_ratio", "vllm_slo_error_budget_remaining_ratio", "vllm_slo_error_budget_remaining_lower_ratio",
			"vllm_slo_error_budget_remaining_upper_ratio", "vllm_slo_burn_rate", "vllm_slo_burn_rate_upper")
	})
	t.Run("exact", func(t *testing.T) {
		rep := exactReport()
		names := compareOverview(t, exporter.NewHandler(exporter.Endpoints{Report: func() *pipeline.Report { return rep }}))
		wantNames(t, names, "vllm_slo_attainment_ratio", "vllm_slo_attainment_lower_ratio", "vllm_slo_error_budget_remaining_ratio",
			"vllm_slo_burn_rate", "vllm_slo_burn_rate_upper")
		if names["vllm_slo_burn_rate"] != 2 {
			t.Errorf("%d burn rates compared, want the 1m (exact) and the 5m window's", names["vllm_slo_burn_rate"])
		}
	})
}

// overload feeds a pipeline 25 minutes of a simulator, 15 healthy and 10 at
// four times the rate, and returns the last evaluation.
func overload(t *testing.T) (*pipeline.Report, *pipeline.Pipeline) {
	t.Helper()
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	cfg := sim.DemoConfig(5, start)
	cfg.Models[0].Workload.Phases = []sim.Phase{
		{Duration: 15 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate},
		{Kind: sim.Poisson, Rate: 4 * sim.DemoRate},
	}
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	interactive := slo.SLO{Name: "interactive", Goal: 0.99, Period: 24 * time.Hour,
		Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
	batch := slo.SLO{Name: "batch", Goal: 0.95, Period: 7 * 24 * time.Hour, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 20}}}
	p := pipeline.New(pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:1/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second, Labels: map[string]string{"gpu": "a100"}}},
		SLOs:      []slo.SLO{interactive, batch},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute, time.Hour},
		Quantiles: []float64{0.5, 0.99},
		Retention: history.NewRetention(5*time.Minute, 24*time.Hour),
		Alerts: []pipeline.BurnAlert{
			{SLO: "interactive", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 14.4, For: time.Minute},
			{SLO: "interactive", Severity: "ticket", Long: 30 * time.Minute, Short: 5 * time.Minute, Factor: 2, For: time.Minute},
			{SLO: "batch", Severity: "page", Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4, For: time.Minute},
		},
	})
	var rep *pipeline.Report
	for at := start.Add(15 * time.Second); !at.After(start.Add(25 * time.Minute)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		rep = p.Evaluate(at)
	}
	return rep, p
}

// exactReport is one model whose 1m window the spans covered (exact
// numbers) beside a 5m window from the histograms.
func exactReport() *pipeline.Report {
	end := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	window := func(d time.Duration, all, burn slo.Bounded) slo.WindowReport {
		return slo.WindowReport{Window: slo.Window{Nominal: d, Start: end.Add(-d), End: end},
			SLOs: []slo.SLOResult{{Name: "s", Requests: 100, Objectives: map[string]slo.Bounded{slo.AllKey: all}, BurnRate: burn, HasBurnRate: true}}}
	}
	m := pipeline.ModelReport{Name: "m",
		Windows: []slo.WindowReport{
			window(time.Minute, slo.Exact(0.975), slo.Exact(2.5)),
			window(5*time.Minute, slo.Bounded{Estimate: 0.9612, Lower: 0.9, Upper: 0.99}, slo.Bounded{Estimate: 3.88, Lower: 1, Upper: 10}),
		},
		Budgets: []pipeline.Budget{{SLO: "s", Known: true, Remaining: slo.Bounded{Estimate: 0.4, Lower: -0.2, Upper: 0.7}, Covered: time.Hour, Coverage: 1.0 / 24}},
		Burns: []pipeline.BurnCheck{{Alert: pipeline.BurnAlert{SLO: "s", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 14.4},
			Known: true, Long: slo.Bounded{Estimate: 3.88, Lower: 1, Upper: 10}, Short: slo.Bounded{Estimate: 3, Lower: 1, Upper: 6}}},
		Traces: []traces.Result{{Nominal: time.Minute, Covered: true}, {Nominal: 5 * time.Minute}},
	}
	return &pipeline.Report{Time: end, Targets: []pipeline.TargetReport{{Name: "t", Tried: true, Up: true, Models: []pipeline.ModelReport{m}}}}
}

// printed finds the numbers the overview ties to a series.
var printed = regexp.MustCompile(`data-series="([^"]*)" data-format="(\w+)">([^<]*)<`)

// selector reads a series selector: name{label="value",...}.
var selector = regexp.MustCompile(`^(\w+)\{(.*)\}$`)

// wantNames fails unless numbers of every named series were compared.
func wantNames(t *testing.T, compared map[string]int, names ...string) {
	t.Helper()
	for _, n := range names {
		if compared[n] == 0 {
			t.Errorf("the overview prints no %s", n)
		}
	}
}

// compareOverview checks every number of the overview against /metrics and
// returns how many of each series it compared.
func compareOverview(t *testing.T, h http.Handler) map[string]int {
	t.Helper()
	page := serve(t, h, "/")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(serve(t, h, "/metrics")))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	n := map[string]int{}
	for _, m := range printed.FindAllStringSubmatch(page, -1) {
		sel, format, text := html.UnescapeString(m[1]), m[2], html.UnescapeString(m[3])
		parts := selector.FindStringSubmatch(sel)
		if parts == nil {
			t.Errorf("not a selector: %s", sel)
			continue
		}
		want := labelsOf(t, parts[2])
		fam, ok := families[parts[1]]
		if !ok {
			t.Errorf("%s: /metrics has no %s", sel, parts[1])
			continue
		}
		found := false
		for _, metric := range fam.GetMetric() {
			if !hasLabels(metric.GetLabel(), want) {
				continue
			}
			found = true
			if got := format1(format, metric.GetGauge().GetValue()); got != text {
				t.Errorf("%s: the overview prints %s, /metrics %s (%v)", sel, text, got, metric.GetGauge().GetValue())
			}
		}
		if !found {
			t.Errorf("%s: no such series on /metrics", sel)
		}
		n[parts[1]]++
	}
	return n
}

func serve(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, body)
	}
	return string(body)
}

// labelsOf reads the label pairs of a selector, whose values are Go-quoted.
func labelsOf(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for s != "" {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			t.Fatalf("selector labels %q", s)
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			t.Fatalf("selector value %q: %v", rest, err)
		}
		out[name], _ = strconv.Unquote(q)
		s = strings.TrimPrefix(rest[len(q):], ",")
	}
	return out
}

func hasLabels(pairs []*dto.LabelPair, want map[string]string) bool {
	have := map[string]string{}
	for _, p := range pairs {
		have[p.GetName()] = p.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// format1 formats a /metrics value as the console prints it.
func format1(format string, v float64) string {
	switch format {
	case "pct":
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	case "pct0":
		return strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
	}
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
