package traces

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Result is the trace side of one window of one model.
type Result struct {
	// Nominal is the configured window length.
	Nominal time.Duration
	// Spans is the number of requests the spans report in the window.
	Spans int
	// Finished is vLLM's own count of finished requests over the same
	// scrapes; HasFinished is false when the target exposes no such count.
	Finished    float64
	HasFinished bool
	// Covered is true when every finished request has its span and the
	// spans agree with the histograms: only then are the exact numbers
	// published.
	Covered bool
	// Inconsistent is true when the spans number the finished requests but
	// contradict a bound the histograms prove (Calibration.Failures says
	// which): spans and histograms cannot both describe these requests, so
	// the window is not exact and the histograms stay in charge.
	Inconsistent bool
	// Exact is the evaluation of every request of the window; meaningful
	// only when Covered.
	Exact slo.MeasuredReport
	// Adapters holds the evaluation per LoRA adapter, by name ("" is the base
	// model), when Covered.
	Adapters []AdapterResult
	// FinishReasons counts the window's spans per finish reason.
	FinishReasons map[string]int
	// Calibration compares the histogram estimates with the exact numbers,
	// when Covered or Inconsistent.
	Calibration Calibration
}

// Coverage is Spans / Finished: the share of vLLM's finished requests whose
// span arrived. ok is false when vLLM counted no finished request.
func (r Result) Coverage() (ratio float64, ok bool) {
	if !r.HasFinished || !(r.Finished > 0) {
		return 0, false
	}
	return float64(r.Spans) / r.Finished, true
}

// AdapterResult is the exact evaluation of one adapter's requests.
type AdapterResult struct {
	Name   string
	Report slo.MeasuredReport
}

// Calibration is how the histogram reconstruction fared against the truth
// in one covered window.
type Calibration struct {
	// Checked is the number of bounds compared with an exact value.
	Checked int
	// Failures describes every histogram bound the exact value left. The
	// comparison has no tolerance, and the bounds are proved, so each means
	// that the spans and the histograms disagree about the same requests (a
	// sender's bad values, spans of another server routed here) or, failing
	// that, a bug in the bound's proof.
	Failures []string
	// QuantileErrors is histogram estimate − exact value, per metric
	// observed at finish and quantile, where both are finite.
	QuantileErrors []QuantileError
	// AttainmentErrors is histogram estimate − exact attainment, per SLO and
	// objective key that the histograms measure over the finished requests.
	AttainmentErrors []AttainmentError
}

// Held reports whether every compared bound held.
func (c Calibration) Held() bool { return len(c.Failures) == 0 }

// QuantileError is one quantile's calibration.
type QuantileError struct {
	Metric slo.Metric
	Q      float64
	Error  float64
}

// AttainmentError is one attainment's calibration.
type AttainmentError struct {
	SLO, Objective string
	Error          float64
}

// reconcile starts the result of a window whose spans number spans: ok is
// true when they number exactly vLLM's finished requests, so that the window
// is evaluated.
//
// The finished count is vLLM's request_success_total increase over the
// window's scrapes, else the e2e histogram's count. The window is covered
// when the spans number exactly that: vLLM emits a request's span in the
// same step that counts it finished, so equal counts over the same scrapes
// mean the same requests. Anything else (sampling, loss, a receiver restart,
// spans still in flight) leaves the histogram bounds in charge.
//
// Equal counts are necessary, not sufficient: the spans must also fall
// within every bound the histograms prove (calibrate). When one does not,
// the spans contradict vLLM's own counts of the same requests; the result
// is Inconsistent, not Covered, and carries no exact numbers, only the
// calibration that says which bounds failed.
func reconcile(spans int, reasons map[string]int, w slo.Window, hist slo.WindowReport) (res Result, ok bool) {
	res = Result{Nominal: w.Nominal, Spans: spans, FinishReasons: reasons}
	if w.HasRequestSuccess && finite(w.RequestSuccess) {
		res.Finished, res.HasFinished = math.Max(0, w.RequestSuccess), true
	} else if n, ok := hist.Requests[slo.E2E]; ok {
		res.Finished, res.HasFinished = n, true
	}
	ok = res.HasFinished && res.Finished == float64(res.Spans) && w.Seconds() > 0
	return res, ok
}

