package buckets

import (
	"math"
	"slices"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestAdviseKeepsThresholdsAndBudget: every threshold is an edge, the
// budget is never exceeded, edges ascend, the largest default edge stays,
// with and without an observed distribution; a budget below the thresholds
// is an error naming the family.
func TestAdviseKeepsThresholdsAndBudget(t *testing.T) {
	obs := &slo.Histogram{Edges: []float64{0.3, 0.5, 1, 5, math.Inf(1)}, Counts: []float64{10, 40, 80, 99, 100}}
	ths := []float64{0.2, 0.7}
	for _, tc := range []struct {
		name     string
		observed *slo.Histogram
		budget   int
	}{{"defaults", nil, 21}, {"defaults thinned", nil, 6}, {"observed", obs, 21}, {"observed, small", obs, 5}} {
		adv, err := Advise(RequestLatency, ths, tc.observed, tc.budget)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(adv.Edges) > tc.budget || !slices.IsSorted(adv.Edges) {
			t.Errorf("%s: %d edges for a budget of %d, sorted %v: %v", tc.name, len(adv.Edges), tc.budget, slices.IsSorted(adv.Edges), adv.Edges)
		}
		for _, th := range ths {
			if !slices.Contains(adv.Edges, th) {
				t.Errorf("%s: threshold %v not an edge of %v", tc.name, th, adv.Edges)
			}
		}
		if adv.Edges[len(adv.Edges)-1] != 7680 {
			t.Errorf("%s: largest edge %v, want vLLM's largest default 7680", tc.name, adv.Edges[len(adv.Edges)-1])
		}
		if adv.FromObserved != (tc.observed != nil) {
			t.Errorf("%s: FromObserved %v", tc.name, adv.FromObserved)
		}
	}
	if _, err := Advise(TimeToFirstToken, []float64{0.1, 0.2, 0.3}, nil, 2); err == nil {
		t.Error("a budget of 2 for 3 thresholds: no error")
	}
	if _, err := Advise(TimeToFirstToken, []float64{math.NaN()}, nil, 5); err == nil {
		t.Error("a NaN threshold: no error")
	}
}

// TestPlaceFindsTheBracket: a threshold on an edge is exact; one between
// edges names both; one beyond the last edge is bracketed up to +Inf.
func TestPlaceFindsTheBracket(t *testing.T) {
	s := slo.SLO{Name: "s", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.03}, {Metric: slo.E2E, Threshold: 9000}}}
	got := Place([]slo.SLO{s}, nil)
	want := []Placement{
		{SLO: "s", Metric: slo.TTFT, Threshold: 0.5, OnEdge: true, Above: math.Inf(1)},
		{SLO: "s", Metric: slo.TPOT, Threshold: 0.03, Below: 0.025, Above: 0.05},
		{SLO: "s", Metric: slo.E2E, Threshold: 9000, Below: 7680, Above: math.Inf(1)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Place = %+v\nwant %+v", got, want)
	}
}

// TestIncreaseReadsRestarts: counts that go down are a restart, and the
// later scrape alone is the increase; new edges start afresh.
func TestIncreaseReadsRestarts(t *testing.T) {
	edges := []float64{1, math.Inf(1)}
	h := func(a, b float64) slo.Histogram { return slo.Histogram{Edges: edges, Counts: []float64{a, b}} }
	acc := Increase(nil, h(1, 2), h(3, 5))
	acc = Increase(acc, h(3, 5), h(1, 1))
	if !slices.Equal(acc.Counts, []float64{3, 4}) {
		t.Errorf("increase over a restart = %v, want [2+1, 3+1]", acc.Counts)
	}
	other := slo.Histogram{Edges: []float64{2, math.Inf(1)}, Counts: []float64{4, 4}}
	if got := Increase(acc, h(1, 1), other); !slices.Equal(got.Edges, other.Edges) || !slices.Equal(got.Counts, other.Counts) {
		t.Errorf("increase across new edges = %+v, want the later scrape alone", got)
	}
}

// FuzzAdvise: whatever cumulative counts a recording holds, Advise returns
// ascending positive finite edges within the budget, thresholds included,
// or an error; it never panics.
func FuzzAdvise(f *testing.F) {
	f.Add(10.0, 40.0, 80.0, 100.0, 0.2, 21)
	f.Add(0.0, 0.0, 0.0, 5.0, 1e-9, 3)
	f.Fuzz(func(t *testing.T, a, b, c, total, th float64, budget int) {
		h := &slo.Histogram{Edges: []float64{0.3, 1, 5, math.Inf(1)}, Counts: []float64{a, b, c, total}}
		adv, err := Advise(RequestLatency, []float64{th}, h, budget%64)
		if err != nil {
			return
		}
		if len(adv.Edges) > budget%64 || !slices.Contains(adv.Edges, th) {
			t.Fatalf("edges %v, budget %d, threshold %v", adv.Edges, budget%64, th)
		}
		for i, e := range adv.Edges {
			if !(e > 0) || math.IsInf(e, 0) || (i > 0 && e <= adv.Edges[i-1]) {
				t.Fatalf("edge %d of %v", i, adv.Edges)
			}
		}
	})
}
