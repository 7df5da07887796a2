package slo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// vllmPreemptionEdges are vLLM's REQUEST_NUM_PREEMPTIONS_BUCKETS
// (vllm/v1/metrics/buckets.py) with the +Inf bucket.
var vllmPreemptionEdges = []float64{1, 2, 3, 4, 5, 10, 20, math.Inf(1)}

// observeCounts builds the histogram of whole-number observations vs on edges.
func observeCounts(edges []float64, vs []int) Histogram {
	h := Histogram{Edges: edges, Counts: make([]float64, len(edges))}
	for _, v := range vs {
		for i, e := range edges {
			if float64(v) <= e {
				h.Counts[i]++
			}
		}
		h.Sum += float64(v)
	}
	return h
}

func repeat(v, n int) []int { return slices.Repeat([]int{v}, n) }

func TestPreemptedShare(t *testing.T) {
	cases := []struct {
		name   string
		edges  []float64
		obs    []int
		lo, hi float64 // preempted counts
	}{
		{"none preempted: exact 0", vllmPreemptionEdges, repeat(0, 10), 0, 0},
		{"once each, first bucket only: exact from the sum", vllmPreemptionEdges, append(repeat(0, 7), repeat(1, 3)...), 3, 3},
		{"up to five: exact", vllmPreemptionEdges, slices.Concat(repeat(0, 4), repeat(1, 2), []int{2, 3, 4, 5}), 6, 6},
		{"one at 7 (bucket 5..10]: k's range widens by up to 4", vllmPreemptionEdges, slices.Concat(repeat(0, 5), repeat(1, 2), []int{7}), 1, 4},
		{"one above 20: only the lower bound from the buckets", vllmPreemptionEdges, slices.Concat(repeat(0, 5), repeat(1, 3), []int{25}), 1, 8},
		{"a zero-only first bucket (le=0): exact", []float64{0, 1, 2, math.Inf(1)}, slices.Concat(repeat(0, 3), repeat(1, 2), []int{9}), 3, 3},
		{"first bucket holds 0..2 (le=2)", []float64{2, 5, math.Inf(1)}, slices.Concat(repeat(0, 3), []int{2, 1, 3}), 2, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := observeCounts(c.edges, c.obs)
			share, n, ok := PreemptedShare(h)
			if !ok || n != float64(len(c.obs)) {
				t.Fatalf("PreemptedShare: ok %v n %v", ok, n)
			}
			want := Bounded{Lower: c.lo / n, Upper: c.hi / n, Estimate: (c.lo + c.hi) / 2 / n}
			if share != want {
				t.Errorf("share %+v, want %+v", share, want)
			}
			truth := 0.0
			for _, v := range c.obs {
				if v > 0 {
					truth++
				}
			}
			if truth/n < share.Lower || truth/n > share.Upper {
				t.Errorf("truth %v outside [%v, %v]", truth/n, share.Lower, share.Upper)
			}
		})
	}
}

// TestPreemptedShareRefuses: inputs no whole-number observations give.
func TestPreemptedShareRefuses(t *testing.T) {
	cases := []struct {
		name string
		h    Histogram
	}{
		{"empty", observeCounts(vllmPreemptionEdges, nil)},
		{"invalid", Histogram{Edges: []float64{1}, Counts: []float64{1}}},
		{"sum below the buckets' least", Histogram{Edges: vllmPreemptionEdges, Counts: []float64{0, 0, 2, 2, 2, 2, 2, 2}, Sum: 5}},
		{"a sum above what the first bucket's two can hold", Histogram{Edges: vllmPreemptionEdges, Counts: []float64{2, 2, 2, 2, 2, 2, 2, 2}, Sum: 3}},
		{"count in a bucket with no whole number", Histogram{Edges: []float64{1, 1.5, math.Inf(1)}, Counts: []float64{1, 2, 2}, Sum: 2.2}},
		{"count below zero's bucket", Histogram{Edges: []float64{-1, 1, math.Inf(1)}, Counts: []float64{1, 1, 1}, Sum: 0}},
		{"NaN sum", Histogram{Edges: vllmPreemptionEdges, Counts: []float64{1, 1, 1, 1, 1, 1, 1, 1}, Sum: math.NaN()}},
	}
	for _, c := range cases {
		if share, _, ok := PreemptedShare(c.h); ok {
			t.Errorf("%s: share %+v, want none", c.name, share)
		}
	}
}

// TestPreemptedShareHoldsTruth draws random whole-number observations on
// random integer and fractional layouts: the truth is always inside the
// bounds, and on vLLM's layout with nothing above 5 they coincide.
func TestPreemptedShareHoldsTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 28))
	layouts := [][]float64{vllmPreemptionEdges, {0, 1, 3, math.Inf(1)}, {0.5, 2.5, 7, math.Inf(1)}, {3, math.Inf(1)}}
	for trial := range 2000 {
		edges := layouts[trial%len(layouts)]
		maxV := []int{1, 5, 30}[rng.IntN(3)]
		obs := make([]int, 1+rng.IntN(40))
		truth := 0
		for i := range obs {
			if rng.Float64() < 0.6 {
				continue
			}
			obs[i] = 1 + rng.IntN(maxV)
			truth++
		}
		share, n, ok := PreemptedShare(observeCounts(edges, obs))
		if !ok {
			t.Fatalf("trial %d: no share for %v on %v", trial, obs, edges)
		}
		if s := float64(truth) / n; s < share.Lower || s > share.Upper {
			t.Fatalf("trial %d: truth %v outside [%v, %v] (%v on %v)", trial, s, share.Lower, share.Upper, obs, edges)
		}
		if maxV <= 5 && trial%len(layouts) == 0 && !share.IsExact() {
			t.Fatalf("trial %d: vLLM's layout, nothing above 5, share %+v not exact", trial, share)
		}
	}
}

// FuzzPreemptedShare feeds arbitrary histograms (as a scrape may bring):
// no panic, and any share given lies in [0, 1] with Lower <= Estimate <=
// Upper.
func FuzzPreemptedShare(f *testing.F) {
	f.Add(1.0, 2.0, 5.0, 3.0, 4.0, 4.0, 3.0)
	f.Add(0.0, 1.0, 20.0, 10.0, 10.0, 12.0, 40.0)
	f.Fuzz(func(t *testing.T, e0, e1, e2, c0, c1, c2, sum float64) {
		h := Histogram{Edges: []float64{e0, e1, e2, math.Inf(1)}, Counts: []float64{c0, c1, c2, c2 + 1}, Sum: sum}
		share, n, ok := PreemptedShare(h)
		if !ok {
			return
		}
		if !(n > 0) || !(share.Lower >= 0 && share.Lower <= share.Estimate && share.Estimate <= share.Upper && share.Upper <= 1) {
			t.Fatalf("%+v of %v from %+v", share, n, h)
		}
	})
}
