package exporter

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// simReport runs the demo simulator through the pipeline for ten minutes of
// virtual time, with the given model name, and returns the last report.
func simReport(t testing.TB, modelName string) *pipeline.Report {
	t.Helper()
	return simReportFor(t, modelName, 10*time.Minute)
}

// simReportFor is simReport over the given virtual time (scraped every 15 s
// from 15 s on) instead of ten minutes.
func simReportFor(t testing.TB, modelName string, length time.Duration) *pipeline.Report {
	t.Helper()
	cfg := sim.DemoConfig(5, start)
	cfg.Models[0].Name = modelName
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.New(pipeline.Spec{
		Targets: []pipeline.TargetSpec{{Name: "gpu0", URL: "http://x/metrics", Profile: scrape.VLLM,
			Labels: map[string]string{"gpu": "rtx4090"}, HourlyCost: 2, Interval: 15 * time.Second}},
		SLOs: []slo.SLO{{Name: "interactive", Goal: 0.99, Period: 24 * time.Hour,
			Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.9, 0.99},
		Currency:  "CNY",
		Retention: history.NewRetention(5*time.Minute, 24*time.Hour),
	})
	var rep *pipeline.Report
	for at := start.Add(15 * time.Second); !at.After(start.Add(length)); at = at.Add(15 * time.Second) {
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
	return rep
}

func gather(t *testing.T, rep *pipeline.Report) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(func() *pipeline.Report { return rep }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func key(m *dto.Metric, skip string) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		if l.GetName() != skip {
			b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
		}
	}
	return b.String()
}

func value(m *dto.Metric) float64 {
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestCollectorInvariants renders a real report and checks the invariants of
// docs/design.md on the exposed series: lower ≤ estimate ≤ upper, ratios in
// [0, 1], quantiles non-decreasing in q, no NaN, and the common labels.
func TestCollectorInvariants(t *testing.T) {
	mfs := gather(t, simReport(t, "Qwen/Qwen2.5-7B-Instruct"))
	for _, name := range []string{"vllm_slo_target_up", "vllm_slo_window_requests", "vllm_slo_latency_seconds",
		"vllm_slo_attainment_ratio", "vllm_slo_goodput_tokens_per_second", "vllm_slo_goodput_requests_per_second",
		"vllm_slo_throughput_tokens_per_second", "vllm_slo_requests_per_second", "vllm_slo_concurrency_predicted",
		"vllm_slo_concurrency_observed", "vllm_slo_burn_rate", "vllm_slo_error_budget_remaining_ratio",
		"vllm_slo_cost_per_million_tokens", "vllm_slo_good_requests_total", "vllm_slo_target_metric_missing",
		"vllm_slo_aborted_requests"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("series %s missing", name)
		}
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if math.IsNaN(value(m)) {
				t.Errorf("%s%v is NaN", name, m.GetLabel())
			}
			if label(m, "target") != "gpu0" || label(m, "gpu") != "rtx4090" {
				t.Errorf("%s lacks the target's labels: %v", name, m.GetLabel())
			}
		}
	}
	for _, base := range []struct{ est, lo, hi string }{
		{"vllm_slo_latency_seconds", "vllm_slo_latency_lower_seconds", "vllm_slo_latency_upper_seconds"},
		{"vllm_slo_attainment_ratio", "vllm_slo_attainment_lower_ratio", "vllm_slo_attainment_upper_ratio"},
		{"vllm_slo_goodput_tokens_per_second", "vllm_slo_goodput_lower_tokens_per_second", "vllm_slo_goodput_upper_tokens_per_second"},
		{"vllm_slo_burn_rate", "vllm_slo_burn_rate_lower", "vllm_slo_burn_rate_upper"},
	} {
		lo, hi := map[string]float64{}, map[string]float64{}
		for _, m := range mfs[base.lo].GetMetric() {
			lo[key(m, "")] = value(m)
		}
		for _, m := range mfs[base.hi].GetMetric() {
			hi[key(m, "")] = value(m)
		}
		for _, m := range mfs[base.est].GetMetric() {
			k, v := key(m, ""), value(m)
			if !(lo[k] <= v && v <= hi[k]) {
				t.Errorf("%s{%s}: %v not within [%v, %v]", base.est, k, v, lo[k], hi[k])
			}
			if strings.HasSuffix(base.est, "_ratio") && (v < 0 || v > 1) {
				t.Errorf("%s{%s} = %v outside [0, 1]", base.est, k, v)
			}
		}
	}
	byQ := map[string][]float64{}
	for _, m := range mfs["vllm_slo_latency_seconds"].GetMetric() {
		k := key(m, QuantileLabel)
		byQ[k] = append(byQ[k], value(m)) // q labels sort "0.5" < "0.9" < "0.99"
	}
	for k, vs := range byQ {
		for i := 1; i < len(vs); i++ {
			if vs[i] < vs[i-1] {
				t.Errorf("quantiles decrease in q for %s: %v", k, vs)
			}
		}
	}
}

