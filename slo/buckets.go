package slo

import "math"

// buckets is a Histogram prepared for the math: per-bucket lower and upper
// edges, repaired cumulative counts and the non-cumulative count of each bucket.
type buckets struct {
	lower, upper []float64 // lower[i] < upper[i]; lower[0] is 0 (or -Inf), upper[last] is +Inf
	cum          []float64 // cumulative counts, non-decreasing after repair
	count        []float64 // observations in bucket i alone
	n            float64   // total observations
	sum          float64   // Sum of the histogram; NaN when not finite
}

// prepare validates h and repairs its counts. Counts that decrease from one
// edge to the next (float noise, or a window spanning an inconsistent scrape)
// are raised to the running maximum, as Prometheus's histogram_quantile does,
// so a cumulative count never goes down. The first bucket's lower edge is 0
// when its upper edge is positive, since latencies and token counts are never
// negative; a first edge <= 0 leaves the lower edge unknown (-Inf). ok is false
// for invalid histograms and for histograms with non-finite counts.
func prepare(h Histogram) (buckets, bool) {
	return prepareIn(h, nil)
}

// scratchEdges is how many edges a caller's scratch array holds for
// prepareIn and the tilts of a fit: more than any vLLM histogram has (its
// longest, TTFT's, has 23 with +Inf), so an evaluation's histograms need no
// allocation there.
const scratchEdges = 32

// prepareIn is prepare with the four vectors in scratch when it has room for
// them (4·len(h.Edges)), allocated otherwise: a caller whose buckets do not
// outlive it keeps them on its stack. The values are prepare's, whichever
// memory holds them.
func prepareIn(h Histogram, scratch []float64) (buckets, bool) {
	if !h.Valid() {
		return buckets{}, false
	}
	k := len(h.Edges)
	all := scratch[:0]
	if cap(all) < 4*k {
		all = make([]float64, 4*k) // one allocation for the four vectors
	}
	all = all[:4*k]
	b := buckets{
		lower: all[:k:k],
		upper: all[k : 2*k : 2*k],
		cum:   all[2*k : 3*k : 3*k],
		count: all[3*k:],
		sum:   h.Sum,
	}
	if math.IsNaN(h.Sum) || math.IsInf(h.Sum, 0) {
		b.sum = math.NaN()
	}
	prev := 0.0
	for i, e := range h.Edges {
		c := h.Counts[i]
		if math.IsInf(c, 0) {
			return buckets{}, false
		}
		c = math.Max(c, prev)
		b.cum[i] = c
		b.count[i] = c - prev
		b.upper[i] = e
		if i == 0 {
			if e > 0 {
				b.lower[i] = 0
			} else {
				b.lower[i] = math.Inf(-1)
			}
		} else {
			b.lower[i] = h.Edges[i-1]
		}
		prev = c
	}
	b.n = prev
	return b, true
}

// observations is the number of observations prepare(h) counts (its n) and
// whether prepare accepts h, without building the buckets: what a caller
// that needs only the count asks.
func observations(h Histogram) (float64, bool) {
	if !h.Valid() {
		return 0, false
	}
	prev := 0.0
	for _, c := range h.Counts {
		if math.IsInf(c, 0) {
			return 0, false
		}
		prev = math.Max(c, prev)
	}
	return prev, true
}

// cumBelow is the cumulative count at the lower edge of bucket i.
func (b buckets) cumBelow(i int) float64 {
	if i == 0 {
		return 0
	}
	return b.cum[i-1]
}

// rankOf is the nearest rank ceil(q·n) for q in [0, 1], at least 1 and at
// most n. The product q·n is rounded down by a relative 1e-9 before the
// ceiling, so that binary noise cannot push a whole rank up (0.07·100 is
// 7.000000000000001 in float64, and must be rank 7, not 8).
func rankOf(q, n float64) float64 {
	r := math.Ceil(q * n * (1 - 1e-9))
	if r < 1 {
		r = 1
	}
	return math.Min(r, n)
}

// bucketOfRank returns the first bucket whose cumulative count reaches r.
func (b buckets) bucketOfRank(r float64) int {
	for i, c := range b.cum {
		if c >= r {
			return i
		}
	}
	return len(b.cum) - 1
}

// sameValue reports whether two thresholds or edges are equal up to a relative
// 1e-9, so that a configured 0.05 equals an le parsed from "0.05" or "5e-02",
// and 0.30-0.25 equals 0.05.
func sameValue(a, b float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// atMost reports whether x <= t, with t widened by a relative 1e-9 so that a
// value that is the threshold up to binary noise meets it.
func atMost(x, t float64) bool {
	return x <= t || sameValue(x, t)
}
