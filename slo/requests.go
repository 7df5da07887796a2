package slo

import (
	"math"
	"slices"
)

// Request is one request measured by a client (for example a `vllm bench
// serve` result): exact, unlike histograms.
type Request struct {
	// Arrival is when the request was sent, in seconds on any fixed clock.
	Arrival float64
	// TokenTimes are the absolute times of each output token, ascending, on
	// the same clock.
	TokenTimes []float64
	// PromptTokens is the prompt length in tokens.
	PromptTokens int
	// Failed marks a request that got no complete answer; a request without
	// any token time counts as failed too.
	Failed bool
}

// RankMethod chooses how per-request percentiles are read from samples.
type RankMethod int

// The rank methods.
const (
	// NearestRank is ExactQuantile: the ceil(q·n)-th smallest sample, the
	// convention of the histogram brackets.
	NearestRank RankMethod = iota
	// LinearRank is LinearPercentile: numpy's default, as `vllm bench serve`
	// reports.
	LinearRank
)

// Percentile is one percentile of one metric.
type Percentile struct {
	Q, Value float64
}

// Summary describes one metric over the successful requests (ITL: over every
// gap between consecutive tokens).
type Summary struct {
	Count       int
	Mean        float64
	Percentiles []Percentile
}

// RequestSLOResult is one SLO evaluated over per-request data, exactly.
type RequestSLOResult struct {
	Name string
	// Requests is the number of successful requests.
	Requests int
	// Good is the good count per objective key and "all" (ITL: good gaps).
	Good map[string]int
	// Attainment is Good over the population: successful requests, or gaps
	// for ITL.
	Attainment map[string]float64
	// GoodTokens is the output tokens of the requests meeting every objective.
	GoodTokens                                       int
	GoodputTokensPerSecond, GoodputRequestsPerSecond float64
}

// RequestReport is the exact evaluation of a set of requests.
type RequestReport struct {
	Requests, Failed int
	// Span is the time from the first arrival to the last token, seconds.
	Span float64
	// Metrics holds TTFT, TPOT, ITL, e2e and decode summaries; a metric with
	// no sample is absent.
	Metrics map[Metric]Summary
	// Throughput over Span; zero when Span is not positive.
	GenerationTokensPerSecond, PromptTokensPerSecond, RequestsPerSecond float64
	GenerationTokens, PromptTokens                                      int
	// Concurrency is Little's Law's mean number of requests in flight over
	// Span: the sum of e2e latencies divided by Span.
	Concurrency float64
	SLOs        []RequestSLOResult
}

// requestMetrics are a successful request's measurable latencies.
type requestMetrics struct {
	values map[Metric]float64
	gaps   []float64
	tokens int
}

// measure computes TTFT (first token − arrival), TPOT ((last − first)/(N−1),
// 0 for a one-token request, as vLLM does), e2e (last − arrival), decode
// (last − first) and the inter-token gaps. Queue, prefill and inference are
// not visible to a client.
func measure(r Request) requestMetrics {
	t := r.TokenTimes
	n := len(t)
	first, last := t[0], t[n-1]
	m := requestMetrics{values: map[Metric]float64{
		TTFT:   first - r.Arrival,
		E2E:    last - r.Arrival,
		Decode: last - first,
		TPOT:   0,
	}, tokens: n}
	if n > 1 {
		m.values[TPOT] = (last - first) / float64(n-1)
	}
	for i := 1; i < n; i++ {
		m.gaps = append(m.gaps, t[i]-t[i-1])
	}
	return m
}

