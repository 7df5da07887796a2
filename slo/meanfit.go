package slo

import "math"

// fitTerm is one finite bucket with observations in a mean fit: its count,
// lower edge, width and base tilt, and the last tilt x its tilt mean m was
// computed at (the bisection's last steps move δ by less than x's precision,
// and an equal x gives the same m without an expm1).
type fitTerm struct {
	c, l, w, theta float64
	x, m           float64
	// e is the expm1(x) that m took (NaN when none), for slope.
	e float64
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
// (each evaluated, as they must be): Newton's method from the bisection's
// bracket finds the crossing r, and its every evaluation narrows the
// bracket where its margin allows; then implied is probed at r ± 4E/slope
// with E over the tilts the bracket so far spans (the tilt mean's error
// falls with 1/|x|), which covers the comparisons inside it. Newton's
// notes usually give that bracket; where they leave one side open, a first
// round of probes with E over every tilt closes it. How r is found only decides where implied is
// evaluated: every bracket comes from evaluations noted with a proved E, so
// no choice of r can change an outcome. A sum, edge or count that is not
// finite leaves the bracket empty: every step is then evaluated, as before.
//
// The bisection stops at the first step that changes neither end (its mid
// is an end, once the bracket is one float wide): every later step has the
// same mid, so the same outcome, and changes nothing either.
//
// Newton's method stops after maxNewton evaluations, so a fit evaluates
// implied at most 2 + maxNewton + 4 times more than the plain bisection;
// over the shapes of TestMeanFitIsThePlainBisection it evaluates it 20
// times instead of 64, and computes a tilt mean 21 times per bucket
// instead of 64.
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
			t.x = x
			t.m, t.e = tiltMeanExpm1(x)
			f.tiltMeans++
		}
		v += t.c * (t.l + t.w*t.m)
	}
	return v
}

// slope is the derivative of the implied sum in δ, in exact arithmetic,
// at the δ implied was last evaluated at (where its terms' tilts are): the
// sum of c·w·τ′(x) over the terms whose tilt is not clamped. It only guides
// the search for the bracket; no comparison is made on it.
func (f *meanFit) slope() float64 {
	s := 0.0
	for i := range f.terms {
		if t := &f.terms[i]; math.Abs(t.x) < maxTilt {
			s += t.c * t.w * tiltSlope(t.x, t.e)
		}
	}
	return s
}

// locateAfter is how many bisection steps shift takes, every one
// evaluated, before it locates the bracket: two narrow [−2·maxTilt,
// 2·maxTilt] to a quarter, from where Newton's method converges in a few
// evaluations (over TestMeanFitIsThePlainBisection's shapes, 0 to 4 steps
// give 25.5, 25.3, 24.9, 25.1 and 25.4 evaluations per fit before the
// bisection's early stop). maxNewton caps Newton's method.
const (
	locateAfter = 2
	maxNewton   = 20
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
		exceeds, v := f.exceeds(mid)
		if exceeds && mid == lo || !exceeds && mid == hi {
			// The step changed nothing: every later one has the same mid,
			// so the same outcome (a function of mid alone), and changes
			// nothing either.
			break
		}
		if exceeds {
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
// evaluated): Newton's method (newton), whose every evaluation narrows the
// bracket where its margin allows, then the probes with the error over the
// bracket (a first round with the error over every tilt only where
// Newton's notes leave a side of it open).
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
	// A bracket around the crossing r, about four times the error wide on
	// each side, with the error over the tilts a bracket already spans:
	// Newton's (its early evaluations, far from r, are usually noted on
	// both sides), else one probed with the error over every tilt first.
	r, slope := f.newton(a, b, ga, gb, e)
	if !(slope > 0) || !(r >= lo && r <= hi) {
		return
	}
	if e2, ok := f.spanned(); !ok || !(e2 < e) {
		f.probe(r, slope, e)
	}
	if e2, ok := f.spanned(); ok && e2 < e {
		f.probe(r, slope, e2)
	}
}

// spanned is the error bound over the bracket [above, below], ok when both
// ends are finite: the bound every δ a probe inside the bracket can
// newly cover has.
func (f *meanFit) spanned() (float64, bool) {
	if math.IsInf(f.above, 0) || math.IsInf(f.below, 0) {
		return 0, false
	}
	return f.errorBound(f.above, f.below), true
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

// newton narrows [a, b], where implied − sum is ga > 0 and gb ≤ 0, around
// the crossing by Newton's method, the implied sum's derivative taken from
// the exponentials its tilt means already computed (slope), starting at the
// secant's crossing and taking the midpoint of the narrowed bracket
// wherever a step would leave it; it notes every evaluation with the error
// e. It stops after maxNewton evaluations, at a relative width of 1e-12, or
// once the sum is within e of the target, and returns the estimated
// crossing r and how fast the sum falls there (the secant's over the
// narrowed bracket where the last step had no usable derivative).
func (f *meanFit) newton(a, b, ga, gb, e float64) (r, slope float64) {
	x := a + ga*(b-a)/(ga-gb)
	for range maxNewton {
		if !(x > a && x < b) {
			x = (a + b) / 2
		}
		v := f.implied(x)
		f.note(x, v, e)
		g := v - f.sum
		d := f.slope()
		if g > 0 {
			a, ga = x, g
		} else {
			b, gb = x, g
		}
		next := x - g/d
		if math.Abs(g) <= e || !(b-a > 1e-12*(1+math.Abs(a))) {
			if d < 0 && next >= a && next <= b {
				return next, -d
			}
			break
		}
		x = next
	}
	return a + ga*(b-a)/(ga-gb), (ga - gb) / (b - a)
}
