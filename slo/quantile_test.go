package slo

import (
	"math"
	"testing"
)

func TestQuantileBracket(t *testing.T) {
	edges := []float64{0.1, 0.5, 1, inf}
	h := hist(14, edges, 10, 30, 40, 40)
	tests := []struct {
		name         string
		q            float64
		h            Histogram
		lower, upper float64
		ok           bool
	}{
		{"median", 0.5, h, 0.1, 0.5, true},
		{"rank on the first edge's count", 0.25, h, 0, 0.1, true},
		{"just past it", 0.2501, h, 0.1, 0.5, true},
		{"q=1 is the maximum", 1, h, 0.5, 1, true},
		{"q=0 is the minimum", 0, h, 0, 0.1, true},
		{"all in +Inf", 0.5, hist(50, edges, 0, 0, 0, 5), 1, inf, true},
		{"one observation", 0.99, hist(0.2, edges, 0, 1, 1, 1), 0.1, 0.5, true},
		{"float noise in q·n: 0.07·100 is rank 7", 0.07, hist(0, []float64{1, 2, inf}, 7, 100, 100), 0, 1, true},
		{"first edge not positive", 0.5, hist(0, []float64{-1, 0, inf}, 1, 2, 2), math.Inf(-1), -1, true},
		{"non-monotonic counts repaired", 0.5, hist(0, edges, 10, 8, 20, 20), 0, 0.1, true},
		{"empty", 0.5, hist(0, edges, 0, 0, 0, 0), 0, 0, false},
		{"no +Inf bucket", 0.5, hist(0, []float64{1, 2}, 1, 2), 0, 0, false},
		{"mismatched lengths", 0.5, hist(0, edges, 1, 2), 0, 0, false},
		{"q above 1", 1.1, h, 0, 0, false},
		{"q below 0", -0.1, h, 0, 0, false},
		{"q NaN", math.NaN(), h, 0, 0, false},
		{"infinite count", 0.5, hist(0, edges, 1, inf, inf, inf), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, up, ok := QuantileBracket(tt.q, tt.h)
			if ok != tt.ok || (ok && (lo != tt.lower || up != tt.upper)) {
				t.Errorf("QuantileBracket(%v) = (%v, %v, %v), want (%v, %v, %v)", tt.q, lo, up, ok, tt.lower, tt.upper, tt.ok)
			}
		})
	}
}