// EvaluateRequests evaluates per-request data exactly: per-metric means and
// percentiles (by rank), throughput over the span from the first arrival to
// the last token, Little's mean concurrency, and per SLO the good counts and
// goodput. A request is good when it meets every per-request objective
// (inclusively, up to a relative 1e-9, so that 0.30−0.25 <= 0.05 holds); ITL
// objectives are attainments over gaps and, as in EvaluateWindow, are not
// part of "all". Objectives on metrics a client cannot see (queue, prefill,
// inference) are skipped. Failed requests count in Failed only.
func EvaluateRequests(reqs []Request, slos []SLO, quantiles []float64, rank RankMethod) RequestReport {
	rep := RequestReport{Metrics: map[Metric]Summary{}}
	samples := map[Metric][]float64{}
	var ok []requestMetrics
	start, end := math.Inf(1), math.Inf(-1)
	for _, r := range reqs {
		if finite(r.Arrival) {
			start = math.Min(start, r.Arrival)
		}
		if r.Failed || len(r.TokenTimes) == 0 || !finite(r.Arrival) || !allFinite(r.TokenTimes) {
			rep.Failed++
			continue
		}
		m := measure(r)
		ok = append(ok, m)
		end = math.Max(end, r.TokenTimes[len(r.TokenTimes)-1])
		for k, v := range m.values {
			samples[k] = append(samples[k], v)
		}
		samples[ITL] = append(samples[ITL], m.gaps...)
		rep.GenerationTokens += m.tokens
		rep.PromptTokens += max(r.PromptTokens, 0)
	}
	rep.Requests = len(ok)
	for k, s := range samples {
		if len(s) > 0 {
			rep.Metrics[k] = summarize(s, quantiles, rank)
		}
	}
	if len(ok) > 0 && end > start {
		rep.Span = end - start
		rep.GenerationTokensPerSecond = float64(rep.GenerationTokens) / rep.Span
		rep.PromptTokensPerSecond = float64(rep.PromptTokens) / rep.Span
		rep.RequestsPerSecond = float64(rep.Requests) / rep.Span
		rep.Concurrency = rep.Metrics[E2E].Mean * float64(rep.Requests) / rep.Span
	}
	for _, s := range slos {
		rep.SLOs = append(rep.SLOs, evaluateRequestSLO(s, ok, rep.Span))
	}
	return rep
}

// evaluateRequestSLO counts good requests, gaps and tokens for one SLO.
func evaluateRequestSLO(s SLO, reqs []requestMetrics, span float64) RequestSLOResult {
	res := RequestSLOResult{Name: s.Name, Requests: len(reqs), Good: map[string]int{}, Attainment: map[string]float64{}}
	gaps := 0
	for _, r := range reqs {
		gaps += len(r.gaps)
		all := true
		for _, o := range s.Objectives {
			key := string(o.Metric)
			if o.Metric == ITL {
				for _, g := range r.gaps {
					if atMost(g, o.Threshold) {
						res.Good[key]++
					}
				}
				continue
			}
			v, ok := r.values[o.Metric]
			if !ok {
				continue
			}
			if atMost(v, o.Threshold) {
				res.Good[key]++
			} else {
				all = false
			}
		}
		if all {
			res.Good[AllKey]++
			res.GoodTokens += r.tokens
		}
	}
	for _, o := range s.Objectives {
		key := string(o.Metric)
		switch {
		case o.Metric == ITL && gaps > 0:
			res.Attainment[key] = float64(res.Good[key]) / float64(gaps)
		case o.Metric != ITL && len(reqs) > 0 && visibleToClient(o.Metric):
			res.Attainment[key] = float64(res.Good[key]) / float64(len(reqs))
		}
	}
	if len(reqs) > 0 {
		res.Attainment[AllKey] = float64(res.Good[AllKey]) / float64(len(reqs))
	}
	if span > 0 {
		res.GoodputTokensPerSecond = float64(res.GoodTokens) / span
		res.GoodputRequestsPerSecond = float64(res.Good[AllKey]) / span
	}
	return res
}

// visibleToClient reports whether a client's token times measure m.
func visibleToClient(m Metric) bool {
	switch m {
	case TTFT, TPOT, ITL, E2E, Decode:
		return true
	}
	return false
}

// summarize sorts a copy of s and reads its mean and percentiles.
func summarize(s []float64, qs []float64, rank RankMethod) Summary {
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	out := Summary{Count: len(sorted), Mean: sum / float64(len(sorted))}
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			continue
		}
		v := ExactQuantile(q, sorted)
		if rank == LinearRank {
			v = LinearPercentile(q, sorted)
		}
		out.Percentiles = append(out.Percentiles, Percentile{Q: q, Value: v})
	}
	return out
}

// allFinite reports whether every value is finite.
func allFinite(vs []float64) bool {
	for _, v := range vs {
		if !finite(v) {
			return false
		}
	}
	return true
}
