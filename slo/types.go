package slo

import (
	"math"
	"time"
)

// Metric names one of the latency histograms vLLM exposes.
type Metric string

// The latency metrics, in the order they are reported.
const (
	TTFT      Metric = "ttft"      // time to first token, observed at the first token
	TPOT      Metric = "tpot"      // per-request mean inter-token gap, observed at finish
	ITL       Metric = "itl"       // each inter-token gap, observed as the token is produced
	E2E       Metric = "e2e"       // arrival to last token, observed at finish
	Queue     Metric = "queue"     // waiting before first scheduled, observed at finish
	Prefill   Metric = "prefill"   // first scheduled to first token, observed at finish
	Decode    Metric = "decode"    // first token to last token, observed at finish
	Inference Metric = "inference" // first scheduled to last token, observed at finish
)

// Metrics lists every latency metric in report order.
var Metrics = []Metric{TTFT, TPOT, ITL, E2E, Queue, Prefill, Decode, Inference}

// ObservedAtFinish reports whether the metric's histogram is observed once per
// request when the request finishes, so that its population is the set of
// requests that finished in a window. TTFT and ITL are observed earlier.
func (m Metric) ObservedAtFinish() bool {
	return m != TTFT && m != ITL
}

// Histogram is a classic (bucketed) histogram: cumulative counts at ascending
// upper edges, the last edge being +Inf. It holds either a cumulative state as
// scraped or the increase of that state over a window; the math is the same.
type Histogram struct {
	// Edges are the bucket upper bounds (`le`), strictly ascending, the last +Inf.
	Edges []float64
	// Counts[i] is the number of observations <= Edges[i]; non-decreasing.
	Counts []float64
	// Sum is the sum of all observed values.
	Sum float64
}

// Total is the number of observations: the count of the +Inf bucket.
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Valid reports whether the histogram has matching, ascending edges ending in
// +Inf and non-negative counts. Inputs that are not valid yield empty results.
func (h Histogram) Valid() bool {
	n := len(h.Edges)
	if n == 0 || n != len(h.Counts) || !math.IsInf(h.Edges[n-1], 1) {
		return false
	}
	for i := range h.Edges {
		if math.IsNaN(h.Edges[i]) || math.IsNaN(h.Counts[i]) || h.Counts[i] < 0 {
			return false
		}
		if i > 0 && h.Edges[i] <= h.Edges[i-1] {
			return false
		}
	}
	return true
}

// Gauge summarises a gauge (vLLM's running or waiting requests) over a window.
type Gauge struct {
	// Known is false when the target did not expose the gauge in the window.
	Known bool
	// AtStart and AtEnd are the values at the scrapes that bound the window.
	AtStart, AtEnd float64
	// Mean is the time-average over the window of the value sampled at scrapes
	// (each sample holds until the next scrape).
	Mean float64
	// Max is the largest value sampled at any scrape in the window, edges included.
	Max float64
}

