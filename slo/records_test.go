package slo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEvaluateMeasuredBoundsHoldForAnyMissingValue: requests missing a metric
// give bounds that hold whatever the missing values were; with nothing
// missing the results are exact and equal the direct count.
func TestEvaluateMeasuredBoundsHoldForAnyMissingValue(t *testing.T) {
	s := SLO{Name: "s", Objectives: []Objective{{Metric: TTFT, Threshold: 0.5}, {Metric: TPOT, Threshold: 0.05}, {Metric: ITL, Threshold: 0.1}}, Goal: 0.9}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		reqs := make([]Measured, 1+rng.IntN(30))
		for i := range reqs {
			reqs[i] = Measured{TTFT: rng.Float64(), TPOT: rng.Float64() / 10, E2E: rng.Float64() * 5, CompletionTokens: rng.IntN(100),
				Queue: math.NaN(), Prefill: math.NaN(), Decode: math.NaN(), Inference: math.NaN()}
			if trial%2 == 1 && rng.IntN(4) == 0 {
				reqs[i].TPOT = math.NaN()
			}
		}
		rep := EvaluateMeasured(reqs, 60, []SLO{s}, []float64{0.5, 0.99})
		res := rep.SLOs[0]
		if _, ok := res.Objectives[string(ITL)]; ok {
			t.Fatal("an ITL attainment from spans that carry no ITL")
		}
		for fill := range 20 {
			good, tokens := 0, 0
			for _, r := range reqs {
				tpot := r.TPOT
				if math.IsNaN(tpot) {
					tpot = float64(fill) / 200 // 0 .. 0.095: either side of the threshold
				}
				if atMost(r.TTFT, 0.5) && atMost(tpot, 0.05) {
					good++
					tokens += r.CompletionTokens
				}
			}
			all := res.GoodRequests[AllKey]
			if g := float64(good); g < all.Lower || g > all.Upper {
				t.Fatalf("trial %d: good %v outside %+v", trial, g, all)
			}
			// Rates are count / seconds, as every rate of the package.
			if tok := float64(tokens) / 60; tok < res.GoodputTokensPerSecond.Lower || tok > res.GoodputTokensPerSecond.Upper {
				t.Fatalf("trial %d: goodput tokens %v outside %+v", trial, tok, res.GoodputTokensPerSecond)
			}
			if trial%2 == 0 && (!all.IsExact() || all.Estimate != float64(good)) {
				t.Fatalf("trial %d: nothing missing, all = %+v, want exactly %d", trial, all, good)
			}
		}
		if got := rep.Quantiles[TTFT][0]; !got.IsExact() || rep.Counts[TTFT] != len(reqs) {
			t.Fatalf("TTFT median %+v over %d", got, rep.Counts[TTFT])
		}
		if _, ok := rep.Quantiles[Queue]; ok {
			t.Fatal("a queue quantile from requests without queue times")
		}
	}
}

func TestMeasuredTPOT(t *testing.T) {
	tests := []struct {
		decode float64
		n      int
		want   float64
	}{{1, 11, 0.1}, {1, 1, 0}, {1, 0, 0}, {math.NaN(), 5, math.NaN()}}
	for _, tc := range tests {
		got := MeasuredTPOT(tc.decode, tc.n)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("MeasuredTPOT(%v, %d) = %v, want %v", tc.decode, tc.n, got, tc.want)
		}
	}
}

// TestMeasuredRatiosMatchTheHistogramPath: exact mode's shares and rates of
// exact counts must equal, bit for bit, what the histogram path computes
// from the same counts (Divide), or the calibration, which compares them
// without tolerance, reports a histogram bound as broken when the two differ
// in the last bit (as multiplying by 1/seconds did).
func TestMeasuredRatiosMatchTheHistogramPath(t *testing.T) {
	s := SLO{Name: "s", Objectives: []Objective{{Metric: TTFT, Threshold: 0.5}, {Metric: TPOT, Threshold: 0.05}}, Goal: 0.9}
	rng := rand.New(rand.NewPCG(5, 8))
	for trial := range 500 {
		reqs := make([]Measured, 1+rng.IntN(300))
		good, tokens := 0.0, 0.0
		for i := range reqs {
			reqs[i] = Measured{TTFT: rng.Float64(), TPOT: rng.Float64() / 10, E2E: rng.Float64() * 5, CompletionTokens: rng.IntN(2000),
				Queue: math.NaN(), Prefill: math.NaN(), Decode: math.NaN(), Inference: math.NaN()}
			if atMost(reqs[i].TTFT, 0.5) && atMost(reqs[i].TPOT, 0.05) {
				good++
				tokens += float64(reqs[i].CompletionTokens)
			}
		}
		seconds := 1 + rng.Float64()*3600
		res := EvaluateMeasured(reqs, seconds, []SLO{s}, nil).SLOs[0]
		n := float64(len(reqs))
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"goodput requests/s", res.GoodputRequestsPerSecond.Estimate, Divide(Exact(good), seconds).Estimate},
			{"goodput tokens/s", res.GoodputTokensPerSecond.Estimate, Divide(Exact(tokens), seconds).Estimate},
			{"attainment of all", res.Objectives[AllKey].Estimate, Divide(Exact(good), n).Estimate},
		} {
			if c.got != c.want {
				t.Fatalf("trial %d: %s %v, the histogram path's arithmetic gives %v", trial, c.what, c.got, c.want)
			}
		}
	}
}
