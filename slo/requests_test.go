package slo

import (
	"math"
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
