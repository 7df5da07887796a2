package capacity

import "math"

// Method says which fit placed the published knee and its interval.
type Method string

// The methods.
const (
	// Isotonic: the crossing of the monotone fit over load bins, with the
	// bootstrap interval widened to the bins around it. It assumes no shape
	// for the curve between observed loads.
	Isotonic Method = "isotonic"
	// Gumbel: the interval is the bootstrap interval of the crossing of a
	// Gumbel curve of attainment against load fitted to the windows near
	// the knee, cut to the isotonic interval; the estimate stays the
	// isotonic crossing where it lies inside (see shapeInterval). It
	// assumes the curve's shape between observed loads (see gumbelCurve),
	// and answers only where its interval is the narrower.
	Gumbel Method = "gumbel"
)

// gumbelCurve is the curve attainment(x) = exp(−exp(a + b·x)) of load x
// (a complementary log-log, or Gumbel, curve: a generalised linear model
// with that link). It is the shape assumed between observed loads when
// the isotonic fit leaves a gap around its crossing: the log of
// −log attainment, which is about the log of the share missing the SLO
// when that share is small, rises linearly in load over the range fitted.
// That is how a queue's tail behaves near its knee (the share of waits
// longer than a threshold grows about exponentially in load), and unlike
// a symmetric logistic the curve can fall to nothing, as a queue past its
// knee does, without forcing its fall from the goal to be steep. It does
// not hold far below the knee, where the misses come from the mix and not
// the queue: only the windows from Config.ShapeFrom of the isotonic knee
// up are fitted.
type gumbelCurve struct{ a, b float64 }

// crossing is the load at which the curve falls to goal: +Inf when it does
// not fall with load.
func (l gumbelCurve) crossing(goal float64) float64 {
	if !(l.b > 0) {
		return math.Inf(1)
	}
	x := (math.Log(-math.Log(goal)) - l.a) / l.b
	if math.IsNaN(x) {
		return math.Inf(1)
	}
	return x
}

// fitGumbel is the binomial maximum-likelihood curve through the bins
// whose load is at least from (each bin n judged requests, good of them
// good), by Fisher scoring with step halving in standardised load, started
// from start when it is a fit already. ok is false with fewer than three
// bins, no spread of load, or a singular system; a fit that would need an
// infinite slope (good and bad bins perfectly separated) stops after
// maxNewton steps at a steep finite one, whose crossing lies between the
// two groups.
func fitGumbel(bs []bin, from float64, start gumbelCurve) (l gumbelCurve, ok bool) {
	var sw, sg, mx, k float64
	for _, b := range bs {
		if b.load >= from && b.n > 0 {
			sw, sg, mx, k = sw+b.n, sg+b.good, mx+b.n*b.load, k+1
		}
	}
	if k < 3 {
		return gumbelCurve{}, false
	}
	mx /= sw
	var v float64
	for _, b := range bs {
		if b.load >= from && b.n > 0 {
			v += b.n * (b.load - mx) * (b.load - mx)
		}
	}
	sx := math.Sqrt(v / sw)
	if !(sx > 0) {
		return gumbelCurve{}, false
	}
	// In standardised load u = (x − mx)/sx the curve's η is A + B·u,
	// started flat at the pooled attainment (kept off 0 and 1).
	A, B := math.Log(-math.Log(min(max(sg/sw, 1e-9), 1-1e-9))), 0.0
	if start.b != 0 {
		A, B = start.a+start.b*mx, start.b*sx
	}
	ll := func(A, B float64) float64 {
		s := 0.0
		for _, b := range bs {
			if b.load >= from && b.n > 0 {
				lam := math.Exp(A + B*(b.load-mx)/sx)
				s += -b.good*lam + (b.n-b.good)*math.Log(-math.Expm1(-lam))
			}
		}
		if math.IsNaN(s) {
			return math.Inf(-1)
		}
		return s
	}
	cur := ll(A, B)
	for range maxNewton {
		dA, dB, ok := scoringStep(bs, from, mx, sx, A, B)
		if !ok {
			return gumbelCurve{}, false
		}
		t := 1.0
		for range 30 {
			if v := ll(A+t*dA, B+t*dB); v >= cur {
				A, B, cur = A+t*dA, B+t*dB, v
				break
			}
			t /= 2
		}
		if math.Abs(t*dA)+math.Abs(t*dB) < 1e-9 {
			break
		}
	}
	return gumbelCurve{a: A - B*mx/sx, b: B / sx}, true
}

// maxNewton bounds the scoring steps of a fit: from a warm start a fit
// takes a handful, and a separated one would take forever.
const maxNewton = 40

// scoringStep is the Fisher scoring step of the log-likelihood at (A, B):
// with λ = e^η and p = e^−λ, the score in η of a bin is λ(np − good)/(1−p)
// and its expected information nλ²p/(1−p).
func scoringStep(bs []bin, from, mx, sx, A, B float64) (dA, dB float64, ok bool) {
	var ga, gb, haa, hab, hbb float64
	for _, b := range bs {
		if b.load < from || b.n <= 0 {
			continue
		}
		u := (b.load - mx) / sx
		lam := math.Exp(A + B*u)
		p, q := math.Exp(-lam), -math.Expm1(-lam)
		if !(q > 0) {
			continue
		}
		r, w := lam*(b.n*p-b.good)/q, b.n*lam*lam*p/q
		ga, gb = ga+r, gb+r*u
		haa, hab, hbb = haa+w, hab+w*u, hbb+w*u*u
	}
	det := haa*hbb - hab*hab
	if !(det > 0) {
		return 0, 0, false
	}
	return (hbb*ga - hab*gb) / det, (haa*gb - hab*ga) / det, true
}
