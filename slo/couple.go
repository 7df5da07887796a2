package slo

import "math"

// CoupledInterval is one scrape interval of a window as the window-wide
// coupling reads it: a source of first tokens and, when Counted, a finish
// interval whose joint is summed.
type CoupledInterval struct {
	// Bad and Good are the most TTFT-bad and TTFT-good first tokens of the
	// interval (Source.Bad and Source.Good).
	Bad, Good float64
	// Counted says the interval's finishers are in the window's sums.
	Counted bool
	// N is its finishers; FinishLo and FinishHi bound those meeting every
	// finish-observed objective, TTFTLo and TTFTHi the TTFT-good among them
	// (IntervalResult.FinishGood and TTFTGood).
	N, FinishLo, FinishHi, TTFTLo, TTFTHi float64
	// From is the index, in the slice given to CoupleWindow, of the earliest
	// interval that can hold the first token of one of its finishers; -1
	// when they can reach before the slice's first interval.
	From int
}

// CoupleWindow bounds the requests of a window's counted intervals that met
// every objective, sharing each interval's first tokens among all the
// finish intervals that can draw on them. The per-interval bounds let every
// finish interval claim the same TTFT-bad (or TTFT-good) first tokens; the
// true assignment gives each first token to one finisher at most. ivs[:pre]
// are intervals before the window, read only as sources; ivs[pre:] are the
// window's. badAtStart and goodAtStart bound the TTFT-bad and TTFT-good
// requests past their first token in flight at the window's start.
//
// Proof. For a counted interval j with n_j finishers, G_j of them TTFT-good
// and F_j meeting the finish-observed objectives, Fréchet gives joint_j in
// [max(0, F_j − B_j), min(G_j, F_j)] with B_j = n_j − G_j the TTFT-bad ones.
// So Σ joint_j >= Σ FinishLo_j − Σ min(B_j, FinishLo_j) and Σ joint_j <= Σ
// min(G_j, FinishHi_j). Each TTFT-bad finisher of j had its first token in
// one interval i in [From_j, j] (or before ivs[0] when From_j = −1), and
// distinct finishers are distinct first tokens. Every first token before the
// window that a window finisher drew was in flight at the window's start, so
// those number at most badAtStart together. The true B_j are therefore a
// feasible flow of two transportation problems, each keeping part of these
// facts: in the first, source i gives at most Bad_i (those of ivs[:pre]
// included) and everything before ivs[0] at most badAtStart; in the second,
// everything before the window gives at most badAtStart as one source. In
// both, sink j takes at most min(n_j − TTFTLo_j, FinishLo_j) and only from
// [From_j, j]. Σ min(B_j, FinishLo_j) is at most the lesser optimum, which
// bounds the lower side; the same with Good, goodAtStart and min(TTFTHi_j,
// FinishHi_j) bounds the upper side.
// Σ min(B_j, FinishLo_j) is at most that problem's optimum, which bounds the
// lower side; the same with Good, goodAtStart and min(TTFTHi_j, FinishHi_j)
// bounds the upper side. Each sink draws from consecutive sources, so the
// problem is a b-matching in a convex bipartite graph, which maxFlowConvex
// solves exactly. Dropping constraints (the in-flight caps between scrapes)
// only raises the optimum, so the bounds stay valid.
func CoupleWindow(ivs []CoupledInterval, pre int, badAtStart, goodAtStart float64) Bounded {
	finLo, finHi := 0.0, 0.0
	buf := make([]float64, 3*len(ivs))
	badCaps, goodCaps, left := buf[:len(ivs)], buf[len(ivs):2*len(ivs)], buf[2*len(ivs):]
	for j, iv := range ivs {
		if j < pre || !iv.Counted || !(iv.N > 0) {
			continue
		}
		finLo += math.Max(iv.FinishLo, 0)
		finHi += math.Max(iv.FinishHi, 0)
		badCaps[j] = math.Max(0, math.Min(iv.N-iv.TTFTLo, iv.FinishLo))
		goodCaps[j] = math.Max(0, math.Min(iv.TTFTHi, iv.FinishHi))
	}
	badOf := func(iv CoupledInterval) float64 { return iv.Bad }
	goodOf := func(iv CoupledInterval) float64 { return iv.Good }
	bad := math.Min(maxFlowConvex(ivs, 0, badCaps, left, badAtStart, badOf), maxFlowConvex(ivs, pre, badCaps, left, badAtStart, badOf))
	good := math.Min(maxFlowConvex(ivs, 0, goodCaps, left, goodAtStart, goodOf), maxFlowConvex(ivs, pre, goodCaps, left, goodAtStart, goodOf))
	res := Bounded{Lower: math.Max(0, finLo-bad), Upper: math.Min(good, finHi)}
	res.Upper = math.Max(res.Lower, res.Upper) // only inconsistent inputs cross them
	return res
}

// maxFlowConvex is the most the sinks ivs[first:] (caps[j] each, drawing
// from sources From_j..j, where a From_j before first stands for the
// window's start holding atStart) can take from the sources ivs[first:]
// (supply(iv) each); left is scratch of len(ivs). Glover's rule solves it
// exactly: give each source, in time order, to the open sinks that can draw
// on it, the one whose range ends first first (here the earliest sink, as
// each range ends at its own interval); an exchange argument shows some
// optimum agrees with every choice.
func maxFlowConvex(ivs []CoupledInterval, first int, caps, left []float64, atStart float64, supply func(CoupledInterval) float64) float64 {
	copy(left, caps)
	total := 0.0
	give := func(i int, s float64) {
		if math.IsNaN(s) || s <= 0 {
			return
		}
		for j := max(i, first); j < len(ivs) && s > 0; j++ {
			if left[j] <= 0 || max(ivs[j].From, first-1) > i {
				continue
			}
			take := math.Min(s, left[j])
			left[j] -= take
			s -= take
			total += take
		}
	}
	give(first-1, atStart)
	for i := first; i < len(ivs); i++ {
		give(i, supply(ivs[i]))
	}
	return total
}
