package slo

import "math"

// prometheusCountsIn is h's counts repaired as histogram_quantile repairs
// them (see prometheusQuantileOf), appended to scratch[:0] (in its memory
// when it has room); nil when histogram_quantile gives NaN for every q in
// [0, 1] (an invalid histogram, fewer than two buckets): one repair serves
// every quantile of h.
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

// prometheusQuantileOf is Prometheus's histogram_quantile on a classic
// histogram, for q in [0, 1] over the counts prometheusCountsIn repaired,
// reproduced exactly so that our dashboards can show what a Prometheus query
// would say next to our estimate: rank = q·n (not rounded); counts repaired
// to be monotonic (differences below a relative 1e-12 are float noise and
// ignored); linear interpolation within the bucket that holds the rank, the
// first bucket interpolating from 0 when its upper edge is positive (and
// returning that edge otherwise); a rank in the +Inf bucket returns the last
// finite edge. Nil counts (an invalid histogram, fewer than two buckets) or
// no observations give NaN.
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

// ExactQuantile is the nearest-rank q-quantile of sorted (ascending) samples:
// the ceil(q·n)-th smallest, at least the first (q = 0 is the minimum). It is
// the convention of the histogram brackets (placeQuantile), applied to the samples themselves. NaN
// for no samples or q outside [0, 1].
func ExactQuantile(q float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	return sorted[int(rankOf(q, float64(n)))-1]
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
