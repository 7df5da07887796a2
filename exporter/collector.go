// Package exporter is the output side: it renders the pipeline's latest
// Report as Prometheus series (the README lists them), serves them with the SLO console and
// the operational endpoints (package notify pushes the alerts to Alertmanager).
//
// It never scrapes and never computes SLO numbers (a test over its syntax
// tree holds it to that: it calls no function of package slo); it only
// shows what a Report holds, so that everything it prints is exactly what
// the pipeline computed.
package exporter

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Namespace prefixes every series this program exports.
const Namespace = "vllm_slo"

// QuantileLabel names the label that holds a latency series' quantile level
// ("0.99" for the 0.99-quantile). It is not "quantile": Prometheus reserves
// that label for summaries, and `promtool check metrics` rejects it on the
// gauges a bracketed estimate is exported as.
const QuantileLabel = "q"

// ReportSource returns the latest report, or nil before the first evaluation.
type ReportSource func() *pipeline.Report

// Collector renders the latest Report as const metrics on every scrape: a
// series that stops existing in the report disappears from /metrics. It is
// the exporter's one collector of SLO results: the targets' series, their
// alerts, the capacity estimates (Report.Capacity) and the replica signal
// (Report.Replicas) all come from the one report.
type Collector struct {
	source ReportSource

	mu       sync.Mutex
	descs    map[string]*descSet       // by the joined extra label names
	capDescs map[string]*capacityDescs // by the capacity estimates' joined extra label names
	replicas *prometheus.Desc          // the replica signal (replicasDesc)
}

// NewCollector returns a collector that renders the report source.
func NewCollector(source ReportSource) *Collector {
	return &Collector{source: source, descs: map[string]*descSet{}, capDescs: map[string]*capacityDescs{}, replicas: replicasDesc()}
}

// Describe sends nothing: the label names depend on the targets' extra labels,
// so the collector is unchecked, as node_exporter's textfile collector is.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect renders the latest report.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	rep := c.source()
	if rep == nil {
		return
	}
	extra := extraLabelNames(rep)
	d := c.descSet(extra)
	for _, t := range rep.Targets {
		base := append([]string{t.Name}, extraValues(extra, t.Labels)...)
		r := renderer{ch: ch, d: d, base: base, currency: rep.Currency}
		r.target(t)
		for _, m := range t.Models {
			r.model(m)
		}
		r.alerts(rep.Alerts, t.Name)
	}
	c.capacity(ch, rep.Capacity)
	renderReplicas(ch, c.replicas, rep.Replicas)
}

