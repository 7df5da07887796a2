package slo

import "math"

// QuantileBracket returns the bucket that certainly holds the q-quantile of the
// observations in h, by the nearest-rank convention: the rank is
// r = ceil(q·n) (1-based, at least 1), and the r-th smallest observation lies
// in the first bucket whose cumulative count reaches r, so it is in
// (lower, upper] with lower the previous edge.
//
// Proof sketch: cum(lower) < r <= cum(upper) means fewer than r observations
// are <= lower and at least r are <= upper.
//
// Conventions: the first bucket's lower edge is 0 (latencies are never
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

// PrometheusQuantile is Prometheus's histogram_quantile on a classic
// histogram, reproduced exactly so that our dashboards can show what a
// Prometheus query would say next to our estimate: rank = q·n (not rounded);
// counts repaired to be monotonic (differences below a relative 1e-12 are
// float noise and ignored); linear interpolation within the bucket that holds
// the rank, the first bucket interpolating from 0 when its upper edge is
// positive (and returning that edge otherwise); a rank in the +Inf bucket
// returns the last finite edge. q < 0 gives -Inf, q > 1 +Inf; NaN q, an
// invalid histogram, fewer than two buckets or no observations give NaN.
func PrometheusQuantile(q float64, h Histogram) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(+1)
	}
	return prometheusQuantileOf(q, h.Edges, prometheusCounts(h))
}

// prometheusCounts are h's counts repaired as PrometheusQuantile repairs
// them, nil when it gives NaN for every q in [0, 1] (an invalid histogram,
// fewer than two buckets); one repair serves every quantile of h.
func prometheusCounts(h Histogram) []float64 {
	return prometheusCountsIn(h, nil)
}

// prometheusCountsIn is prometheusCounts appending to scratch[:0] (in its
// memory when it has room): the same counts.
func prometheusCountsIn(h Histogram, scratch []float64) []float64 {
	if !h.Valid() || len(h.Edges) < 2 {
		return nil
	}
	counts := append(scratch[:0], h.Counts...)
	prev := counts[0]
	for i := 1; i < len(counts); i++ {
		cur := counts[i]
		if cur == prev {
			continue
		}
		if almostEqual(prev, cur, 1e-12) || cur < prev {
			counts[i] = prev
			continue
		}
		prev = cur
	}
	return counts
}

// prometheusQuantileOf is PrometheusQuantile for q in [0, 1] over the
// repaired counts of prometheusCounts.
func prometheusQuantileOf(q float64, edges, counts []float64) float64 {
	if counts == nil {
		return math.NaN()
	}
	n := counts[len(counts)-1]
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	b := len(counts) - 1
	for i := 0; i < len(counts)-1; i++ {
		if counts[i] >= rank {
			b = i
			break
		}
	}
	switch {
	case b == len(counts)-1:
		return edges[len(edges)-2]
	case b == 0 && edges[0] <= 0:
		return edges[0]
	}
	start, end, count := 0.0, edges[b], counts[b]
	if b > 0 {
		start = edges[b-1]
		count -= counts[b-1]
		rank -= counts[b-1]
	}
	return start + (end-start)*(rank/count)
}

// almostEqual is Prometheus's relative float comparison (util/almost): a and b
// differ by less than epsilon times their magnitude sum.
func almostEqual(a, b, epsilon float64) bool {
	const minNormal = 0x1p-1022
	if a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// EstimateQuantile is the default quantile estimate: the bracket of
// QuantileBracket with an estimate inside it from DefaultEstimator. When the
// rank falls in the +Inf bucket the estimate is +Inf and Lower the last finite
// edge: the histogram cannot say more, and a finite number would pretend.
// When QuantileBracket is not ok all three fields are NaN.
func EstimateQuantile(q float64, h Histogram) Bounded {
	return DefaultEstimator.Quantile(q, h)
}

// ExactQuantile is the nearest-rank q-quantile of sorted (ascending) samples:
// the ceil(q·n)-th smallest, at least the first (q = 0 is the minimum). It is
// the convention of QuantileBracket, applied to the samples themselves. NaN
// for no samples or q outside [0, 1].
func ExactQuantile(q float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	return sorted[int(rankOf(q, float64(n)))-1]
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