// Expected values worked by hand from promql/quantile.go's BucketQuantile
// (prometheus v0.316.0).
func TestPrometheusQuantile(t *testing.T) {
	edges := []float64{0.1, 0.5, 1, inf}
	h := hist(14, edges, 10, 30, 40, 40)
	e2e := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680, inf}
	allFirst := hist(5, e2e, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	tests := []struct {
		name string
		q    float64
		h    Histogram
		want float64
	}{
		{"interpolates in bucket", 0.5, h, 0.3},
		{"first bucket from 0", 0.05, h, 0.02},
		{"p99", 0.99, h, 0.98},
		{"q=1", 1, h, 1},
		{"q=0", 0, h, 0},
		{"q=0 with an empty first bucket is 0/0", 0, hist(0, []float64{0.1, 0.5, inf}, 0, 5, 5), math.NaN()},
		{"+Inf bucket gives last finite edge", 0.9, hist(0, edges, 1, 2, 3, 10), 1},
		{"only +Inf observations", 0.5, hist(0, []float64{1, inf}, 0, 4), 1},
		{"non-monotonic repaired", 0.5, hist(0, edges, 10, 8, 20, 20), 0.1},
		{"first edge not positive returns it", 0.1, hist(0, []float64{-1, 0, 1, inf}, 2, 4, 6, 8), -1},
		{"negative buckets interpolate", 0.5, hist(0, []float64{-1, 0, 1, inf}, 2, 4, 6, 8), 0},
		{"small p99 in vLLM's first e2e bucket", 0.99, allFirst, 0.297},
		{"rank 0.75", 0.25, hist(0, []float64{0.5, 1, inf}, 1, 3, 3), 0.375},
		{"rank 2.25", 0.75, hist(0, []float64{0.5, 1, inf}, 1, 3, 3), 0.8125},
		{"float noise ignored", 0.5, hist(0, edges, 1, 1+1e-14, 2, 2), 0.1},
		{"q<0", -1, h, math.Inf(-1)},
		{"q>1", 2, h, inf},
		{"q NaN", math.NaN(), h, math.NaN()},
		{"one bucket", 0.5, hist(0, []float64{inf}, 3), math.NaN()},
		{"empty", 0.5, hist(0, edges, 0, 0, 0, 0), math.NaN()},
		{"invalid", 0.5, hist(0, []float64{1, 2}, 1, 2), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrometheusQuantile(tt.q, tt.h); !near(got, tt.want) {
				t.Errorf("PrometheusQuantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestEstimatorQuantile(t *testing.T) {
	edges := []float64{0.1, 0.5, 1, inf}
	nan := math.NaN()
	tests := []struct {
		name string
		e    Estimator
		q    float64
		h    Histogram
		want Bounded
	}{
		// rank 20: share (20−10−½)/20 = 0.475 of (0.1, 0.5].
		{"linear", Linear, 0.5, hist(14, edges, 10, 30, 40, 40), Bounded{0.29, 0.1, 0.5}},
		{"loglinear", LogLinear, 0.5, hist(14, edges, 10, 30, 40, 40), Bounded{0.1 * math.Pow(5, 0.475), 0.1, 0.5}},
		// Sum 14 is the mean of uniform buckets: Σn·l = 7, Σn·w = 14, t = ½, θ = 0.
		{"meanfit at the uniform mean is linear", MeanFit, 0.5, hist(14, edges, 10, 30, 40, 40), Bounded{0.29, 0.1, 0.5}},
		// One bucket (0, 1] with mean 0.5: no tilt, rank 1 of 2 at share ¼.
		{"density, one bucket, centred mean", Density, 0.5, hist(1, []float64{1, inf}, 2, 2), Bounded{0.25, 0, 1}},
		{"+Inf bucket is +Inf", Density, 0.99, hist(30, edges, 1, 2, 3, 10), Bounded{inf, 1, inf}},
		{"empty is NaN", Density, 0.5, hist(0, edges, 0, 0, 0, 0), Bounded{nan, nan, nan}},
		{"bad q is NaN", Density, 2, hist(14, edges, 10, 30, 40, 40), Bounded{nan, nan, nan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Quantile(tt.q, tt.h); !nearB(got, tt.want) {
				t.Errorf("%v.Quantile(%v) = %+v, want %+v", tt.e, tt.q, got, tt.want)
			}
		})
	}
}

// With every observation in vLLM's first e2e bucket (0, 0.3], Prometheus says
// 0.297 for any small p99; the mean (known exactly here) pulls our estimate
// down towards the truth.
func TestEstimateQuantileUsesTheMean(t *testing.T) {
	edges := []float64{0.3, 0.5, inf}
	h := hist(100*0.05, edges, 100, 100, 100) // mean 0.05
	got := EstimateQuantile(0.99, h)
	if got.Lower != 0 || got.Upper != 0.3 {
		t.Fatalf("bracket = (%v, %v], want (0, 0.3]", got.Lower, got.Upper)
	}
	// Truncated exponential on [0, 0.3] with mean 0.05: p99 ≈ 0.05·ln(100) ≈ 0.23.
	if got.Estimate > 0.25 || got.Estimate < 0.2 {
		t.Errorf("p99 estimate = %v, want about 0.23 (Prometheus: %v)", got.Estimate, PrometheusQuantile(0.99, h))
	}
	if m := tiltMean(0); m != 0.5 {
		t.Errorf("tiltMean(0) = %v, want 0.5", m)
	}
}

func TestExactQuantile(t *testing.T) {
	s := []float64{0.2, 0.5, 0.7}
	tests := []struct {
		q    float64
		s    []float64
		want float64
	}{
		{0.5, s, 0.5}, {0.99, s, 0.7}, {0, s, 0.2}, {1, s, 0.7}, {1.0 / 3, s, 0.2},
		{0.07, make100(), 7}, {0.5, nil, math.NaN()}, {-0.1, s, math.NaN()}, {math.NaN(), s, math.NaN()},
	}
	for _, tt := range tests {
		if got := ExactQuantile(tt.q, tt.s); !near(got, tt.want) {
			t.Errorf("ExactQuantile(%v, %v) = %v, want %v", tt.q, tt.s, got, tt.want)
		}
	}
}

// make100 is 1, 2, ..., 100.
func make100() []float64 {
	s := make([]float64, 100)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

// Expected values are numpy.percentile(s, 100·q) (method "linear").
func TestLinearPercentile(t *testing.T) {
	s := []float64{0.2, 0.5, 0.7}
	tests := []struct {
		q    float64
		s    []float64
		want float64
	}{
		{0.5, s, 0.5}, {0.99, s, 0.696}, {0.25, s, 0.35}, {0, s, 0.2}, {1, s, 0.7},
		{0.5, []float64{4}, 4}, {0.9, make100(), 90.1}, {0.5, nil, math.NaN()}, {1.5, s, math.NaN()},
	}
	for _, tt := range tests {
		if got := LinearPercentile(tt.q, tt.s); !near(got, tt.want) {
			t.Errorf("LinearPercentile(%v, %v) = %v, want %v", tt.q, tt.s, got, tt.want)
		}
	}
}

// QuantileBracket returns the bucket that certainly holds the q-quantile of the
// observations in h, by the nearest-rank convention: the rank is
// r = ceil(q·n) (1-based, at least 1), and the r-th smallest observation lies
// in the first bucket whose cumulative count reaches r, so it is in
// (lower, upper] with lower the previous edge.
//
// It is the bracket of placeQuantile (which proves it), alone. Conventions: the first bucket's lower edge is 0 (latencies are never
// negative; -Inf if the first edge is not positive); a rank in the +Inf bucket
// has upper = +Inf. q = 0 is read as the minimum (rank 1) and q = 1 as the
// maximum (rank n). ok is false when q is NaN or outside [0, 1], when h is not
// valid, and when h holds no observation.
func QuantileBracket(q float64, h Histogram) (lower, upper float64, ok bool) {
	b, ok := prepare(h)
	if !ok || !(q >= 0 && q <= 1) || b.n <= 0 {
		return 0, 0, false
	}
	i := b.bucketOfRank(rankOf(q, b.n))
	return b.lower[i], b.upper[i], true
}

// EstimateQuantile is the default quantile estimate: the bracket of
// QuantileBracket with an estimate inside it from DefaultEstimator. When the
// rank falls in the +Inf bucket the estimate is +Inf and Lower the last finite
// edge: the histogram cannot say more, and a finite number would pretend.
// When QuantileBracket is not ok all three fields are NaN.
func EstimateQuantile(q float64, h Histogram) Bounded {
	return DefaultEstimator.Quantile(q, h)
}

// Quantile estimates the nearest-rank q-quantile of h within the bracket of
// QuantileBracket: the rank's share of its bucket, (r − cum(lower) − ½)/count
// (the centre of the rank's slot, so that n equal shares tile the bucket), is
// mapped through the estimator's within-bucket distribution. A rank in the
// +Inf bucket gives Estimate = Upper = +Inf, Lower the last finite edge. All
// fields are NaN when the bracket is not defined.
func (e Estimator) Quantile(q float64, h Histogram) Bounded {
	return e.quantilesOf(h).quantile(q)
}

// fittedHistogram is one histogram prepared once for several quantiles: the
// estimator's fit (a bisection over every bucket, the costly part) is made at
// most once and shared, which gives the same values as fitting per quantile.
type fittedHistogram struct {
	e      Estimator
	b      buckets
	ok     bool
	s      shape
	fitted bool
}

// quantilesOf prepares h for quantile estimates.
func (e Estimator) quantilesOf(h Histogram) *fittedHistogram {
	b, ok := prepare(h)
	return &fittedHistogram{e: e, b: b, ok: ok}
}

// quantile is Estimator.Quantile of the prepared histogram.
func (fh *fittedHistogram) quantile(q float64) Bounded {
	res, i, f := placeQuantile(fh.b, fh.ok, q)
	if i < 0 {
		return res
	}
	if !fh.fitted {
		fh.s, fh.fitted = fh.e.fit(fh.b), true
	}
	res.Estimate = fh.s.at(fh.b, i, f)
	return res
}
