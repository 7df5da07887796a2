package slo

import "math"

// fitTerm is one finite bucket with observations in a mean fit: its count,
// lower edge, width and base tilt, and the last tilt x its tilt mean m was
// computed at (the bisection's last steps move δ by less than x's precision,
// and an equal x gives the same m without an expm1).
type fitTerm struct {
	c, l, w, theta float64
	x, m           float64
}

// meanFit is the bisection of shiftToMean made cheap without changing one
// bit of its result. The bisection's outcome is the sequence of its 64
// comparisons "implied(mid) > sum", where implied is the sum computed in
// floating point, term by term in bucket order, exactly as written in
// implied. meanFit evaluates implied only at the mids whose comparison is not
// already certain, and a comparison is certain on either side of a bracket
// [above, below] around the crossing, proved as follows.
//
// Let I(δ) be implied(δ) as computed and T(δ) the same sum in exact
// arithmetic over the same computed tilts x_j = clampTilt(θ_j + δ) (a float
// sum, then a clamp: both non-decreasing in δ), with the exact tilt mean
// τ(x) = 1/x − 1/(e^x − 1), which strictly decreases. So T does not increase
// in δ. If |I − T| ≤ E wherever it is used, then for every δ ≤ a,
// I(δ) ≥ T(δ) − E ≥ T(a) − E ≥ I(a) − 2E: once one evaluation gives
// I(a) − 2E > sum, every comparison at δ ≤ a is true. Likewise
// I(b) + 2E ≤ sum makes every comparison at δ ≥ b false. Outside the bracket
// nothing is evaluated; inside it, everything is.
//
// The bound E, with u = 2⁻⁵³ (one rounding), K the number of terms:
//   - tiltMean at |x| < 1e-4 is ½ − x/12 where τ's series goes on with
//     x³/720: at most 1.4e-15 plus two roundings, under 2.2e-15. At
//     |x| ≥ 1e-4 it is 1/x − 1/expm1(x), Go's expm1 within 1 ulp (≤ 2u
//     relative; see math/expm1.go): the two quotients and the difference
//     err by at most u/|x| + 3u·|1/(e^x − 1)| + u, and |1/(e^x − 1)| ≤
//     1/|x| + 1 (as 1 − e^−y ≥ y/(1+y)), so the error is under
//     5u·(1/|x| + 1), at most 4.5e-12 over the whole range. tiltError
//     doubles both (an expm1 of 2 ulp would still be covered).
//   - a term c·(l + w·m), with m ∈ (0, 1), errs by at most c·w times the
//     tilt mean's error plus 3.1u·c·(|l| + w) from its three roundings;
//   - the sum of K terms adds at most 1.01·(K−1)·u·Σ|terms|.
//
// errorBound sums these, twice over: the factor of two also covers the
// roundings of the bound itself and of the comparison v − 2E > sum, each
// under u·|v|, far below E.
//
// The bracket is found after the first locateAfter steps of the bisection
// (each evaluated, as they must be): a regula falsi from the bisection's
// bracket finds the crossing r, whose every evaluation narrows the bracket
// where its margin allows; then implied is probed at r ± 4E/slope, with E
// over every tilt, and again with E over the tilts the first bracket spans
// (the tilt mean's error falls with 1/|x|), which covers the comparisons
// inside it. A sum, edge or count that is not finite leaves the bracket
// empty: every step is then evaluated, as before. The regula falsi stops
// after maxFalsi evaluations, so a fit evaluates implied at most
// 2 + maxFalsi + 4 times more than the plain bisection; over the shapes of
// TestMeanFitIsThePlainBisection it evaluates it 28 times instead of 64,
// and computes a tilt mean 25 times per bucket instead of 64.
type meanFit struct {
	terms []fitTerm
	sum   float64
	// Every δ ≤ above implies more than sum (I(δ) > sum), every δ ≥ below
	// at most sum; iAbove and iBelow are I there.
	above, below   float64
	iAbove, iBelow float64
	// evaluations counts the sums evaluated, tiltMeans the tilt means (each
	// an expm1) they computed; the tests report both.
	evaluations, tiltMeans int
}

