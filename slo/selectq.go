package slo

import (
	"math"
	"math/bits"
	"slices"
)

// exactQuantiles returns the nearest-rank quantile (ExactQuantile) of values
// for each q of qs, in qs's order, reordering values in place instead of
// sorting them: each rank is found by selection among the values above the
// previous one, so a handful of quantiles of n values cost O(n) comparisons
// on average, not a sort's O(n log n). The values must be finite. A q
// outside [0, 1] gives NaN, as ExactQuantile does.
func exactQuantiles(values []float64, qs []float64) []float64 {
	out := make([]float64, len(qs))
	type rank struct{ k, at int }
	var ranks []rank
	for i, q := range qs {
		if len(values) == 0 || !(q >= 0 && q <= 1) {
			out[i] = math.NaN()
			continue
		}
		ranks = append(ranks, rank{k: int(rankOf(q, float64(len(values)))) - 1, at: i})
	}
	slices.SortFunc(ranks, func(a, b rank) int { return a.k - b.k })
	from := 0 // values[:from] hold the smallest, in place
	for _, r := range ranks {
		if r.k >= from {
			nthElement(values[from:], r.k-from)
			from = r.k + 1
		}
		out[r.at] = values[r.k]
	}
	return out
}

// nthElement reorders v so that v[k] holds the value a sort would put
// there, with no larger value before it and no smaller one after it.
//
// It is introselect: quickselect with a median-of-three pivot and a
// three-way partition (so that runs of equal values, common in latencies
// rounded by a sender, end it at once), falling back to a sort of what is
// left after 2·log₂(n) partitions, so that values crafted against the pivot
// (spans are outside input) cost at most a sort, never quadratic time.
func nthElement(v []float64, k int) {
	lo, hi := 0, len(v)
	budget := 2 * bits.Len(uint(len(v)))
	for hi-lo > 16 {
		if budget == 0 {
			break
		}
		budget--
		p := median3(v[lo], v[lo+(hi-lo)/2], v[hi-1])
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := v[i]; {
			case x < p:
				v[lt], v[i] = x, v[lt]
				lt++
				i++
			case x > p:
				gt--
				v[i], v[gt] = v[gt], x
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return // v[lt:gt] all equal the pivot
		}
	}
	slices.Sort(v[lo:hi])
}

func median3(a, b, c float64) float64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	if a > b {
		return a
	}
	return b
}
