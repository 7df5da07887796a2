package slo

import (
	"math"
)

// Measured is one finished request as the server measured it (one vLLM
// trace span): its latencies are exact, unlike a histogram's buckets. A
// latency the server did not report is NaN.
type Measured struct {
	TTFT, TPOT, E2E, Queue, Prefill, Decode, Inference float64
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int
}

// Value returns the request's latency of a metric, ok false when it was not
// measured (and always for ITL, which is per token gap, not per request).
func (m Measured) Value(metric Metric) (float64, bool) {
	var v float64
	switch metric {
	case TTFT:
		v = m.TTFT
	case TPOT:
		v = m.TPOT
	case E2E:
		v = m.E2E
	case Queue:
		v = m.Queue
	case Prefill:
		v = m.Prefill
	case Decode:
		v = m.Decode
	case Inference:
		v = m.Inference
	default:
		return 0, false
	}
	return v, finite(v)
}

// MeasuredReport is the exact evaluation of the requests that finished in one
// window. Its numbers have the shapes of a WindowReport's, so that they can
// stand in for the histogram estimates.
type MeasuredReport struct {
	// Requests is the number of requests evaluated.
	Requests int
	// Counts is the number of requests that carried each metric.
	Counts map[Metric]int
	// Quantiles per metric (nearest rank), with Lower = Estimate = Upper =
	// Prometheus; absent for a metric no request carried.
	Quantiles map[Metric][]Quantile
	// SLOs holds one result per SLO, in order, when Requests > 0.
	SLOs []SLOResult
}

// EvaluateMeasured evaluates the requests that finished in a window of the
// given length in seconds, exactly: nearest-rank quantiles of every metric,
// and per SLO the good count of each per-request objective and of "all", the
// attainments, goodput (requests and generated tokens per second) and the
// burn rate.
//
// The comparison is Evaluate's: a value meets a threshold when it is at
// most the threshold up to a relative 1e-9. ITL is per token gap and no span
// carries it, so ITL objectives are absent from the result and, as in
// Evaluate, not part of "all"; an SLO with only ITL objectives has no
// "all".
//
// A request missing an objective's metric cannot be judged on it. It is then
// counted as good in the upper bound and bad in the lower bound (of the
// objective, of "all" and of goodput), so the bounds hold whatever the value
// was, and the estimate counts it as good, as Evaluate does for an
// absent histogram. With every metric present the results are exact.
func EvaluateMeasured(reqs []Measured, seconds float64, slos []SLO, quantiles []float64) MeasuredReport {
	rep := MeasuredReport{Requests: len(reqs), Counts: map[Metric]int{}, Quantiles: map[Metric][]Quantile{}}
	cols := measuredColumns(reqs)
	for k, m := range measuredMetrics {
		values := cols[k]
		if len(values) == 0 {
			continue
		}
		rep.Counts[m] = len(values)
		for i, v := range exactQuantiles(values, quantiles) {
			if q := quantiles[i]; q >= 0 && q <= 1 {
				rep.Quantiles[m] = append(rep.Quantiles[m], Quantile{Q: q, Bounded: Exact(v)})
			}
		}
	}
	if len(reqs) == 0 || !(seconds > 0) {
		return rep
	}
	for _, s := range slos {
		rep.SLOs = append(rep.SLOs, evaluateMeasuredSLO(s, reqs, seconds))
	}
	return rep
}

// measuredMetrics are the metrics a Measured carries, in its fields' order.
var measuredMetrics = [...]Metric{TTFT, TPOT, E2E, Queue, Prefill, Decode, Inference}

// measuredColumns collects, in one pass over reqs, each metric's finite
// values (Measured.Value), in measuredMetrics order.
func measuredColumns(reqs []Measured) [len(measuredMetrics)][]float64 {
	var cols [len(measuredMetrics)][]float64
	for k := range cols {
		cols[k] = make([]float64, 0, len(reqs))
	}
	for i := range reqs {
		r := &reqs[i]
		for k, v := range [...]float64{r.TTFT, r.TPOT, r.E2E, r.Queue, r.Prefill, r.Decode, r.Inference} {
			if v-v == 0 { // finite: NaN and ±Inf give NaN
				cols[k] = append(cols[k], v)
			}
		}
	}
	return cols
}

