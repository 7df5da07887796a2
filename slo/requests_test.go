package slo

import (
	"math"
	"slices"
	"testing"
)

// seedRequests are three requests small enough to work out by hand: their
// latencies, throughputs and attainments are checked below against numbers
// computed on paper.
func seedRequests() []Request {
	return []Request{
		{Arrival: 0.00, TokenTimes: []float64{0.20, 0.25, 0.30, 0.35, 0.40}, PromptTokens: 10},
		{Arrival: 0.10, TokenTimes: []float64{0.60, 0.64, 0.68, 0.72, 0.76, 0.80}, PromptTokens: 20},
		{Arrival: 0.20, TokenTimes: []float64{0.90, 1.00, 1.10}, PromptTokens: 30},
	}
}

var interactive = SLO{Name: "interactive", Objectives: []Objective{{TTFT, 0.5}, {TPOT, 0.05}}, Goal: 0.99}

func TestEvaluateRequestsSeed(t *testing.T) {
	rep := EvaluateRequests(seedRequests(), []SLO{interactive}, []float64{0.5, 0.99}, NearestRank)
	checks := []struct {
		name      string
		got, want float64
		tolerance float64
	}{
		{"TTFT p50", rep.Metrics[TTFT].Percentiles[0].Value, 0.50, 1e-12},
		{"TTFT p99", rep.Metrics[TTFT].Percentiles[1].Value, 0.70, 1e-12},
		{"TTFT mean", rep.Metrics[TTFT].Mean, 1.4 / 3, 1e-12},
		{"TPOT mean", rep.Metrics[TPOT].Mean, 0.19 / 3, 1e-12},
		{"e2e mean", rep.Metrics[E2E].Mean, (0.4 + 0.7 + 0.9) / 3, 1e-12},
		{"span", rep.Span, 1.10, 1e-12},
		{"throughput", rep.GenerationTokensPerSecond, 14 / 1.10, 1e-9},
		{"prompt throughput", rep.PromptTokensPerSecond, 60 / 1.10, 1e-9},
		{"requests/s", rep.RequestsPerSecond, 3 / 1.10, 1e-9},
		{"Little's concurrency", rep.Concurrency, 2.0 / 1.10, 1e-9},
		{"goodput tokens/s", rep.SLOs[0].GoodputTokensPerSecond, 10, 1e-9},
		{"goodput requests/s", rep.SLOs[0].GoodputRequestsPerSecond, 2 / 1.10, 1e-9},
		{"attainment all", rep.SLOs[0].Attainment[AllKey], 2.0 / 3, 1e-12},
		{"attainment ttft", rep.SLOs[0].Attainment["ttft"], 2.0 / 3, 1e-12},
		{"attainment tpot (0.05 met despite float noise)", rep.SLOs[0].Attainment["tpot"], 2.0 / 3, 1e-12},
		{"ITL count", float64(rep.Metrics[ITL].Count), 4 + 5 + 2, 0},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > c.tolerance {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if rep.SLOs[0].GoodTokens != 11 || rep.SLOs[0].Good[AllKey] != 2 {
		t.Errorf("good tokens %d, good requests %d; want 11, 2", rep.SLOs[0].GoodTokens, rep.SLOs[0].Good[AllKey])
	}
	if rep.Requests != 3 || rep.Failed != 0 || rep.GenerationTokens != 14 {
		t.Errorf("requests %d failed %d tokens %d; want 3, 0, 14", rep.Requests, rep.Failed, rep.GenerationTokens)
	}
}

func TestEvaluateRequestsEdgeCases(t *testing.T) {
	reqs := []Request{
		{Arrival: 0, TokenTimes: []float64{0.5}},            // one token: TPOT 0
		{Arrival: 0, TokenTimes: []float64{0.3, 0.35}},      // 0.35−0.3 must meet ITL 0.05
		{Arrival: 0.1, Failed: true},                        // failed
		{Arrival: 0.2},                                      // no token: failed
		{Arrival: 0.2, TokenTimes: []float64{math.NaN()}},   // garbage: failed
		{Arrival: math.Inf(1), TokenTimes: []float64{1, 2}}, // garbage: failed
	}
	s := SLO{Name: "s", Objectives: []Objective{{TPOT, 0}, {ITL, 0.05}, {Queue, 1}}}
	rep := EvaluateRequests(reqs, []SLO{s}, []float64{0.5, 2}, LinearRank)
	if rep.Requests != 2 || rep.Failed != 4 {
		t.Fatalf("requests %d failed %d; want 2, 4", rep.Requests, rep.Failed)
	}
	r := rep.SLOs[0]
	if r.Good["tpot"] != 1 || r.Good["itl"] != 1 || r.Attainment["itl"] != 1 || r.Good[AllKey] != 1 || r.GoodTokens != 1 {
		t.Errorf("SLO result %+v: want tpot 1 good, itl 1/1 gaps, 1 good request of 1 token", r)
	}
	if _, ok := r.Attainment["queue"]; ok {
		t.Error("queue attainment reported from client data")
	}
	if p := rep.Metrics[TTFT].Percentiles; len(p) != 1 || p[0].Value != 0.4 {
		t.Errorf("TTFT percentiles %+v, want only p50 = 0.4 (linear)", p)
	}
	empty := EvaluateRequests(nil, []SLO{s}, []float64{0.5}, NearestRank)
	if empty.Requests != 0 || len(empty.Metrics) != 0 || empty.GenerationTokensPerSecond != 0 || len(empty.SLOs[0].Attainment) != 0 {
		t.Errorf("empty report = %+v", empty)
	}
}

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

// LinearPercentile is numpy's default percentile (method "linear"), which
// `vllm bench serve` reports: the value at fractional index h = q·(n−1) of the
// sorted samples, interpolated linearly between the two neighbouring samples.
// q is a fraction (0.99, not 99). NaN for no samples or q outside [0, 1].
func LinearPercentile(q float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*frac
}
