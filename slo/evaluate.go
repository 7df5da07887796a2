package slo

import (
	"maps"
	"math"
	"slices"
	"time"
)

// Objective is one latency objective: the metric must be <= Threshold seconds
// (inclusive, up to a relative 1e-9).
type Objective struct {
	Metric    Metric
	Threshold float64 // seconds
}

// SLO is a named set of objectives that a share Goal of requests must all
// meet, with an error budget over Period.
type SLO struct {
	Name       string
	Objectives []Objective
	Goal       float64
	Period     time.Duration
	// Abandoned says whether requests abandoned after their first token
	// count as not meeting the SLO (the zero value, AbandonedBad) or are
	// left out of its population.
	Abandoned Population
	// Rejected says the same of the requests the server turned away at
	// admission (RejectedBad, the zero value, or RejectedExcluded).
	Rejected Population
}

// Options tunes Evaluate.
type Options struct {
	// Quantiles are the quantiles reported per latency metric, in [0, 1].
	Quantiles []float64
	// Estimator places estimates inside their bounds; the zero value is
	// DefaultEstimator (Density).
	Estimator Estimator
}

// Quantile is one quantile of one metric: our estimate with its bracket.
// What Prometheus's histogram_quantile would say of the same histogram is
// PrometheusQuantile's, computed by the reader who compares the two (the
// benchmark report) rather than at every evaluation, which never reads it.
type Quantile struct {
	Q float64
	Bounded
}

// Stage is a part of a request's life for Little's Law.
type Stage string

// The stages.
const (
	StageTotal   Stage = "total"   // arrival to finish: e2e
	StageQueue   Stage = "queue"   // waiting: queue time
	StageRunning Stage = "running" // scheduled: inference time
)

// Concurrency is Little's Law for one stage: the mean number of requests in
// the stage predicted from the finished requests (λ·W = Δsum/seconds, exact
// for the finished requests), and the mean observed by vLLM's gauges.
type Concurrency struct {
	Predicted   float64
	Observed    float64
	HasObserved bool
}

// SLOResult is one SLO evaluated over one window.
type SLOResult struct {
	Name string
	// Requests is n_B: the requests that finished in the window.
	Requests float64
	// Objectives is the attainment ratio per objective key ("ttft", "tpot",
	// ...) and "all". A per-request objective's ratio is over its own
	// histogram's population (TTFT: first token in the window), ITL's over
	// token gaps; "all" is over the finished requests.
	Objectives map[string]Bounded
	// GoodRequests is the good count per objective key and "all", over the
	// finished requests (ITL: over gaps).
	GoodRequests map[string]Bounded
	// GoodputTokensPerSecond and GoodputRequestsPerSecond are the generation
	// tokens and requests of the requests that met every objective.
	GoodputTokensPerSecond, GoodputRequestsPerSecond Bounded
	// HasGoodputTokens is false when the generation-tokens histogram is absent.
	HasGoodputTokens bool
	// FinishedTokensPerSecond is the rate of generation tokens of the
	// requests that finished in the window (the population goodput tokens
	// are a part of); HasFinishedTokens is false without the histogram.
	FinishedTokensPerSecond float64
	HasFinishedTokens       bool
	// Abandoned bounds the requests that got a first token and left in the
	// window without a finish observation (client cancellations, requests
	// lost in a restart); HasAbandoned is false when the window was not
	// judged interval by interval.
	Abandoned    Bounded
	HasAbandoned bool
	// Rejected is the requests the server turned away at admission over the
	// same scrapes (exact); HasRejected is false on a server without
	// admission control. They count in "all" under RejectedBad (Unserved).
	Rejected    float64
	HasRejected bool
	// Unknown lists the objectives whose histogram the target lacks in the
	// window: "all", goodput and the burn rate are then absent, not guessed.
	Unknown []Metric
	// BurnRate is (1 − attainment of "all")/(1 − Goal); HasBurnRate is false
	// when Goal is not in (0, 1).
	BurnRate    Bounded
	HasBurnRate bool
	// GoodputCost is the cost of a million generation tokens of the
	// requests that met every objective (WindowReport.Price); HasGoodputCost
	// is false without a cost, a goodput token rate or "all".
	GoodputCost    Bounded
	HasGoodputCost bool
}

