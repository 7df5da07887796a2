package slo

import "math"

// The arithmetic of bounds. Every function here maps bounds that hold the
// truth to bounds that still hold it, and keeps Lower <= Estimate <= Upper.

// Divide divides every part of b by d. It divides rather than multiplying
// by 1/d, which can differ in the last bit: a share or a rate of an exact
// count then equals, bit for bit, the same ratio computed from the requests
// themselves (exact mode's calibration compares them without tolerance).
func Divide(b Bounded, d float64) Bounded {
	return Bounded{Estimate: b.Estimate / d, Lower: b.Lower / d, Upper: b.Upper / d}
}

// scale multiplies a Bounded by a non-negative factor.
func scale(b Bounded, f float64) Bounded {
	return Bounded{Estimate: b.Estimate * f, Lower: b.Lower * f, Upper: b.Upper * f}
}

// clampInto returns v limited to [b.Lower, b.Upper].
func clampInto(v float64, b Bounded) float64 {
	if math.IsNaN(v) {
		return b.Lower
	}
	return math.Min(math.Max(v, b.Lower), b.Upper)
}

// Intersect is the part two valid bounds of one quantity share: both hold
// the truth, so their intersection does. Disjoint bounds can only come from
// inconsistent inputs; b then keeps its own.
func (b Bounded) Intersect(o Bounded) Bounded {
	lo, hi := math.Max(b.Lower, o.Lower), math.Min(b.Upper, o.Upper)
	if lo > hi {
		return b
	}
	return Bounded{Lower: lo, Upper: hi, Estimate: math.Min(math.Max(b.Estimate, lo), hi)}
}

// NonNegative rounds away the float noise of differences of running sums of
// counts: bounds below 0 become 0 (a count is never negative, so the truth
// stays inside) and the estimate is kept between them.
func (b Bounded) NonNegative() Bounded {
	b.Lower = math.Max(0, b.Lower)
	b.Upper = math.Max(b.Lower, b.Upper)
	b.Estimate = math.Min(math.Max(b.Estimate, b.Lower), b.Upper)
	return b
}

// WholeCounts rounds the bounds of a count of whole things (requests,
// tokens) inward to whole numbers: the true count is whole, so a lower bound
// L allows ⌈L⌉ and an upper bound U allows ⌊U⌋. Differences of running sums
// carry float noise (261.00000000000003 for 261), and rounding it away keeps
// a ratio of exact counts equal, bit for bit, to the same ratio computed
// from the requests themselves. The 1e-6 slack only absorbs that noise: it
// is far below the smallest step of a count (1), so no whole value the
// bounds allowed is rounded out.
func (b Bounded) WholeCounts() Bounded {
	const noise = 1e-6
	b.Lower = math.Ceil(b.Lower - noise)
	b.Upper = math.Max(b.Lower, math.Floor(b.Upper+noise))
	b.Estimate = math.Min(math.Max(b.Estimate, b.Lower), b.Upper)
	return b
}
