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
	// Gumbel: the estimate is the crossing of a Gumbel curve of
	// attainment against load fitted to the windows near the knee, and the
	// interval the bootstrap interval of that crossing, cut to the
	// isotonic interval (see shapeInterval). It assumes the curve's shape
	// between observed loads (see gumbelCurve), and answers only where its
	// interval is the narrower.
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
	ps := make([]point, 0, len(bs))
	var sw, sg, mx float64
	for _, b := range bs {
		if b.load >= from && b.n > 0 {
			ps = append(ps, point(b))
			sw, sg, mx = sw+b.n, sg+b.good, mx+b.n*b.load
		}
	}
	if len(ps) < 3 {
		return gumbelCurve{}, false
	}
	mx /= sw
	var v float64
	for _, p := range ps {
		v += p.n * (p.load - mx) * (p.load - mx)
	}
	sx := math.Sqrt(v / sw)
	if !(sx > 0) {
		return gumbelCurve{}, false
	}
	for i := range ps {
		ps[i].load = (ps[i].load - mx) / sx
	}
	// In standardised load u the curve's η is A + B·u, started flat at
	// the pooled attainment (kept off 0 and 1).
	A, B := math.Log(-math.Log(min(max(sg/sw, 1e-9), 1-1e-9))), 0.0
	if start.b != 0 {
		A, B = start.a+start.b*mx, start.b*sx
	}
	cur := scoreAt(ps, A, B)
	for range maxNewton {
		dA, dB, ok := cur.step()
		if !ok {
			return gumbelCurve{}, false
		}
		t := 1.0
		for range 30 {
			if next := scoreAt(ps, A+t*dA, B+t*dB); next.ll >= cur.ll {
				A, B, cur = A+t*dA, B+t*dB, next
				break
			}
			t /= 2
		}
		if math.Abs(t*dA)+math.Abs(t*dB) < 1e-7 {
			break
		}
	}
	return gumbelCurve{a: A - B*mx/sx, b: B / sx}, true
}

// maxNewton bounds the scoring steps of a fit: from a warm start a fit
// takes a handful, and a separated one would take forever.
const maxNewton = 40

// score is the log-likelihood at a point with its gradient and expected
// information (Fisher's) in (A, B).
type score struct {
	ll, ga, gb, haa, hab, hbb float64
}

// scoreAt evaluates the log-likelihood of points (load standardised) at
// (A, B) in one pass: with λ = e^η and p = e^−λ a bin adds
// good·log p + (n − good)·log(1 − p), its score in η is λ(np − good)/(1−p)
// and its expected information nλ²p/(1−p).
func scoreAt(ps []point, A, B float64) score {
	var s score
	for _, p := range ps {
		lam := math.Exp(A + B*p.load)
		e, q := math.Exp(-lam), -math.Expm1(-lam)
		s.ll += -p.good*lam + (p.n-p.good)*math.Log(q)
		if !(q > 0) {
			continue
		}
		r, w := lam*(p.n*e-p.good)/q, p.n*lam*lam*e/q
		s.ga, s.gb = s.ga+r, s.gb+r*p.load
		s.haa, s.hab, s.hbb = s.haa+w, s.hab+w*p.load, s.hbb+w*p.load*p.load
	}
	if math.IsNaN(s.ll) {
		s.ll = math.Inf(-1)
	}
	return s
}

// step is the Fisher scoring step from s; ok is false when the
// information is singular.
func (s score) step() (dA, dB float64, ok bool) {
	det := s.haa*s.hbb - s.hab*s.hab
	if !(det > 0) {
		return 0, 0, false
	}
	return (s.hbb*s.ga - s.hab*s.gb) / det, (s.haa*s.gb - s.hab*s.ga) / det, true
}