// WindowReport is everything Evaluate derives from one window. No field
// is NaN: what cannot be known is absent (or its Has flag is false).
type WindowReport struct {
	Window Window
	// Coverage is the share of the window's nominal length that its scrapes
	// span (Window.Coverage); HasCoverage is false for a window without
	// length or data.
	Coverage    float64
	HasCoverage bool
	// ThroughputCost and FinishedCost are the cost of a million generation
	// tokens (Price) at the token counters' rate and at the finished
	// requests' rate; the Has flags are false without a cost or a rate.
	ThroughputCost, FinishedCost       Bounded
	HasThroughputCost, HasFinishedCost bool
	// Requests is the number of observations per latency metric exposed.
	Requests map[Metric]float64
	// Quantiles per metric; absent when the window holds no observation.
	Quantiles map[Metric][]Quantile
	// Token throughput from the token counters.
	GenerationTokensPerSecond, PromptTokensPerSecond float64
	HasThroughput                                    bool
	// FinishedTokensPerSecond is the rate of generation tokens of the
	// requests that finished in the window (from the per-request
	// generation-token histogram); HasFinishedTokens is false without it.
	FinishedTokensPerSecond float64
	HasFinishedTokens       bool
	// RequestsPerSecond is the rate of finished requests.
	RequestsPerSecond float64
	HasRequestRate    bool
	// Aborted is what the engine itself counted as aborted in the window
	// (Window.RequestAborted); HasAborted is false when the target lacks that
	// counter. It is an observed count, not a bound, and it never narrows the
	// abandoned requests (SLOResult.Abandoned), because it can miss some of
	// them and count others:
	//   - released vLLM counts no client cancellation there (a cancelled
	//     stream reaches no finish), so 0 does not mean that no client left,
	//     and the count is no lower bound of the abandoned requests;
	//   - it counts requests aborted before their first token, which the
	//     abandoned requests (those past their first token) leave out, and
	//     requests the engine finished as aborted, which went through its
	//     finish histograms and are finished requests; so it is no upper
	//     bound either.
	// A count above the abandoned upper bound therefore contradicts nothing:
	// the difference may be such requests, and nothing is concluded from it.
	Aborted    float64
	HasAborted bool
	// Rejected is the requests the server turned away at admission in the
	// window (Window.RequestRejected), exact; HasRejected is false on a
	// server without admission control. Preemptions and the prompt tokens by
	// source are the engine's own counts over the window, where it has them.
	Rejected                                                       float64
	HasRejected                                                    bool
	Preemptions                                                    float64
	HasPreemptions                                                 bool
	PromptTokensComputed, PromptTokensCached, PromptTokensExternal float64
	HasPromptSources                                               bool
	// Preempted is the share of the PreemptedOf requests that finished in
	// the window that were preempted at least once, bounded
	// (PreemptedShare); HasPreempted is false without vLLM's
	// request_num_preemptions or when it observed nothing.
	Preempted    Bounded
	PreemptedOf  float64
	HasPreempted bool
	// WaitingCapacity and WaitingDeferred are the window's waiting requests
	// by reason (Window.WaitingCapacity, WaitingDeferred), where the server
	// splits them (HasWaitingByReason).
	WaitingCapacity, WaitingDeferred Gauge
	HasWaitingByReason               bool
	// Concurrency per stage whose latency histogram is exposed.
	Concurrency map[Stage]Concurrency
	// SLOs holds one result per SLO, in order; an SLO is absent when the
	// window holds no finished request.
	SLOs []SLOResult
}

// Clone copies r deep enough that writing into the copy's maps and SLO
// results (their Objectives and GoodRequests) leaves r alone: a report a
// caller shares can be amended in a copy. Its quantile slices are r's:
// replace them, never write into them.
func (r WindowReport) Clone() WindowReport {
	r.Requests, r.Quantiles, r.Concurrency = maps.Clone(r.Requests), maps.Clone(r.Quantiles), maps.Clone(r.Concurrency)
	r.SLOs = slices.Clone(r.SLOs)
	for i := range r.SLOs {
		s := &r.SLOs[i]
		s.Objectives, s.GoodRequests = maps.Clone(s.Objectives), maps.Clone(s.GoodRequests)
	}
	return r
}

// AllKey is the objective key of "met every per-request objective".
const AllKey = "all"

