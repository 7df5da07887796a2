package slo

import "math"

// PreemptedShare is the share of the requests that finished in a window
// that the engine preempted at least once, with bounds, from h, the
// window's increase of vLLM's request_num_preemptions (one observation per
// finished request, at its finish: how often it was preempted, a whole
// number, 0 for most). n is the number of finished requests h observed. It
// is false when h is not valid, observed nothing, or contradicts
// whole-number observations (cumulative counts that fall or are not whole,
// a count in a bucket that holds no whole number, a sum its buckets cannot
// give).
//
// vLLM's edges are 1, 2, 3, 4, 5, 10, 20, so its first bucket (le="1")
// holds the never-preempted requests together with the once-preempted
// ones. The buckets alone then only give the share preempted more than
// once; the sum separates the two.
//
// Proof. Let bucket i hold n_i observations (the difference of the
// cumulative counts), its edges (e_{i-1}, e_i], e_{-1} = -Inf. A whole
// number v >= 0 in bucket i lies in [lo_i, hi_i], lo_i = max(0,
// floor(e_{i-1})+1), hi_i = floor(e_i) (+Inf for the +Inf bucket). Let z be
// the first bucket with hi_z >= 0; a bucket before z, or any bucket with
// hi_i < lo_i, holds no whole number, and a count there is a contradiction.
// Every bucket above z has lo_i >= hi_z + 1 >= 1, so its observations were
// all preempted: A = N - cum_z of them, exactly. Of the n_z observations in
// z, k were preempted (each in [1, hi_z]) and n_z - k were not (0). With S
// the sum and S_r the sum of the buckets above z, S_r lies in [L, U], L =
// Σ_{i>z} n_i·lo_i and U = Σ_{i>z} n_i·hi_i, so the sum of z, S - S_r, lies
// in [S - U, S - L]. It is at least k (each preempted one adds at least 1)
// and at most k·hi_z, hence
//
//	max(0, ceil((S - U) / hi_z)) <= k <= min(n_z, floor(S - L)),
//
// (k = 0 when hi_z = 0: that bucket holds only zeros), and the preempted
// requests number A + k. Bounds that cross contradict whole-number
// observations. On vLLM's layout, while no request of the window was
// preempted more than five times, every bucket above the first holds one
// whole number (lo_i = hi_i), so L = U and k = S - L: the share is exact. A
// request preempted 6 to 10 times widens k's range by up to 4, 11 to 20 by
// 9, and one above 20 (U = +Inf) leaves only the lower bound A + max(0,
// ...) = the share preempted more than once. The Estimate is the midpoint.
//
// vLLM's num_preemptions_total cannot tighten these bounds: it counts
// preemption events when they happen, of every request (those still
// running at the window's end, those whose clients left and never reach
// the histogram), while the histogram counts at each finish the
// preemptions of that request's whole life, some before the window. A
// request preempted twice before the window and finishing in it adds 2 to
// S and nothing to the counter's increase; one preempted in the window and
// still running adds to the counter only. Neither bounds the other.
func PreemptedShare(h Histogram) (share Bounded, n float64, ok bool) {
	if !h.Valid() {
		return Bounded{}, 0, false
	}
	n = h.Total()
	if !(n > 0) || !finite(h.Sum) {
		return Bounded{}, 0, false
	}
	lo, hi, ok := preemptedCount(h)
	if !ok {
		return Bounded{}, 0, false
	}
	hi = math.Min(hi, n) // no more than every request: float rounding of huge counts aside, hi <= n already
	lo = math.Min(lo, hi)
	share = Bounded{Lower: lo / n, Upper: hi / n, Estimate: (lo + hi) / 2 / n}
	return share, n, true
}

// preemptedCount is PreemptedShare's bounds on the number of preempted
// requests (A + k in its proof).
func preemptedCount(h Histogram) (lo, hi float64, ok bool) {
	z := -1
	prevCum, prevEdge := 0.0, math.Inf(-1)
	var zCount, zHi, above, sumLo, sumHi float64
	for i, edge := range h.Edges {
		count := h.Counts[i] - prevCum
		prevCum = h.Counts[i]
		if count < 0 || count != math.Trunc(count) {
			return 0, 0, false // cumulative counts that fall, or a fraction of a request
		}
		bLo, bHi := math.Max(0, math.Floor(prevEdge)+1), math.Floor(edge)
		prevEdge = edge
		if z < 0 && bHi >= 0 {
			z, zCount, zHi = i, count, bHi
			continue
		}
		if count == 0 {
			continue
		}
		if z < 0 || bHi < bLo {
			return 0, 0, false // a count where no whole number fits
		}
		above += count
		sumLo += count * bLo
		sumHi += count * bHi // +Inf for the +Inf bucket: no upper bound
	}
	if z < 0 {
		return 0, 0, false
	}
	kHi := math.Min(zCount, math.Floor(h.Sum-sumLo))
	kLo := 0.0
	if zHi > 0 {
		kLo = math.Max(0, math.Ceil((h.Sum-sumHi)/zHi)) // 0 when sumHi is +Inf
	} else {
		kHi = math.Min(kHi, 0)
	}
	if kLo > kHi || kHi < 0 {
		return 0, 0, false
	}
	return above + kLo, above + kHi, true
}

// engineState fills the report's preempted share and waiting by reason
// from the window, where the server has them.
func (rep *WindowReport) engineState(w Window) {
	if w.PreemptionsPerRequest.Valid() {
		rep.Preempted, rep.PreemptedOf, rep.HasPreempted = PreemptedShare(w.PreemptionsPerRequest)
	}
	if w.WaitingCapacity.Known && w.WaitingDeferred.Known {
		rep.WaitingCapacity, rep.WaitingDeferred, rep.HasWaitingByReason = w.WaitingCapacity, w.WaitingDeferred, true
	}
}