// JudgeMeasured counts, per SLO, the requests reqs meeting every
// per-request objective and their generation tokens, as EvaluateMeasured
// does, without the quantiles: what one scrape interval's spans add to a
// ledger. An SLO without a per-request objective counts nothing.
func JudgeMeasured(reqs []Measured, slos []SLO) (good, tokens []Bounded) {
	good, tokens = make([]Bounded, len(slos)), make([]Bounded, len(slos))
	for i, s := range slos {
		r := evaluateMeasuredSLO(s, reqs, 1) // per second over 1 s: the counts
		good[i], tokens[i] = r.GoodRequests[AllKey], r.GoodputTokensPerSecond
	}
	return good, tokens
}

// verdict is one request's standing on one objective.
type verdict int

const (
	met verdict = iota
	missed
	unknown
)

func judge(r Measured, o Objective) verdict {
	v, ok := r.Value(o.Metric)
	switch {
	case !ok:
		return unknown
	case atMost(v, o.Threshold):
		return met
	}
	return missed
}

// evaluateMeasuredSLO counts one SLO's good requests; see EvaluateMeasured.
func evaluateMeasuredSLO(s SLO, reqs []Measured, seconds float64) SLOResult {
	n := float64(len(reqs))
	res := SLOResult{Name: s.Name, Requests: n, Objectives: map[string]Bounded{}, GoodRequests: map[string]Bounded{}}
	var perRequest []Objective
	for _, o := range s.Objectives {
		if o.Metric != ITL {
			perRequest = append(perRequest, o)
		}
	}
	if len(perRequest) == 0 {
		return res
	}
	good := make([]Bounded, len(perRequest))
	var all, allTokens Bounded
	for _, r := range reqs {
		certain, possible := true, true
		for i, o := range perRequest {
			switch judge(r, o) {
			case met:
				good[i] = add(good[i], 1, 1)
			case unknown:
				good[i] = add(good[i], 0, 1)
				certain = false
			case missed:
				certain, possible = false, false
			}
		}
		tokens := float64(max(r.CompletionTokens, 0))
		switch {
		case certain:
			all = add(all, 1, 1)
			allTokens = add(allTokens, tokens, tokens)
		case possible:
			all = add(all, 0, 1)
			allTokens = add(allTokens, 0, tokens)
		}
	}
	for i, o := range perRequest {
		key := string(o.Metric)
		res.GoodRequests[key] = good[i]
		res.Objectives[key] = Divide(good[i], n)
	}
	res.GoodRequests[AllKey] = all
	res.Objectives[AllKey] = Divide(all, n)
	res.GoodputRequestsPerSecond = Divide(all, seconds)
	res.GoodputTokensPerSecond = Divide(allTokens, seconds)
	res.HasGoodputTokens = true
	res.BurnRate, res.HasBurnRate = BurnRate(res.Objectives[AllKey], s.Goal)
	return res
}

// add counts a request into a bounded count: lower and estimate grow by
// certain, upper by possible. The estimate counts an unjudged request as good,
// so it equals Upper.
func add(b Bounded, certain, possible float64) Bounded {
	return Bounded{Estimate: b.Estimate + possible, Lower: b.Lower + certain, Upper: b.Upper + possible}
}

// MeasuredTPOT is vLLM's time per output token of one request: the decode
// time over the completion tokens after the first, decode/(n−1), 0 for a
// request of at most one token. decode is last token − first token; a caller
// without it passes e2e − TTFT, which is the same span of time.
func MeasuredTPOT(decode float64, completionTokens int) float64 {
	if completionTokens <= 1 || !finite(decode) {
		if finite(decode) {
			return 0
		}
		return math.NaN()
	}
	return decode / float64(completionTokens-1)
}
