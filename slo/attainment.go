package slo

import "math"

// OnEdge reports whether threshold equals one of edges up to a relative 1e-9
// (see Estimator.GoodCount). A threshold on an edge gives exact attainment; the daemon
// warns once at start-up about thresholds that are not.
func OnEdge(threshold float64, edges []float64) bool {
	for _, e := range edges {
		if sameValue(threshold, e) {
			return true
		}
	}
	return false
}

// GoodCount is the number of observations in h that are <= threshold.
//
// A threshold equal to an edge (up to a relative 1e-9, so that a configured
// 0.05 equals an le parsed from "0.05") gives that edge's cumulative count,
// exactly. A threshold strictly inside a bucket (l, u] is bracketed by
// [cum(l), cum(u)]: every observation <= l is good and none above u is, which
// is all the histogram knows. The estimate adds the share of the bucket that
// the estimator places below the threshold. A threshold below 0 is met by no
// latency (exact 0), +Inf by all; a threshold in the +Inf bucket has upper
// bound n and, since nothing is known of that bucket's shape, the pessimistic
// estimate cum(last finite edge). An invalid or empty histogram gives Exact(0).
func (e Estimator) GoodCount(threshold float64, h Histogram) Bounded {
	var scratch [5 * scratchEdges]float64 // buckets and tilts, on the stack
	b, ok := prepareIn(h, scratch[:4*scratchEdges:4*scratchEdges])
	if !ok || b.n <= 0 || math.IsNaN(threshold) {
		return Exact(0)
	}
	if math.IsInf(threshold, 1) {
		return Exact(b.n)
	}
	for i, u := range b.upper {
		if sameValue(threshold, u) {
			return Exact(b.cum[i])
		}
		if threshold > u {
			continue
		}
		l := b.lower[i]
		if threshold < l || (l == 0 && threshold < 0) || (i > 0 && sameValue(threshold, l)) {
			// Below the first bucket's natural 0 (or on the previous edge,
			// already handled): nothing lies at or below it.
			return Exact(b.cumBelow(i))
		}
		lo, hi := b.cumBelow(i), b.cum[i]
		if lo == hi {
			return Exact(lo)
		}
		res := Bounded{Lower: lo, Upper: hi, Estimate: lo}
		if !math.IsInf(u, 1) {
			res.Estimate = lo + b.count[i]*e.fitIn(b, scratch[4*scratchEdges:]).share(b, i, threshold)
		}
		res.Estimate = clampInto(res.Estimate, res)
		return res
	}
	return Exact(b.n)
}