// newMeanFit gathers the finite buckets with observations into terms (an
// empty slice with room for them saves an allocation).
func newMeanFit(b buckets, theta []float64, sum float64, terms []fitTerm) meanFit {
	last := len(b.upper) - 1
	for i := 0; i < last; i++ {
		if c := b.count[i]; c > 0 {
			terms = append(terms, fitTerm{c: c, l: b.lower[i], w: b.upper[i] - b.lower[i], theta: theta[i], x: math.NaN()})
		}
	}
	return meanFit{terms: terms, sum: sum, above: math.Inf(-1), below: math.Inf(1)}
}

// implied is the finite buckets' sum implied by shifting every tilt by
// delta. The expression and its order are the plain bisection's: its value
// is the one the comparison of every step is made on (a tilt mean kept from
// the same x is the same number).
func (f *meanFit) implied(delta float64) float64 {
	f.evaluations++
	v := 0.0
	for i := range f.terms {
		t := &f.terms[i]
		if x := clampTilt(t.theta + delta); math.Float64bits(x) != math.Float64bits(t.x) {
			t.x, t.m = x, tiltMean(x)
			f.tiltMeans++
		}
		v += t.c * (t.l + t.w*t.m)
	}
	return v
}

// locateAfter is how many bisection steps shift takes, every one
// evaluated, before it locates the bracket: five narrow [−2·maxTilt,
// 2·maxTilt] to 7.5, where the regula falsi converges in a few
// evaluations (fewer steps leave it a flatter start, more are steps the
// bracket would have spared). maxFalsi caps the regula falsi.
const (
	locateAfter = 5
	maxFalsi    = 20
)

// shift is the δ of shiftToMean: the 64 steps of the bisection over
// [−2·maxTilt, 2·maxTilt], with the bracket located after locateAfter.
func (f *meanFit) shift() float64 {
	lo, hi := -2.0*maxTilt, 2.0*maxTilt
	iLo, iHi := math.NaN(), math.NaN() // implied at lo and hi, NaN until evaluated
	for step := range 64 {
		if step == locateAfter {
			f.locate(lo, hi, iLo, iHi)
		}
		mid := (lo + hi) / 2
		if exceeds, v := f.exceeds(mid); exceeds {
			lo, iLo = mid, v
		} else {
			hi, iHi = mid, v
		}
	}
	return (lo + hi) / 2
}

// exceeds is the comparison of a bisection step, implied(delta) > sum,
// evaluated only where the bracket leaves it open; v is the implied sum
// evaluated, NaN when it was not.
func (f *meanFit) exceeds(delta float64) (exceeds bool, v float64) {
	switch {
	case delta <= f.above:
		return true, math.NaN()
	case delta >= f.below:
		return false, math.NaN()
	}
	v = f.implied(delta)
	return v > f.sum, v
}

// note narrows the bracket with one evaluation v = I(delta), given that
// |I − T| ≤ e over every δ it would newly cover.
func (f *meanFit) note(delta, v, e float64) {
	if v-2*e > f.sum && delta > f.above {
		f.above, f.iAbove = delta, v
	}
	if v+2*e <= f.sum && delta < f.below {
		f.below, f.iBelow = delta, v
	}
}

