package exporter

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// traceReport is a report of one model with a covered 1m window (one adapter
// besides the base model) and an uncovered 5m one.
func traceReport() *pipeline.Report {
	exact := slo.MeasuredReport{Requests: 3, Quantiles: map[slo.Metric][]slo.Quantile{slo.E2E: {{Q: 0.5, Bounded: slo.Exact(1.5)}}},
		SLOs: []slo.SLOResult{{Name: "s", Objectives: map[string]slo.Bounded{"all": slo.Exact(2.0 / 3), "e2e": slo.Exact(2.0 / 3)},
			GoodputRequestsPerSecond: slo.Exact(2.0 / 60), GoodputTokensPerSecond: slo.Exact(30.0 / 60), HasGoodputTokens: true}}}
	covered := traces.Result{Nominal: time.Minute, Spans: 3, Finished: 3, HasFinished: true, Covered: true, Exact: exact,
		Adapters:      []traces.AdapterResult{{Name: "", Report: exact}, {Name: "sql-lora", Report: exact}},
		FinishReasons: map[string]int{"stop": 2, "length": 1},
		Calibration: traces.Calibration{Checked: 4, QuantileErrors: []traces.QuantileError{{Metric: slo.E2E, Q: 0.5, Error: 0.1}},
			AttainmentErrors: []traces.AttainmentError{{SLO: "s", Objective: "all", Error: -0.05}}}}
	partial := traces.Result{Nominal: 5 * time.Minute, Spans: 5, Finished: 10, HasFinished: true, FinishReasons: map[string]int{"stop": 5}}
	return &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "gpu0", Tried: true, Up: true,
		Models: []pipeline.ModelReport{{Name: "m", Traces: []traces.Result{covered, partial}}}}}}
}

func TestTraceSeries(t *testing.T) {
	mfs := gather(t, traceReport())
	want := map[string]int{
		"vllm_slo_window_source":                       2,
		"vllm_slo_trace_coverage_ratio":                2,
		"vllm_slo_trace_requests":                      3,
		"vllm_slo_calibration_bounds_held":             1,
		"vllm_slo_calibration_quantile_error_seconds":  1,
		"vllm_slo_calibration_attainment_error_ratio":  1,
		"vllm_slo_adapter_requests":                    2,
		"vllm_slo_adapter_latency_seconds":             2,
		"vllm_slo_adapter_attainment_ratio":            4,
		"vllm_slo_adapter_goodput_requests_per_second": 2,
		"vllm_slo_adapter_goodput_tokens_per_second":   2,
	}
	for name, n := range want {
		mf, ok := mfs[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if got := len(mf.GetMetric()); got != n {
			t.Errorf("%s has %d series, want %d", name, got, n)
		}
	}
	for _, m := range mfs["vllm_slo_window_source"].GetMetric() {
		w, src := label(m, "window"), label(m, "source")
		if (w == "1m" && src != SourceTraces) || (w == "5m" && src != SourceHistograms) {
			t.Errorf("window %s has source %s", w, src)
		}
	}
	for _, m := range mfs["vllm_slo_trace_coverage_ratio"].GetMetric() {
		if w, v := label(m, "window"), value(m); (w == "1m" && v != 1) || (w == "5m" && v != 0.5) {
			t.Errorf("coverage of %s = %v", w, v)
		}
	}
	for _, m := range mfs["vllm_slo_adapter_requests"].GetMetric() {
		if label(m, "window") != "1m" || value(m) != 3 {
			t.Errorf("adapter %q: %v requests in %s, want only the covered 1m window", label(m, "adapter"), value(m), label(m, "window"))
		}
	}
}
