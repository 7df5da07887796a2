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

// gumbelCurve is the curve attainment(x) = exp(−floor − exp(a + b·x)) of
// load x: a complementary log-log (Gumbel) curve, a generalised linear
// model with that link, whose −log attainment (about the share missing the
// SLO when that share is small) is floor plus exp(a + b·x). It is the
// shape assumed between observed loads when the isotonic fit leaves a gap
// around its crossing.
//
// The two terms are two causes of a miss. exp(a + b·x) is the queue's:
// the share of waits longer than a threshold grows about exponentially in
// load near a queue's knee, and unlike a symmetric logistic the curve can
// fall to nothing, as a queue past its knee does, without forcing its fall
// from the goal to be steep. floor is the mix's: a request whose own prompt
// or output is long misses its objective on an idle server too, whatever
// the load, and those misses do not grow with the queue. A curve without
// the floor makes the queue's term carry them, which flattens it where
// they are a large part of the misses (below the knee) and steepens it
// towards the knee: log(−log attainment) of the simulator's constant-rate
// sweep rises by 1.6, 2.2, 2.7 and 3.0 per req/s between its rates from
// 5.4 to 6.6 req/s, so a line fitted mostly below the knee crosses the
// goal early, while log(−log attainment − 0.008) rises by 2.7, 2.8, 3.1
// and 3.1, nearly a line (BENCHMARKS.md). The floor is not fitted with the
// queue's term, which trades it against the slope when the loads seen
// stop short of the knee (fitted so, it widened the burst day's interval
// threefold); it is measured where the queue adds little (see missFloor)
// and enters the fit as a known offset, so the curve has the same two free
// parameters as without it. The floor measured there is the smaller one
// (0.0034 to 0.0042 on the simulator's one-engine days: the mix's misses
// grow with load too, a long prompt's prefill stalling the decodes
// batched with it), and with it the sweep's line still steepens somewhat
// (2.0, 2.4, 2.9, 3.0 per req/s at 0.004), less than without. Far below
// the knee the misses come from the mix only and the queue's term is not
// fitted there: only the bins from Config.ShapeFrom of the isotonic knee
// up. ll is the fit's log-likelihood, which fitShapes compares.
type gumbelCurve struct{ a, b, floor, ll float64 }

// crossing is the load at which the curve falls to goal: +Inf when it does
// not fall with load, or when the floor alone leaves no room above goal
// (fitGumbel never returns such a floor).
func (l gumbelCurve) crossing(goal float64) float64 {
	room := -math.Log(goal) - l.floor
	if !(l.b > 0) || !(room > 0) {
		return math.Inf(1)
	}
	x := (math.Log(room) - l.a) / l.b
	if math.IsNaN(x) {
		return math.Inf(1)
	}
	return x
}

// missFloor is the floor of a curve fitted from load from on up: −log of
// the pooled attainment of the bins below from, the share of requests the
// server misses where the queue adds little (by default below 0.7 of the
// isotonic knee: the sweep's floored line, extrapolated from 5.4 req/s to
// 0.7 of its 6.0, puts the queue's term there at 0.0003, a twenty-fifth of
// the floor 0.008 that straightens it). It is 0 without bins below from, and
// when that share leaves no room above goal (the SLO all but missed at low
// load: the floor would place the whole crossing, so the curve goes
// without one). On a server whose misses grow with load below the knee it
// is the smallest of them, and the queue's term takes the rest.
func missFloor(bs []bin, from, goal float64) float64 {
	var n, good float64
	for _, b := range bs {
		if b.load < from {
			n, good = n+b.n, good+b.good
		}
	}
	if !(n > 0) || !(good > 0) {
		return 0
	}
	f := -math.Log(min(good/n, 1))
	if !(f < -math.Log(goal)) {
		return 0
	}
	return f
}

// fitGumbel is the binomial maximum-likelihood curve through the bins
// whose load is at least from (each bin n judged requests, good of them
// good), with floor as a known offset, by Fisher scoring with step
// halving in standardised load, started from start when it is a fit
// already. ok is false with fewer than three bins, no spread of load, or a
// singular system; a fit that would need an infinite slope (good and bad
// bins perfectly separated) stops after maxNewton steps at a steep finite
// one, whose crossing lies between the two groups.
func fitGumbel(bs []bin, from, floor float64, start gumbelCurve) (l gumbelCurve, ok bool) {
	var sb standardBins
	if !sb.set(bs, from) {
		return gumbelCurve{}, false
	}
	return sb.fit(floor, start, fitTolerance)
}