// Evaluate evaluates one window: quantiles of every latency metric,
// throughput and request rate, Little's Law per stage, and each SLO. A window
// of non-positive or unknown length yields a report with only the Window.
//
// SLOs are evaluated over the requests that finished in the window (n_B, the
// e2e count); see evaluateSLO in slo.go for how TTFT, observed at the first
// token, is carried onto them.
//
// joints are a per-interval ledger's, one entry per SLO: the "all" of every
// SLO with a per-request objective (HasPerRequestObjective) is joints[i],
// the ledger's joint over the same scrapes, instead of the whole-window
// Fréchet bound, which is then never computed. A nil joints[i] leaves that
// SLO without "all", goodput, burn rate and abandoned requests; a joint
// carrying the ledger's per-objective sums (Joint.Objectives) narrows the
// SLO's per-objective results by them. SLOs of ITL objectives only are
// judged over token gaps, with joints or without.
//
// A nil joints (no ledger at all, not a slice of nils) asks for the
// whole-window evaluation, the fallback of a caller without a per-interval
// ledger: "all" is the Fréchet bound of the window's histograms, and a stream
// cancelled after its first token, in TTFT but in no finish histogram, is
// not accounted for (the ledger's EvaluateInterval and Abandoned do).
func Evaluate(w Window, slos []SLO, joints []*Joint, opts Options) WindowReport {
	rep := WindowReport{
		Window:      w,
		Requests:    map[Metric]float64{},
		Quantiles:   map[Metric][]Quantile{},
		Concurrency: map[Stage]Concurrency{},
	}
	rep.Coverage, rep.HasCoverage = w.Coverage()
	secs := w.Seconds()
	if !(secs > 0) {
		return rep
	}
	e := opts.Estimator
	for _, m := range Metrics {
		h, ok := w.Latency[m]
		n, valid := observations(h)
		if !ok || !valid {
			continue
		}
		rep.Requests[m] = n
		if n > 0 {
			rep.Quantiles[m] = quantiles(e, opts.Quantiles, h)
		}
	}
	rep.throughput(w, secs)
	rep.Rejected, rep.HasRejected = rejectedIn(w)
	if w.HasPreemptions && finite(w.Preemptions) {
		rep.Preemptions, rep.HasPreemptions = math.Max(0, w.Preemptions), true
	}
	if w.HasPromptSources {
		rep.PromptTokensComputed, rep.PromptTokensCached, rep.PromptTokensExternal, rep.HasPromptSources =
			math.Max(0, w.PromptTokensComputed), math.Max(0, w.PromptTokensCached), math.Max(0, w.PromptTokensExternal), true
	}
	if w.HasRequestAborted && finite(w.RequestAborted) {
		rep.Aborted, rep.HasAborted = math.Max(0, w.RequestAborted), true
	}
	rep.engineState(w)
	rep.concurrency(w, secs)
	nB, ok := finished(w)
	if !ok || nB <= 0 {
		return rep
	}
	for i, s := range slos {
		if joints != nil && HasPerRequestObjective(s) {
			rep.SLOs = append(rep.SLOs, evaluateJoint(w, s, nB, secs, e, joints[i]))
			continue
		}
		rep.SLOs = append(rep.SLOs, evaluateSLO(w, s, nB, secs, e))
	}
	return rep
}

// quantiles computes the requested quantiles of h, skipping q outside [0, 1]
// and keeping the estimates non-decreasing in q (the brackets already are).
// It is placeQuantile per q with the buckets prepared and fitted once,
// in memory on its stack for a histogram of up to scratchEdges edges: an
// evaluation fits every histogram of every window, and what it allocates
// sets how often the collector marks the whole heap of histories again.
func quantiles(e Estimator, qs []float64, h Histogram) []Quantile {
	out := make([]Quantile, 0, len(qs))
	var scratch [5 * scratchEdges]float64 // buckets, tilts
	b, ok := prepareIn(h, scratch[:4*scratchEdges:4*scratchEdges])
	var s shape
	fitted := false
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			continue
		}
		est, i, f := placeQuantile(b, ok, q)
		if i >= 0 {
			if !fitted {
				s, fitted = e.fitIn(b, scratch[4*scratchEdges:5*scratchEdges:5*scratchEdges]), true
			}
			est.Estimate = s.at(b, i, f)
		}
		out = append(out, Quantile{Q: q, Bounded: est})
	}
	return out
}