// judged completes a reconciled result with the exact evaluation of the
// window's spans: the abandoned requests put in, the calibration, and, when
// it holds, the exact numbers and those of each adapter (names, sorted;
// adapter evaluates one and gives its share of the spans).
func (res Result) judged(exact slo.MeasuredReport, hist slo.WindowReport, slos []slo.SLO, names []string, adapter func(name string) (slo.MeasuredReport, float64)) Result {
	judgeAbandoned(exact.SLOs, hist.SLOs, slos, 1)
	res.Calibration = calibrate(hist, exact)
	if !res.Calibration.Held() {
		res.Inconsistent = true
		return res
	}
	res.Covered, res.Exact = true, exact
	if len(names) == 1 {
		// One adapter (most often the base model alone) holds every
		// request: its evaluation is the window's, share 1 included.
		res.Adapters = []AdapterResult{{Name: names[0], Report: exact}}
		return res
	}
	for _, name := range names {
		rep, share := adapter(name)
		judgeAbandoned(rep.SLOs, hist.SLOs, slos, share)
		res.Adapters = append(res.Adapters, AdapterResult{Name: name, Report: rep})
	}
	return res
}

// judgeAbandoned puts each SLO's population into the exact results es, which
// count the finished requests only: the spans describe exactly the requests
// that finished, and vLLM sends no span for a stream its client cancelled.
// The abandoned requests of the window come from the histograms' own
// evaluation hist (the ledger's bound over the same scrapes), so that under
// [slo.AbandonedBad]
//
//	all ∈ [good / (n + A_hi), good / (n + A_lo)]
//
// with good and n exact (slo.AttainmentOver), and the requests the server
// turned away at admission added to the population, exactly, under
// RejectedBad (slo.Unserved): exact when A is, and otherwise
// as wide as what is known of A, never the finished share alone. The burn
// rate follows from it; goodput is the good requests' and is untouched.
// Without an abandoned bound (the window was not judged interval by
// interval) "all" and the burn rate are dropped under AbandonedBad, so the
// histograms' answer (which has none either) stands.
//
// share is the part of the window's spans that es describes: 1 for the
// whole window, an adapter's share of the spans for an adapter. An adapter's
// abandoned requests are some part of the window's, anywhere in [0, A_hi]
// (which adapter a cancelled stream asked for is not known), estimated as
// its share of them.
func judgeAbandoned(es, hist []slo.SLOResult, slos []slo.SLO, share float64) {
	for i := range es {
		r := &es[i]
		good, ok := r.GoodRequests[slo.AllKey]
		if !ok {
			continue
		}
		def, _ := findDefinition(slos, r.Name)
		h, found := findSLO(hist, r.Name)
		if found && h.HasAbandoned && share == 1 {
			r.Abandoned, r.HasAbandoned = h.Abandoned, true
		}
		if def.Abandoned == slo.AbandonedExcluded && (def.Rejected == slo.RejectedExcluded || !h.HasRejected) {
			continue
		}
		all, ok := slo.Bounded{}, false
		if found && h.HasAbandoned {
			a, rejected := h.Abandoned, h.Rejected
			if share < 1 {
				a = slo.Bounded{Lower: 0, Estimate: a.Estimate * share, Upper: a.Upper}
				// Which adapter a rejected request asked for is not known
				// either: anywhere in [0, R].
				u := slo.Unserved(def, a, 0)
				if def.Rejected == slo.RejectedBad {
					u.Estimate += rejected * share
					u.Upper += rejected
				}
				all, ok = slo.AttainmentOver(good, r.Requests, u, slo.AbandonedBad)
			} else {
				all, ok = slo.AttainmentOver(good, r.Requests, slo.Unserved(def, a, rejected), slo.AbandonedBad)
			}
		}
		if !ok {
			delete(r.Objectives, slo.AllKey)
			r.BurnRate, r.HasBurnRate = slo.Bounded{}, false
			continue
		}
		r.Objectives[slo.AllKey] = all
		r.BurnRate, r.HasBurnRate = slo.BurnRate(all, def.Goal)
	}
}

func findDefinition(slos []slo.SLO, name string) (slo.SLO, bool) {
	for _, s := range slos {
		if s.Name == name {
			return s, true
		}
	}
	return slo.SLO{}, false
}

