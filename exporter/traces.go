package exporter

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// The values of the source label of window_source.
const (
	SourceTraces     = "traces"
	SourceHistograms = "histograms"
)

// traceDescs describes the series of exact mode.
type traceDescs struct {
	source, coverage, requests                         *prometheus.Desc
	boundsHeld, quantileError, attainmentError         *prometheus.Desc
	adapterRequests, adapterLatency, adapterAttainment *prometheus.Desc
	adapterGoodputRequests, adapterGoodputTokens       *prometheus.Desc
	// The calibration's running totals (counters).
	calWindows, calHeld, calAbsErrorSum, calErrors *prometheus.Desc
}

func newTraceDescs(model []string, desc func(name, help string, labels []string) *prometheus.Desc) traceDescs {
	with := func(more ...string) []string { return append(slices.Clone(model), more...) }
	return traceDescs{
		source:          desc("window_source", "1 for where the window's latency, attainment, goodput and burn-rate series come from: source=\"traces\" (every finished request's span arrived: exact, lower = estimate = upper) or source=\"histograms\" (bounds).", with("window", "source")),
		coverage:        desc("trace_coverage_ratio", "Spans received for the finished requests of the window ending the span delay ago, over vLLM's own count of them (request_success_total); exact numbers need 1.", with("window")),
		requests:        desc("trace_requests", "Requests whose span reports them finished in the window, by finish reason (empty when the span has none).", with("window", "finish_reason")),
		boundsHeld:      desc("calibration_bounds_held", "Where the spans number the window's finished requests: 1 if every histogram bound held the spans' exact value (the window is exact), 0 if the spans contradict a bound vLLM's histograms prove (the window stays on the histograms; the log names the bounds; check the span sender).", with("window")),
		quantileError:   desc("calibration_quantile_error_seconds", "In a window covered by traces: the histogram's quantile estimate minus the exact quantile, for metrics observed at finish.", with("metric", "window", QuantileLabel)),
		attainmentError: desc("calibration_attainment_error_ratio", "In a window covered by traces: the histogram's attainment estimate minus the exact attainment (TTFT, observed at the first token, is not comparable and left out).", with("slo", "objective", "window")),
		adapterRequests: desc("adapter_requests", "Requests of the LoRA adapter (adapter=\"\": the base model) that finished in a window covered by traces, exact.", with("window", "adapter")),
		adapterLatency:  desc("adapter_latency_seconds", "Exact latency quantile (nearest rank) of the adapter's requests in a window covered by traces.", with("metric", "window", QuantileLabel, "adapter")),
		adapterAttainment: desc("adapter_attainment_ratio", "Exact share of the adapter's requests meeting the objective (all: every per-request objective) in a window covered by traces.",
			with("slo", "objective", "window", "adapter")),
		adapterGoodputRequests: desc("adapter_goodput_requests_per_second", "Exact requests per second of the adapter meeting every objective in a window covered by traces.", with("slo", "window", "adapter")),
		calWindows:             desc("calibration_windows_total", "Windows evaluated since the exporter started whose spans numbered the finished requests, so that the histograms' bounds were compared with the exact values.", with("window")),
		calHeld:                desc("calibration_bounds_held_total", "Of calibration_windows_total, those in which every histogram bound held the exact value: rate(held) / rate(windows) is the share over any range (below 1 only where spans contradict the histograms).", with("window")),
		calAbsErrorSum:         desc("calibration_attainment_abs_error_sum", "Sum, over every attainment compared in a calibrated window since the exporter started, of |histogram estimate − exact attainment|: divided by calibration_attainment_errors_total (both as rates) it is the mean absolute error over any range.", with("window")),
		calErrors:              desc("calibration_attainment_errors_total", "Attainments compared with the exact value in calibrated windows since the exporter started.", with("window")),
		adapterGoodputTokens:   desc("adapter_goodput_tokens_per_second", "Exact generated tokens per second of the adapter's requests meeting every objective in a window covered by traces.", with("slo", "window", "adapter")),
	}
}

// traceWindows renders the trace side of each window of a model.
func (r *renderer) traceWindows(results []traces.Result) {
	d := r.d.traces
	for _, res := range results {
		win := FormatWindow(res.Nominal)
		source := SourceHistograms
		if res.Covered {
			source = SourceTraces
		}
		r.gauge(d.source, 1, r.models, win, source)
		if ratio, ok := res.Coverage(); ok {
			r.gauge(d.coverage, ratio, r.models, win)
		}
		for _, reason := range slices.Sorted(maps.Keys(res.FinishReasons)) {
			r.gauge(d.requests, float64(res.FinishReasons[reason]), r.models, win, reason)
		}
		if res.Inconsistent {
			r.gauge(d.boundsHeld, 0, r.models, win)
		}
		if !res.Covered {
			continue
		}
		r.calibration(res.Calibration, win)
		for _, a := range res.Adapters {
			r.adapter(a, win)
		}
	}
}

// calibrationTotals renders the calibration's running totals of a model.
func (r *renderer) calibrationTotals(totals []traces.CalibrationTotal) {
	d := r.d.traces
	for _, c := range totals {
		win := FormatWindow(c.Nominal)
		r.emit(d.calWindows, prometheus.CounterValue, c.Windows, r.models, win)
		r.emit(d.calHeld, prometheus.CounterValue, c.Held, r.models, win)
		r.emit(d.calAbsErrorSum, prometheus.CounterValue, c.AbsErrorSum, r.models, win)
		r.emit(d.calErrors, prometheus.CounterValue, c.Errors, r.models, win)
	}
}

func (r *renderer) calibration(c traces.Calibration, win string) {
	d := r.d.traces
	r.gauge(d.boundsHeld, boolFloat(c.Held()), r.models, win)
	for _, e := range c.QuantileErrors {
		r.gauge(d.quantileError, e.Error, r.models, string(e.Metric), win, FormatQuantile(e.Q))
	}
	for _, e := range c.AttainmentErrors {
		r.gauge(d.attainmentError, e.Error, r.models, e.SLO, e.Objective, win)
	}
}

// adapter renders one adapter's exact numbers; a number whose bounds differ
// (a span lacked a metric) is left out, since these series have no bounds.
func (r *renderer) adapter(a traces.AdapterResult, win string) {
	d := r.d.traces
	r.gauge(d.adapterRequests, float64(a.Report.Requests), r.models, win, a.Name)
	for _, m := range slo.Metrics {
		for _, q := range a.Report.Quantiles[m] {
			r.gauge(d.adapterLatency, q.Estimate, r.models, string(m), win, FormatQuantile(q.Q), a.Name)
		}
	}
	for _, s := range a.Report.SLOs {
		for _, obj := range slices.Sorted(maps.Keys(s.Objectives)) {
			if b := s.Objectives[obj]; b.IsExact() {
				r.gauge(d.adapterAttainment, b.Estimate, r.models, s.Name, obj, win, a.Name)
			}
		}
		if _, ok := s.Objectives[slo.AllKey]; !ok {
			continue
		}
		if b := s.GoodputRequestsPerSecond; b.IsExact() {
			r.gauge(d.adapterGoodputRequests, b.Estimate, r.models, s.Name, win, a.Name)
		}
		if b := s.GoodputTokensPerSecond; b.IsExact() {
			r.gauge(d.adapterGoodputTokens, b.Estimate, r.models, s.Name, win, a.Name)
		}
	}
}