// standardBins are the bins a curve is fitted to, their loads
// standardised (u = (load − mean)/sd, weighted by judged requests), so
// that several curves fitted to one resample share the pass and the
// buffer.
type standardBins struct {
	ps       []point
	mx, sx   float64
	attained float64 // the pooled attainment
}

// set fills sb from the bins at load from up; false with fewer than three
// or no spread of load.
func (sb *standardBins) set(bs []bin, from float64) bool {
	sb.ps = sb.ps[:0]
	var sw, sg, mx float64
	for _, b := range bs {
		if b.load >= from && b.n > 0 {
			sb.ps = append(sb.ps, point(b))
			sw, sg, mx = sw+b.n, sg+b.good, mx+b.n*b.load
		}
	}
	if len(sb.ps) < 3 {
		return false
	}
	mx /= sw
	var v float64
	for _, p := range sb.ps {
		v += p.n * (p.load - mx) * (p.load - mx)
	}
	sx := math.Sqrt(v / sw)
	if !(sx > 0) {
		return false
	}
	for i := range sb.ps {
		sb.ps[i].load = (sb.ps[i].load - mx) / sx
	}
	sb.mx, sb.sx, sb.attained = mx, sx, sg/sw
	return true
}

// fit is fitGumbel of the bins sb holds, stopping once a scoring step
// moves A and B (in standardised load) by less than tol in all.
func (sb *standardBins) fit(floor float64, start gumbelCurve, tol float64) (gumbelCurve, bool) {
	ps, mx, sx := sb.ps, sb.mx, sb.sx
	// In standardised load u the queue's term is exp(A + B·u), started
	// flat at the pooled misses beyond the floor (kept off 0 and 1).
	A := math.Log(max(-math.Log(min(max(sb.attained, 1e-9), 1-1e-9))-floor, 1e-9))
	B := 0.0
	if start.b != 0 {
		A, B = start.a+start.b*mx, start.b*sx
	}
	cur := scoreAt(ps, floor, A, B)
	for range maxNewton {
		dA, dB, ok := cur.step()
		if !ok {
			return gumbelCurve{}, false
		}
		t := 1.0
		for range 30 {
			if next := scoreAt(ps, floor, A+t*dA, B+t*dB); next.ll >= cur.ll {
				A, B, cur = A+t*dA, B+t*dB, next
				break
			}
			t /= 2
		}
		if math.Abs(t*dA)+math.Abs(t*dB) < tol {
			break
		}
	}
	return gumbelCurve{a: A - B*mx/sx, b: B / sx, floor: floor, ll: cur.ll}, true
}

// fitTolerance and replicateTolerance are where the scoring stops: the
// fit of all the windows, whose crossing is the estimate, to 1e-7 in
// standardised load; a bootstrap replicate's, started at that fit, to
// 1e-4. A replicate's crossing enters the interval only through two
// quantiles of Config.Resamples crossings, whose sampling spread is some
// hundred times coarser (a 90% interval a tenth of the knee wide), and
// stopping there halves the scoring steps of a refit (on the simulator's
// days no figure of the truth table moved at its printed precision,
// BENCHMARKS.md).
const (
	fitTolerance       = 1e-7
	replicateTolerance = 1e-4
)

// maxNewton bounds the scoring steps of a fit: from a warm start a fit
// takes a handful, and a separated one would take forever.
const maxNewton = 40

// score is the log-likelihood at a point with its gradient and expected
// information (Fisher's) in (A, B).
type score struct {
	ll, ga, gb, haa, hab, hbb float64
}

// scoreAt evaluates the log-likelihood of points (load standardised) at
// (A, B) in one pass: with λ = e^η, T = floor + λ and p = e^−T a bin adds
// good·log p + (n − good)·log(1 − p), its score in η is λ(np − good)/(1−p)
// and its expected information nλ²p/(1−p) (dT/dη = λ: the floor, a
// constant, moves p and leaves the form alone).
func scoreAt(ps []point, floor, A, B float64) score {
	var s score
	for _, p := range ps {
		lam := math.Exp(A + B*p.load)
		// p = e^−T and 1 − p from one exponential, each where it is
		// the accurate one (1 − p of a small T from expm1).
		t := floor + lam
		var e, q float64
		if t < 0.5 {
			q = -math.Expm1(-t)
			e = 1 - q
		} else {
			e = math.Exp(-t)
			q = 1 - e
		}
		s.ll += -p.good*t + (p.n-p.good)*math.Log(q)
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