func (c *Collector) descSet(extra []string) *descSet {
	key := strings.Join(extra, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.descs[key]; ok {
		return d
	}
	d := newDescSet(extra)
	c.descs[key] = d
	return d
}

// extraLabelNames is the union of all targets' extra label names, sorted; a
// target without one of them gets an empty value (an absent label).
func extraLabelNames(rep *pipeline.Report) []string {
	set := map[string]bool{}
	for _, t := range rep.Targets {
		for k := range t.Labels {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func extraValues(names []string, labels map[string]string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = labels[n]
	}
	return out
}

// renderer emits the series of one target.
type renderer struct {
	ch       chan<- prometheus.Metric
	d        *descSet
	base     []string // target, extra labels
	models   []string // target, extra labels, model_name
	currency string
}

func (r *renderer) emit(desc *prometheus.Desc, vt prometheus.ValueType, v float64, labels []string, more ...string) {
	values := make([]string, 0, len(labels)+len(more))
	values = append(values, labels...)
	values = append(values, more...)
	m, err := prometheus.NewConstMetric(desc, vt, v, values...)
	if err != nil {
		// Only a label value that is not valid UTF-8 gets here; such a series
		// cannot be exposed, and one bad model name must not hide the rest.
		return
	}
	r.ch <- m
}

func (r *renderer) gauge(desc *prometheus.Desc, v float64, labels []string, more ...string) {
	r.emit(desc, prometheus.GaugeValue, v, labels, more...)
}

func (r *renderer) bounded(ds boundedDescs, b slo.Bounded, labels []string, more ...string) {
	r.gauge(ds.estimate, b.Estimate, labels, more...)
	r.gauge(ds.lower, b.Lower, labels, more...)
	r.gauge(ds.upper, b.Upper, labels, more...)
}

func (r *renderer) target(t pipeline.TargetReport) {
	d := r.d
	if !t.Tried {
		return
	}
	r.gauge(d.up, boolFloat(t.Up), r.base)
	r.gauge(d.scrapeDuration, t.ScrapeDuration, r.base)
	for _, reason := range slices.Sorted(maps.Keys(t.Failures)) {
		r.emit(d.failures, prometheus.CounterValue, t.Failures[reason], r.base, reason)
	}
	rejections := slices.SortedFunc(maps.Keys(t.Rejections), func(a, b pipeline.FamilyRejection) int {
		return cmp.Or(strings.Compare(a.Family, b.Family), strings.Compare(a.Reason, b.Reason))
	})
	for _, fr := range rejections {
		r.emit(d.rejections, prometheus.CounterValue, t.Rejections[fr], r.base, fr.Family, fr.Reason)
	}
	r.emit(d.resets, prometheus.CounterValue, t.Resets, r.base)
	r.emit(d.modelsDropped, prometheus.CounterValue, t.ModelsDropped, r.base)
	r.gauge(d.historyBytes, float64(t.History.Bytes), r.base)
	r.emit(d.historyDropped, prometheus.CounterValue, float64(t.History.DroppedPoints), r.base)
	for _, f := range t.Missing {
		r.gauge(d.missing, 1, r.base, f)
	}
	for _, f := range slices.Sorted(maps.Keys(t.Found)) {
		r.gauge(d.missing, 0, r.base, f)
	}
}

func (r *renderer) model(m pipeline.ModelReport) {
	r.models = append(slices.Clone(r.base), m.Name)
	for _, w := range m.Windows {
		r.window(w)
	}
	r.traceWindows(m.Traces)
	r.calibrationTotals(m.Calibration)
	for _, b := range m.Budgets {
		if b.Known {
			r.bounded(r.d.budget, b.Remaining, r.models, b.SLO)
			r.gauge(r.d.budgetCoverage, b.Coverage, r.models, b.SLO)
		}
		if b.Known && b.HasTracesCoverage {
			r.gauge(r.d.budgetTraces, b.TracesCoverage, r.models, b.SLO)
		}
	}
	for _, g := range m.GoodRequests {
		r.emit(r.d.goodTotal, prometheus.CounterValue, g.Value, r.models, g.SLO, g.Objective)
	}
}

// engineCounts renders the engine's own counts over the window, each where
// the server has it: aborted, rejected at admission, preemptions, prompt
// tokens by source, the preempted share and the waiting by reason.
func (r *renderer) engineCounts(w slo.WindowReport, win string) {
	d := r.d
	if w.HasAborted {
		r.gauge(d.aborted, w.Aborted, r.models, win)
	}
	if w.HasRejected {
		r.gauge(d.rejected, w.Rejected, r.models, win)
	}
	if w.HasPreemptions {
		r.gauge(d.preemptions, w.Preemptions, r.models, win)
	}
	if w.HasPromptSources {
		r.gauge(d.promptTokensBySource, w.PromptTokensComputed, r.models, win, "local_compute")
		r.gauge(d.promptTokensBySource, w.PromptTokensCached, r.models, win, "local_cache_hit")
		r.gauge(d.promptTokensBySource, w.PromptTokensExternal, r.models, win, "external_kv_transfer")
	}
	if w.HasPreempted {
		r.bounded(d.preempted, w.Preempted, r.models, win)
	}
	if w.HasWaitingByReason {
		r.gauge(d.waitingMean, w.WaitingCapacity.Mean, r.models, win, "capacity")
		r.gauge(d.waitingMean, w.WaitingDeferred.Mean, r.models, win, "deferred")
		r.gauge(d.waitingMax, w.WaitingCapacity.Max, r.models, win, "capacity")
		r.gauge(d.waitingMax, w.WaitingDeferred.Max, r.models, win, "deferred")
	}
}

func (r *renderer) window(w slo.WindowReport) {
	d := r.d
	win := FormatWindow(w.Window.Nominal)
	if w.HasCoverage {
		r.gauge(d.windowCoverage, w.Coverage, r.models, win)
	}
	for _, metric := range slo.Metrics {
		n, ok := w.Requests[metric]
		if !ok {
			continue
		}
		r.gauge(d.windowRequests, n, r.models, string(metric), win)
		for _, q := range w.Quantiles[metric] {
			r.bounded(d.latency, q.Bounded, r.models, string(metric), win, FormatQuantile(q.Q))
		}
	}
	if w.HasThroughput {
		r.gauge(d.throughput, w.GenerationTokensPerSecond, r.models, win, "generation")
		r.gauge(d.throughput, w.PromptTokensPerSecond, r.models, win, "prompt")
		r.cost(w.HasThroughputCost, w.ThroughputCost, win, "throughput", "")
	}
	if w.HasFinishedTokens {
		r.gauge(d.throughput, w.FinishedTokensPerSecond, r.models, win, "finished")
		r.cost(w.HasFinishedCost, w.FinishedCost, win, "finished", "")
	}
	if w.HasRequestRate {
		r.gauge(d.requestRate, w.RequestsPerSecond, r.models, win)
	}
	r.engineCounts(w, win)
	for _, stage := range slices.Sorted(maps.Keys(w.Concurrency)) {
		c := w.Concurrency[stage]
		r.gauge(d.predicted, c.Predicted, r.models, win, string(stage))
		if c.HasObserved {
			r.gauge(d.observed, c.Observed, r.models, win, string(stage))
		}
	}
	abandonedDone := false
	for _, s := range w.SLOs {
		for _, obj := range slices.Sorted(maps.Keys(s.Objectives)) {
			r.bounded(d.attainment, s.Objectives[obj], r.models, s.Name, obj, win)
		}
		for _, m := range s.Unknown {
			r.gauge(d.objectiveUnknown, 1, r.models, s.Name, string(m), win)
		}
		if s.HasAbandoned && !abandonedDone {
			r.bounded(d.abandoned, s.Abandoned, r.models, win)
			abandonedDone = true
		}
		if _, ok := s.Objectives[slo.AllKey]; !ok {
			continue
		}
		r.bounded(d.goodputRequests, s.GoodputRequestsPerSecond, r.models, s.Name, win)
		if s.HasGoodputTokens {
			r.bounded(d.goodputTokens, s.GoodputTokensPerSecond, r.models, s.Name, win)
			r.cost(s.HasGoodputCost, s.GoodputCost, win, "goodput", s.Name)
		}
		if s.HasBurnRate {
			r.bounded(d.burnRate, s.BurnRate, r.models, s.Name, win)
		}
	}
}

// alerts renders the target's pending and firing alerts. Target-level alerts
// have an empty model_name and slo. Several burn-rate windows of one severity
// share a series, which is 1 when any of them fires.
func (r *renderer) alerts(alerts []pipeline.Alert, target string) {
	type key struct{ model, slo, name, severity string }
	state := map[key]float64{}
	var order []key
	for _, a := range alerts {
		if a.Target != target || a.State == pipeline.StateResolved {
			continue
		}
		k := key{a.Labels["model_name"], a.Labels["slo"], a.Name(), a.Labels["severity"]}
		v, seen := state[k]
		if !seen {
			order = append(order, k)
		}
		if a.State == pipeline.StateFiring {
			v = 1
		}
		state[k] = v
	}
	for _, k := range order {
		labels := append(slices.Clone(r.base), k.model)
		r.gauge(r.d.alertFiring, state[k], labels, k.slo, k.name, k.severity)
	}
}

// cost renders a cost per million tokens the report holds.
func (r *renderer) cost(ok bool, c slo.Bounded, win, basis, sloName string) {
	if ok {
		r.bounded(r.d.cost, c, r.models, win, basis, sloName, r.currency)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// FormatWindow renders a window length as a Prometheus duration ("5m", "1h").
func FormatWindow(d time.Duration) string {
	return model.Duration(d).String()
}

// FormatQuantile renders a QuantileLabel value in Go's shortest float form ("0.99").
func FormatQuantile(q float64) string {
	return strconv.FormatFloat(q, 'f', -1, 64)
}