// TestCollectorEmptyReport checks that nothing is exposed before the first
// evaluation and for a target not scraped yet.
func TestCollectorEmptyReport(t *testing.T) {
	if mfs := gather(t, nil); len(mfs) != 0 {
		t.Errorf("nil report exposed %d families", len(mfs))
	}
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a"}}}
	if mfs := gather(t, rep); len(mfs) != 0 {
		t.Errorf("untried target exposed %v", mfs)
	}
}

func TestLandingPageEscapesAndShowsState(t *testing.T) {
	hostile := `<script>alert("x")</script>`
	rep := simReport(t, hostile)
	h := NewHandler(Endpoints{Report: func() *pipeline.Report { return rep }, Ready: func() bool { return true }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := get(t, srv.URL+"/", http.StatusOK)
	if strings.Contains(body, "<script>") {
		t.Error("landing page contains a raw <script> from a model name")
	}
	for _, want := range []string{"&lt;script&gt;", "gpu0", "interactive", `http-equiv="refresh"`, "/metrics"} {
		if !strings.Contains(body, want) {
			t.Errorf("landing page lacks %q", want)
		}
	}
	metrics := get(t, srv.URL+"/metrics", http.StatusOK)
	if !strings.Contains(metrics, `model_name="<script>alert(\"x\")</script>"`) {
		t.Error("/metrics does not carry the model name as an escaped label value")
	}
	get(t, srv.URL+"/-/healthy", http.StatusOK)
	get(t, srv.URL+"/-/ready", http.StatusOK)
	get(t, srv.URL+"/-/reload", http.StatusMethodNotAllowed)
}

func TestReadyAndReload(t *testing.T) {
	ready := false
	reloads := 0
	h := NewHandler(Endpoints{
		Report: func() *pipeline.Report { return nil },
		Ready:  func() bool { return ready },
		Reload: func(context.Context) error {
			reloads++
			if reloads > 1 {
				return io.ErrUnexpectedEOF
			}
			return nil
		},
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	get(t, srv.URL+"/-/ready", http.StatusServiceUnavailable)
	ready = true
	get(t, srv.URL+"/-/ready", http.StatusOK)
	for _, want := range []int{http.StatusOK, http.StatusInternalServerError} {
		resp, err := http.Post(srv.URL+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("reload %d: status %d, want %d", reloads, resp.StatusCode, want)
		}
	}
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, want)
	}
	return string(b)
}

func TestTextOutputParses(t *testing.T) {
	rep := simReport(t, "m")
	srv := httptest.NewServer(NewHandler(Endpoints{Report: func() *pipeline.Report { return rep }, Self: NewSelfRegistry()}))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics", http.StatusOK)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mfs["vllm_slo_exporter_build_info"]; !ok {
		t.Error("build_info missing")
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("Go self-metrics missing")
	}
}

// TestLandingPageWithoutWindows renders a model that has no evaluated window
// yet (one scrape): the page must still render.
func TestLandingPageWithoutWindows(t *testing.T) {
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: true,
		Models: []pipeline.ModelReport{{Name: "m"}}}}}
	srv := httptest.NewServer(NewHandler(Endpoints{Report: func() *pipeline.Report { return rep }}))
	defer srv.Close()
	if body := get(t, srv.URL+"/", http.StatusOK); !strings.Contains(body, `<span class="model">m</span>`) {
		t.Errorf("landing page lacks the model:\n%s", body)
	}
}