// locate brackets the crossing of implied with sum inside the bisection's
// bracket [lo, hi] (see meanFit), given implied there (NaN where not yet
// evaluated): a regula falsi (the Illinois variant) whose every evaluation
// narrows the bracket where its margin allows, then the narrower round.
func (f *meanFit) locate(lo, hi, iLo, iHi float64) {
	e := f.errorBound(math.Inf(-1), math.Inf(1))
	if !finite(f.sum) || !finite(e) {
		return
	}
	if math.IsNaN(iLo) {
		iLo = f.implied(lo)
	}
	if math.IsNaN(iHi) {
		iHi = f.implied(hi)
	}
	f.note(lo, iLo, e)
	f.note(hi, iHi, e)
	a, b, ga, gb := lo, hi, iLo-f.sum, iHi-f.sum
	if !(ga > 0 && gb <= 0) {
		return // the crossing is at an end: the notes say all there is
	}
	a, b, ga, gb = f.falsi(a, b, ga, gb, e)
	// Two brackets around the crossing r, about four times the error wide
	// on each side: with the error over every tilt, then with the error over
	// the tilts the first one spans.
	r := a + ga*(b-a)/(ga-gb)
	slope := (ga - gb) / (b - a)
	if !(slope > 0) || !(r >= a && r <= b) {
		return
	}
	f.probe(r, slope, e)
	if lo, hi := f.above, f.below; !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		if e2 := f.errorBound(lo, hi); e2 < e {
			f.probe(r, slope, e2)
		}
	}
}

// falsi narrows [a, b], where implied − sum is ga > 0 and gb ≤ 0, around the
// crossing by the Illinois variant of the regula falsi (the end kept twice
// in a row has its value halved, so both ends move), noting every
// evaluation with the error e; it stops after maxFalsi evaluations, at a
// relative width of 1e-12, or once the sum is within e of the target.
func (f *meanFit) falsi(a, b, ga, gb, e float64) (float64, float64, float64, float64) {
	for side, i := 0, 0; i < maxFalsi && b-a > 1e-12*(1+math.Abs(a)); i++ {
		c := b - gb*(b-a)/(gb-ga)
		if !(c > a && c < b) {
			c = (a + b) / 2
		}
		v := f.implied(c)
		f.note(c, v, e)
		gc := v - f.sum
		if gc > 0 {
			a, ga = c, gc
			if side == 1 {
				gb /= 2
			}
			side = 1
		} else {
			b, gb = c, gc
			if side == -1 {
				ga /= 2
			}
			side = -1
		}
		if math.Abs(gc) <= e {
			break // as close as the error lets the sum tell
		}
	}
	return a, b, ga, gb
}

// probe evaluates the implied sum either side of the estimated crossing r,
// 4e/slope away, and narrows the bracket where the margin allows; e bounds
// the error over every δ between the bracket and the probes.
func (f *meanFit) probe(r, slope, e float64) {
	eta := 4 * e / slope
	if a := r - eta; a > f.above && a < f.below {
		f.note(a, f.implied(a), e)
	}
	if b := r + eta; b > f.above && b < f.below {
		f.note(b, f.implied(b), e)
	}
}

// errorBound is E of meanFit: a bound on |I(δ) − T(δ)| for every δ in
// [lo, hi].
func (f *meanFit) errorBound(lo, hi float64) float64 {
	const u = 0x1p-53
	tilt, round := 0.0, 0.0
	for _, t := range f.terms {
		x0, x1 := clampTilt(t.theta+lo), clampTilt(t.theta+hi)
		tilt += t.c * t.w * tiltError(x0, x1)
		round += t.c * (math.Abs(t.l) + t.w)
	}
	k := float64(len(f.terms))
	return 2 * (tilt + (1.01*(k-1)+3.1)*u*round)
}

// tiltError bounds the error of tiltMean over [x0, x1], twice the bound of
// meanFit's proof.
func tiltError(x0, x1 float64) float64 {
	const u = 0x1p-53
	m := math.Min(math.Abs(x0), math.Abs(x1))
	if x0 <= 0 && x1 >= 0 {
		m = 0
	}
	if m < 1e-4 {
		return 2 * 5 * u * (1e4 + 1) // the worst over [−maxTilt, maxTilt]
	}
	return 2 * 5 * u * (1/m + 1)
}