// Window is everything a history knows about one model over one window
// (Start, End]: the increases of the cumulative series and the gauges. It is
// the only input of the window math.
type Window struct {
	// Start and End are the times of the scrapes that bound the window; End-Start
	// may differ from the nominal window length when scrapes are missing or when
	// the history keeps coarser points for old data.
	Start, End time.Time
	// Nominal is the configured window length ("5m"), used for labels only.
	Nominal time.Duration
	// Latency holds the increase of each latency histogram the target exposes.
	Latency map[Metric]Histogram
	// PromptTokens and GenerationTokens are the increases of the per-request
	// token-count histograms (observed at finish); Valid() is false when absent.
	PromptTokens, GenerationTokens Histogram
	// PromptTokensTotal and GenerationTokensTotal are the increases of the token
	// counters; HasTokenCounters is false when the target lacks them.
	PromptTokensTotal, GenerationTokensTotal float64
	HasTokenCounters                         bool
	// RequestSuccess is the increase of the finished-request counter, all reasons.
	RequestSuccess    float64
	HasRequestSuccess bool
	// FinishCountUnknown is set by a caller that knows the family counting
	// the window's finished requests (e2e; see FinishersOf) was absent at
	// one of the window's two scrapes: it appeared within the window (a
	// server that creates a series at its first observation) or vanished.
	// Its increase, counted from zero where it appeared, then need not be
	// the window's finishers, so FinishersOf says they are unknown. The
	// history cannot tell, and leaves it false.
	FinishCountUnknown bool
	// RequestAborted is the increase of the engine's own count of aborted
	// requests (vLLM's finished-request counter for the reason "abort",
	// SGLang's aborted-request counter); HasRequestAborted is false when the
	// target lacks it.
	RequestAborted    float64
	HasRequestAborted bool
	// RequestRejected is the increase of the requests the server turned away
	// at admission (vLLM's admission_rejections_total, every reason): they
	// reached no engine, no histogram and no gauge. HasRequestRejected is
	// false on servers without admission control.
	RequestRejected    float64
	HasRequestRejected bool
	// Preemptions is the increase of the engine's preemptions of running
	// requests; HasPreemptions is false without the counter.
	Preemptions    float64
	HasPreemptions bool
	// PromptTokensComputed, PromptTokensCached and PromptTokensExternal are
	// the increases of the prompt tokens by source (prefilled here, read from
	// the local prefix cache, received by KV transfer); HasPromptSources is
	// false unless the server has all three.
	PromptTokensComputed, PromptTokensCached, PromptTokensExternal float64
	HasPromptSources                                               bool
	// Running and Waiting are vLLM's in-flight gauges over the window.
	Running, Waiting Gauge
	// WaitingCapacity and WaitingDeferred split Waiting by reason on the
	// newest servers (vLLM's num_requests_waiting_by_reason): waiting for
	// scheduler capacity, and deferred (skipped by the scheduler until
	// something else is ready: a grammar, a remote KV transfer). Not Known
	// on older servers.
	WaitingCapacity, WaitingDeferred Gauge
	// PreemptionsPerRequest is the increase of vLLM's
	// request_num_preemptions, the preemptions of each request that
	// finished in the window, observed at its finish; Valid() is false
	// without it. See PreemptedShare for what its buckets allow.
	PreemptionsPerRequest Histogram
	// InFlightAtRestarts is the sum of running + waiting at the last scrape
	// before each vLLM restart inside the window. A restart aborts those
	// requests: some were observed at their first token and will never be
	// observed at a finish, so they widen the TTFT population bound like the
	// requests in flight at the window's end.
	InFlightAtRestarts float64
	// Restarts is the number of vLLM restarts (segment starts) inside the
	// window: requests in flight before one did not survive it.
	Restarts int
}

// Seconds is the window's actual length in seconds.
func (w Window) Seconds() float64 {
	return w.End.Sub(w.Start).Seconds()
}

// Coverage is the share of the window's nominal length that its data spans,
// (End − Start) / Nominal limited to [0, 1]: below 1 after a start, a
// restart's warm-up, a gap the window may not cross or a memory limit, when
// every number of the window rests on that shorter span. A window that a
// coarse history tier started early spans more than its length and covers
// all of it (1). ok is false for a window without length or data.
func (w Window) Coverage() (float64, bool) {
	span := w.End.Sub(w.Start)
	if w.Nominal <= 0 || span <= 0 {
		return 0, false
	}
	return min(1, float64(span)/float64(w.Nominal)), true
}

// Bounded is an estimate with bounds that the true value cannot leave.
// Lower <= Estimate <= Upper always; exact values have all three equal.
type Bounded struct {
	Estimate, Lower, Upper float64
}

// Exact returns a Bounded whose bounds equal the value.
func Exact(v float64) Bounded {
	return Bounded{Estimate: v, Lower: v, Upper: v}
}

// IsExact reports whether the bounds coincide.
func (b Bounded) IsExact() bool {
	return b.Lower == b.Upper
}