// TestMetricsFollowNewReport checks that the rendered families are cached per
// report, never beyond it.
func TestMetricsFollowNewReport(t *testing.T) {
	up := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: true}}}
	down := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: false}}}
	var current atomic.Pointer[pipeline.Report]
	current.Store(up)
	srv := httptest.NewServer(NewHandler(Endpoints{Report: current.Load}))
	defer srv.Close()
	for i, want := range []string{`vllm_slo_target_up{target="a"} 1`, `vllm_slo_target_up{target="a"} 1`, `vllm_slo_target_up{target="a"} 0`} {
		if i == 2 {
			current.Store(down)
		}
		if body := get(t, srv.URL+"/metrics", http.StatusOK); !strings.Contains(body, want) {
			t.Errorf("scrape %d lacks %q", i, want)
		}
	}
}

// TestRejectionsExposed checks that rejected families are exposed as a
// counter per family and reason, and that a target without any exposes none.
func TestRejectionsExposed(t *testing.T) {
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: true,
		Rejections: map[pipeline.FamilyRejection]float64{{Family: "ttft", Reason: "invalid_histogram"}: 2, {Family: "running", Reason: "invalid_value"}: 1}}}}
	mf := gather(t, rep)["vllm_slo_target_family_rejections_total"]
	if mf == nil || len(mf.GetMetric()) != 2 {
		t.Fatalf("family %v, want two series", mf)
	}
	got := map[string]float64{}
	for _, m := range mf.GetMetric() {
		got[label(m, "metric")+"/"+label(m, "reason")] = m.GetCounter().GetValue()
	}
	if got["ttft/invalid_histogram"] != 2 || got["running/invalid_value"] != 1 {
		t.Errorf("series %v", got)
	}
	rep.Targets[0].Rejections = nil
	if mf := gather(t, rep)["vllm_slo_target_family_rejections_total"]; mf != nil {
		t.Errorf("a target without rejections exposes %v", mf)
	}
}