// throughput fills token and request rates. Token rates come from the token
// counters; without them, from the per-request token histograms' sums (tokens
// of finished requests, which lag the counters by the requests in flight).
// The request rate is the e2e count (requests that finished with a latency
// observation), else the finished-request counter.
func (rep *WindowReport) throughput(w Window, secs float64) {
	switch {
	case w.HasTokenCounters && finite(w.GenerationTokensTotal) && finite(w.PromptTokensTotal):
		rep.GenerationTokensPerSecond = math.Max(0, w.GenerationTokensTotal) / secs
		rep.PromptTokensPerSecond = math.Max(0, w.PromptTokensTotal) / secs
		rep.HasThroughput = true
	case w.GenerationTokens.Valid() && w.PromptTokens.Valid() && finite(w.GenerationTokens.Sum) && finite(w.PromptTokens.Sum):
		rep.GenerationTokensPerSecond = math.Max(0, w.GenerationTokens.Sum) / secs
		rep.PromptTokensPerSecond = math.Max(0, w.PromptTokens.Sum) / secs
		rep.HasThroughput = true
	}
	if w.GenerationTokens.Valid() && finite(w.GenerationTokens.Sum) {
		rep.FinishedTokensPerSecond = math.Max(0, w.GenerationTokens.Sum) / secs
		rep.HasFinishedTokens = true
	}
	if n, ok := finished(w); ok {
		rep.RequestsPerSecond = n / secs
		rep.HasRequestRate = true
	} else if w.HasRequestSuccess && finite(w.RequestSuccess) {
		rep.RequestsPerSecond = math.Max(0, w.RequestSuccess) / secs
		rep.HasRequestRate = true
	}
}

// concurrency fills Little's Law per stage: predicted L = Δsum/seconds of the
// stage's latency histogram (present only when the histogram is), observed
// the time-average of the gauges.
func (rep *WindowReport) concurrency(w Window, secs float64) {
	// The gauges of a stage are gauges[:n] (an array, not a slice per
	// stage: this runs for every window).
	stages := [...]struct {
		stage     Stage
		metric    Metric
		gauges    [2]Gauge
		n         int
		hasGauges bool
	}{
		{StageTotal, E2E, [2]Gauge{w.Running, w.Waiting}, 2, w.Running.Known && w.Waiting.Known},
		{StageQueue, Queue, [2]Gauge{w.Waiting}, 1, w.Waiting.Known},
		{StageRunning, Inference, [2]Gauge{w.Running}, 1, w.Running.Known},
	}
	for _, s := range stages {
		h, ok := w.Latency[s.metric]
		if !ok || !h.Valid() || !finite(h.Sum) {
			continue
		}
		c := Concurrency{Predicted: math.Max(0, h.Sum) / secs}
		if s.hasGauges {
			obs := 0.0
			for _, g := range s.gauges[:s.n] {
				obs += g.Mean
			}
			if finite(obs) {
				c.Observed, c.HasObserved = math.Max(0, obs), true
			}
		}
		rep.Concurrency[s.stage] = c
	}
}

// finished is n_B, the requests that finished in the window: the count of
// the e2e histogram; false without it, or when the caller marked the count
// unknown (Window.FinishCountUnknown). Client-aborted requests are not in
// it.
//
// Nothing else stands in for it. A histogram observed at the finish on
// vLLM may be observed elsewhere on another server (llm-d-inference-sim
// observes prefill time at the first token), so its count can hold
// requests that have not finished; and the finished-request counter,
// updated apart from e2e, can count a request in another scrape interval
// than e2e does, so a window or interval counted by the one and the next
// by the other can count one request twice.
func finished(w Window) (float64, bool) {
	if w.FinishCountUnknown {
		return 0, false
	}
	return observations(w.Latency[E2E])
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// NeededMetrics lists the latency metrics that evaluating the SLOs needs,
// sorted: every objective's metric, plus e2e, which counts the finished
// requests. A target without one of them cannot be judged on its SLOs; the
// daemon's alert and the generated Prometheus rule both use this list.
func NeededMetrics(slos []SLO) []Metric {
	if len(slos) == 0 {
		return nil
	}
	need := []Metric{E2E}
	for _, s := range slos {
		for _, o := range s.Objectives {
			need = append(need, o.Metric)
		}
	}
	slices.Sort(need)
	return slices.Compact(need)
}