// calibrate compares every histogram bound whose population is the finished
// requests with the exact value. TTFT is observed at the first token, so its
// histogram describes another population than the finished requests and is
// not compared per objective or per quantile; the joint "all" is, because its
// bounds are proved over the finished requests.
func calibrate(hist slo.WindowReport, exact slo.MeasuredReport) Calibration {
	var c Calibration
	for _, m := range slo.Metrics {
		if !m.ObservedAtFinish() {
			continue
		}
		for _, hq := range hist.Quantiles[m] {
			v, ok := exactQuantile(exact.Quantiles[m], hq.Q)
			if !ok {
				continue
			}
			c.check(hq.Bounded, v, fmt.Sprintf("%s quantile %g", m, hq.Q))
			if finite(hq.Estimate) {
				c.QuantileErrors = append(c.QuantileErrors, QuantileError{Metric: m, Q: hq.Q, Error: hq.Estimate - v})
			}
		}
	}
	for _, hs := range hist.SLOs {
		es, ok := findSLO(exact.SLOs, hs.Name)
		if !ok {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(hs.Objectives)) {
			if key == string(slo.TTFT) || key == string(slo.ITL) {
				continue
			}
			e, ok := es.Objectives[key]
			if !ok || !e.IsExact() {
				continue
			}
			b := hs.Objectives[key]
			c.check(b, e.Estimate, fmt.Sprintf("SLO %q attainment of %s", hs.Name, key))
			c.AttainmentErrors = append(c.AttainmentErrors, AttainmentError{SLO: hs.Name, Objective: key, Error: b.Estimate - e.Estimate})
		}
		if _, ok := hs.Objectives[slo.AllKey]; !ok {
			continue
		}
		if es.GoodputRequestsPerSecond.IsExact() {
			c.check(hs.GoodputRequestsPerSecond, es.GoodputRequestsPerSecond.Estimate, fmt.Sprintf("SLO %q goodput requests/s", hs.Name))
		}
		if hs.HasGoodputTokens && es.GoodputTokensPerSecond.IsExact() {
			c.check(hs.GoodputTokensPerSecond, es.GoodputTokensPerSecond.Estimate, fmt.Sprintf("SLO %q goodput tokens/s", hs.Name))
		}
		hg, okH := hs.GoodRequests[slo.AllKey]
		if eg, ok := es.GoodRequests[slo.AllKey]; ok && okH && eg.IsExact() {
			c.check(hg, eg.Estimate, fmt.Sprintf("SLO %q good requests", hs.Name))
		}
	}
	return c
}

// check compares one bound with the exact value, without tolerance; NaN
// bounds (nothing known) are skipped.
func (c *Calibration) check(b slo.Bounded, exact float64, what string) {
	if math.IsNaN(b.Lower) || math.IsNaN(b.Upper) || math.IsNaN(exact) {
		return
	}
	c.Checked++
	if exact < b.Lower || exact > b.Upper {
		c.Failures = append(c.Failures, fmt.Sprintf("%s: exact %v outside the histogram bounds [%v, %v]", what, exact, b.Lower, b.Upper))
	}
}

func exactQuantile(qs []slo.Quantile, q float64) (float64, bool) {
	for _, x := range qs {
		if x.Q == q {
			return x.Estimate, true
		}
	}
	return 0, false
}

func findSLO(rs []slo.SLOResult, name string) (slo.SLOResult, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return slo.SLOResult{}, false
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Apply puts the exact numbers of a covered result in place of the histogram
// estimates of wr: the quantiles and counts of every metric the spans carry,
// and every SLO's per-request objectives, "all", goodput and burn rate ("all"
// and the burn rate over the SLO's population: see judgeAbandoned). ITL
// objectives, which no span measures, keep their histogram bounds; so does
// everything when the result is not covered.
func (r Result) Apply(wr *slo.WindowReport) {
	if !r.Covered {
		return
	}
	quantiles := make(map[slo.Metric][]slo.Quantile, len(wr.Quantiles))
	maps.Copy(quantiles, wr.Quantiles)
	requests := make(map[slo.Metric]float64, len(wr.Requests))
	maps.Copy(requests, wr.Requests)
	for m, qs := range r.Exact.Quantiles {
		quantiles[m] = qs
		requests[m] = float64(r.Exact.Counts[m])
	}
	wr.Quantiles, wr.Requests = quantiles, requests
	slos := slices.Clone(wr.SLOs)
	for i, hs := range slos {
		es, ok := findSLO(r.Exact.SLOs, hs.Name)
		if !ok {
			continue
		}
		if _, ok := es.Objectives[slo.AllKey]; !ok {
			continue
		}
		merged := es
		merged.Objectives = maps.Clone(es.Objectives)
		merged.GoodRequests = maps.Clone(es.GoodRequests)
		if v, ok := hs.Objectives[string(slo.ITL)]; ok {
			merged.Objectives[string(slo.ITL)] = v
			merged.GoodRequests[string(slo.ITL)] = hs.GoodRequests[string(slo.ITL)]
		}
		slos[i] = merged
	}
	wr.SLOs = slos
}
