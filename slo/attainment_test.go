package slo

import (
	"math"
	"testing"
)

func TestGoodCount(t *testing.T) {
	edges := []float64{0.1, 0.5, 1, inf}
	h := hist(14, edges, 10, 30, 40, 40)
	tests := []struct {
		name      string
		e         Estimator
		threshold float64
		h         Histogram
		want      Bounded
	}{
		{"on an edge is exact", Linear, 0.5, h, Exact(30)},
		{"on an edge up to 1e-9", Density, 0.5000000001, h, Exact(30)},
		{"float noise: 0.30-0.25 is the edge 0.05", Density, 0.30 - 0.25, hist(0, []float64{0.05, 0.1, inf}, 3, 5, 6), Exact(3)},
		{"between edges is bracketed", Linear, 0.3, h, Bounded{20, 10, 30}},
		{"in the first bucket from 0", Linear, 0.05, h, Bounded{5, 0, 10}},
		{"meanfit at the uniform mean is linear", MeanFit, 0.3, h, Bounded{20, 10, 30}},
		{"in the +Inf bucket: pessimistic estimate", Density, 2, hist(30, edges, 1, 2, 3, 10), Bounded{3, 3, 10}},
		{"in an empty bucket is exact", Density, 0.3, hist(10, edges, 10, 10, 40, 40), Exact(10)},
		{"zero may hold zeros (TPOT of one-token requests)", Linear, 0, h, Bounded{0, 0, 10}},
		{"negative is met by nothing", Density, -1, h, Exact(0)},
		{"+Inf is met by all", Density, inf, h, Exact(40)},
		{"NaN threshold", Density, math.NaN(), h, Exact(0)},
		{"empty histogram", Density, 0.3, hist(0, edges, 0, 0, 0, 0), Exact(0)},
		{"invalid histogram", Density, 0.3, hist(0, []float64{1}, 3), Exact(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.GoodCount(tt.threshold, tt.h); !nearB(got, tt.want) {
				t.Errorf("%v.GoodCount(%v) = %+v, want %+v", tt.e, tt.threshold, got, tt.want)
			}
		})
	}
	if got := GoodCount(0.5, h); got != Exact(30) {
		t.Errorf("GoodCount(0.5) = %+v, want exact 30", got)
	}
}

func TestAttainment(t *testing.T) {
	edges := []float64{0.1, 0.5, 1, inf}
	tests := []struct {
		name      string
		threshold float64
		h         Histogram
		want      Bounded
		ok        bool
	}{
		{"exact", 0.5, hist(14, edges, 10, 30, 40, 40), Exact(0.75), true},
		{"bracketed", 0.3, hist(14, edges, 10, 30, 40, 40), Bounded{Lower: 0.25, Upper: 0.75}, true},
		{"empty", 0.5, hist(0, edges, 0, 0, 0, 0), Bounded{}, false},
		{"invalid", 0.5, Histogram{}, Bounded{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Attainment(tt.threshold, tt.h)
			if ok != tt.ok || got.Lower != tt.want.Lower || got.Upper != tt.want.Upper {
				t.Errorf("Attainment(%v) = %+v, %v; want bounds [%v, %v], %v", tt.threshold, got, ok, tt.want.Lower, tt.want.Upper, tt.ok)
			}
			if ok && tt.want.IsExact() && got.Estimate != tt.want.Estimate {
				t.Errorf("Attainment(%v) estimate = %v, want %v", tt.threshold, got.Estimate, tt.want.Estimate)
			}
		})
	}
}

func TestOnEdge(t *testing.T) {
	edges := []float64{0.01, 0.025, 0.05, 0.075, inf}
	tests := []struct {
		threshold float64
		want      bool
	}{
		{0.05, true}, {0.30 - 0.25, true}, {5e-2, true}, {0.06, false}, {0, false}, {inf, true}, {math.NaN(), false},
	}
	for _, tt := range tests {
		if got := OnEdge(tt.threshold, edges); got != tt.want {
			t.Errorf("OnEdge(%v) = %v, want %v", tt.threshold, got, tt.want)
		}
	}
	if OnEdge(0.05, nil) {
		t.Error("OnEdge with no edges = true")
	}
}

// GoodCount is the number of observations in h that are <= threshold, with
// the default estimator. See Estimator.GoodCount.
func GoodCount(threshold float64, h Histogram) Bounded {
	return DefaultEstimator.GoodCount(threshold, h)
}

// Attainment is the share of observations in h that are <= threshold, with
// the bounds of GoodCount divided by n. ok is false when h holds no
// observation (or is invalid): attainment is then undefined, not 0 or 1.
func Attainment(threshold float64, h Histogram) (Bounded, bool) {
	return DefaultEstimator.Attainment(threshold, h)
}

// Attainment is Attainment with estimator e.
func (e Estimator) Attainment(threshold float64, h Histogram) (Bounded, bool) {
	n, ok := observations(h) // prepare's n and ok, without its buckets
	if !ok || !(n > 0) {
		return Bounded{}, false
	}
	g := e.GoodCount(threshold, h)
	return Divide(g, n), true
}
