package slo_test

import (
	"fmt"
	"math"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// ttftWindow is the increase of a TTFT histogram over a window, on some of
// vLLM's bucket edges (seconds): 200 first tokens, 150 of them within
// 250 ms, 190 within 500 ms, and 2 beyond 1 s.
var ttftWindow = slo.Histogram{
	Edges:  []float64{0.1, 0.25, 0.5, 1, math.Inf(1)},
	Counts: []float64{60, 150, 190, 198, 200},
	Sum:    52,
}

// The p99 of a window lies in the bucket that holds its rank: here the 198th
// of 200 first tokens lies in (0.5 s, 1 s], whatever the requests were.
func ExampleQuantileBracket() {
	lower, upper, ok := slo.QuantileBracket(0.99, ttftWindow)
	fmt.Println(lower, upper, ok)
	// Output:
	// 0.5 1 true
}

// The estimate inside the bracket tilts the bucket by its neighbours'
// densities and reproduces the histogram's mean; Prometheus's
// histogram_quantile interpolates linearly in the same bucket.
func ExampleEstimateQuantile() {
	p90 := slo.EstimateQuantile(0.9, ttftWindow)
	fmt.Printf("p90 %.3f s in [%g, %g]\n", p90.Estimate, p90.Lower, p90.Upper)
	fmt.Printf("histogram_quantile %.3f s\n", slo.PrometheusQuantile(0.9, ttftWindow))
	// Output:
	// p90 0.482 s in [0.25, 0.5]
	// histogram_quantile 0.438 s
}

// A threshold on a bucket edge is met by an exact count; one between edges is
// bracketed by the two edges' counts.
func ExampleAttainment() {
	onEdge, _ := slo.Attainment(0.5, ttftWindow)
	fmt.Printf("TTFT <= 500ms: %.3f [%.3f, %.3f] exact=%v\n", onEdge.Estimate, onEdge.Lower, onEdge.Upper, onEdge.IsExact())
	between, _ := slo.Attainment(0.3, ttftWindow)
	fmt.Printf("TTFT <= 300ms: %.3f [%.3f, %.3f] exact=%v\n", between.Estimate, between.Lower, between.Upper, between.IsExact())
	// Output:
	// TTFT <= 500ms: 0.950 [0.950, 0.950] exact=true
	// TTFT <= 300ms: 0.754 [0.750, 0.950] exact=false
}

// Separate histograms cannot say which requests met both objectives; of 200
// finished requests, 190 met TTFT and 180 met TPOT, so at least 170 met both
// (Fréchet) and at most 180.
func ExampleJointGood() {
	ttftGood := slo.Exact(190)
	tpotGood := slo.Exact(180)
	joint := slo.JointGood([]slo.Bounded{ttftGood, tpotGood}, 200)
	fmt.Printf("met both: %g [%g, %g]\n", joint.Estimate, joint.Lower, joint.Upper)
	// Output:
	// met both: 175.5 [170, 180]
}

// Goodput in tokens: the bad requests hold at least the tokens of the
// shortest requests and at most those of the longest, read at the edges of
// the generation-tokens histogram of the same finished requests.
func ExampleGoodputTokens() {
	generation := slo.Histogram{
		Edges:  []float64{50, 100, 200, 500, math.Inf(1)},
		Counts: []float64{20, 80, 170, 200, 200},
		Sum:    27000,
	}
	joint := slo.JointGood([]slo.Bounded{slo.Exact(190), slo.Exact(180)}, 200)
	tokens, ok := slo.GoodputTokens(joint, generation)
	fmt.Printf("good tokens: %.0f [%.0f, %.0f] of %.0f, ok=%v\n", tokens.Estimate, tokens.Lower, tokens.Upper, generation.Sum, ok)
	// Output:
	// good tokens: 23692 [12000, 27000] of 27000, ok=true
}

// The burn rate of an SLO with goal 99% whose joint attainment is 98.5%
// [97%, 99.5%]: the upper bound is the pessimistic burn paging alerts use.
func ExampleBurnRate() {
	all := slo.Bounded{Estimate: 0.985, Lower: 0.97, Upper: 0.995}
	burn, _ := slo.BurnRate(all, 0.99)
	fmt.Printf("burn %.2f [%.2f, %.2f]\n", burn.Estimate, burn.Lower, burn.Upper)
	budget := slo.ErrorBudgetRemaining(all, 0.99)
	fmt.Printf("budget left %.2f [%.2f, %.2f]\n", budget.Estimate, budget.Lower, budget.Upper)
	// Output:
	// burn 1.50 [0.50, 3.00]
	// budget left -0.50 [-2.00, 0.50]
}

// Per-request data (a benchmark's own timings) need no bounds: each request
// either met every objective or did not. Here the second request's first
// token took 0.6 s and the third's tokens came 80 ms apart.
func ExampleEvaluateRequests() {
	reqs := []slo.Request{
		{Arrival: 0, TokenTimes: []float64{0.2, 0.23, 0.26, 0.29}, PromptTokens: 100},
		{Arrival: 0.5, TokenTimes: []float64{1.1, 1.13, 1.16}, PromptTokens: 100},
		{Arrival: 1, TokenTimes: []float64{1.3, 1.38, 1.46, 1.54}, PromptTokens: 100},
	}
	s := slo.SLO{Name: "chat", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
	rep := slo.EvaluateRequests(reqs, []slo.SLO{s}, []float64{0.5}, slo.NearestRank)
	r := rep.SLOs[0]
	fmt.Printf("ttft %d, tpot %d, all %d of %d; goodput %d tokens\n", r.Good["ttft"], r.Good["tpot"], r.Good[slo.AllKey], r.Requests, r.GoodTokens)
	// Output:
	// ttft 2, tpot 2, all 1 of 3; goodput 4 tokens
}