// TestCollectorLint runs the linter behind `promtool check metrics` over a
// real report's series: every series must pass it, so that scraping the
// exporter never trips a Prometheus user's metric checks.
func TestCollectorLint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	rep := simReport(t, "m")
	reg.MustRegister(NewCollector(func() *pipeline.Report { return rep }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestCollectorWindowCoverage checks that a window longer than the history
// says how much of it the data spans: two minutes of scrapes (the first at
// 15 s) fill the 1m window and 105 s of the 5m one.
func TestCollectorWindowCoverage(t *testing.T) {
	mfs := gather(t, simReportFor(t, "m", 2*time.Minute))
	got := map[string]float64{}
	for _, m := range mfs["vllm_slo_window_coverage_ratio"].GetMetric() {
		got[label(m, "window")] = value(m)
	}
	want := map[string]float64{"1m": 1, "5m": 105.0 / 300.0}
	if len(got) != len(want) {
		t.Fatalf("coverage series %v, want %v", got, want)
	}
	for w, v := range want {
		if got[w] != v {
			t.Errorf("window %s: coverage %v, want %v", w, got[w], v)
		}
	}
}

// TestUnknownObjectiveAndNewSeries renders a window whose SLO lacks an
// objective's histogram (the flag, no "all", a landing-page note) and a
// judged one (abandoned requests and the finished requests' tokens).
func TestUnknownObjectiveAndNewSeries(t *testing.T) {
	judged := slo.SLOResult{Name: "ok", Requests: 10,
		Objectives:   map[string]slo.Bounded{slo.AllKey: {Estimate: 0.9, Lower: 0.8, Upper: 1}},
		GoodRequests: map[string]slo.Bounded{slo.AllKey: {Estimate: 9, Lower: 8, Upper: 10}},
		Abandoned:    slo.Bounded{Estimate: 1, Lower: 0, Upper: 2}, HasAbandoned: true}
	unknown := slo.SLOResult{Name: "needs-tpot", Requests: 10, Objectives: map[string]slo.Bounded{"ttft": slo.Exact(1)},
		GoodRequests: map[string]slo.Bounded{}, Unknown: []slo.Metric{slo.TPOT}}
	w := slo.WindowReport{Window: slo.Window{Nominal: time.Minute}, FinishedTokensPerSecond: 12.5, HasFinishedTokens: true,
		SLOs: []slo.SLOResult{judged, unknown}}
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: true,
		Models: []pipeline.ModelReport{{Name: "m", Windows: []slo.WindowReport{w},
			Budgets: []pipeline.Budget{{SLO: "ok"}, {SLO: "needs-tpot"}}}}}}}
	srv := httptest.NewServer(NewHandler(Endpoints{Report: func() *pipeline.Report { return rep }}))
	defer srv.Close()
	metrics := get(t, srv.URL+"/metrics", http.StatusOK)
	for _, want := range []string{
		`vllm_slo_objective_unknown{model_name="m",objective="tpot",slo="needs-tpot",target="a",window="1m"} 1`,
		`vllm_slo_abandoned_upper_requests{model_name="m",target="a",window="1m"} 2`,
		`vllm_slo_throughput_tokens_per_second{kind="finished",model_name="m",target="a",window="1m"} 12.5`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `objective="all",slo="needs-tpot"`) {
		t.Error("an SLO with an unmeasured objective has an attainment of all")
	}
	if body := get(t, srv.URL+"/", http.StatusOK); !strings.Contains(body, "unknown: the target exposes no tpot histogram") {
		t.Error("the console does not say the SLO is unknown")
	}
}

// TestCollectorAborted checks vllm_slo_aborted_requests: one series per
// window whose report has the engine's aborted count, with that count, none
// for a window without it, and a HELP that says 0 does not mean none.
func TestCollectorAborted(t *testing.T) {
	window := func(nominal time.Duration) slo.Window {
		return slo.Window{Start: start, End: start.Add(nominal), Nominal: nominal}
	}
	withCount := slo.WindowReport{Window: window(time.Minute), Aborted: 7, HasAborted: true}
	without := slo.WindowReport{Window: window(5 * time.Minute)}
	rep := &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "a", Tried: true, Up: true,
		Models: []pipeline.ModelReport{{Name: "m", Windows: []slo.WindowReport{withCount, without}}}}}}
	mf, ok := gather(t, rep)["vllm_slo_aborted_requests"]
	if !ok {
		t.Fatal("vllm_slo_aborted_requests not exposed")
	}
	if len(mf.GetMetric()) != 1 {
		t.Fatalf("%d series, want one (the window with a count): %v", len(mf.GetMetric()), mf.GetMetric())
	}
	m := mf.GetMetric()[0]
	if label(m, "window") != "1m" || label(m, "model_name") != "m" || value(m) != 7 {
		t.Errorf("series %v = %v, want window 1m, model m, 7", m.GetLabel(), value(m))
	}
	for _, want := range []string{"not a bound", "does not count client cancellations", "0 does not mean none", "before their first token"} {
		if !strings.Contains(mf.GetHelp(), want) {
			t.Errorf("HELP lacks %q: %s", want, mf.GetHelp())
		}
	}
}
