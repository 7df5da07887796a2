package slo

import "math"

// Estimator chooses where inside a bucket an estimate is placed: for a
// quantile, the value at a given share of the bucket's observations; for an
// attainment, the share of the bucket's observations below a threshold. Every
// estimator is monotone within the bucket, so its estimates never leave the
// bracket; they differ only in accuracy, which accuracy_test.go measures.
type Estimator int

// The estimators. DefaultEstimator, Density, was chosen by measurement on
// synthetic vLLM-like workloads (see accuracy_test.go and doc.go): its mean
// relative error is about 40% of histogram_quantile's; MeanFit's about 60%,
// Linear's and LogLinear's about 95%.
const (
	// Density gives each finite bucket its own exponential tilt from the
	// densities (count/width) of its neighbours: θ_i = ½·ln(d_{i−1}/d_{i+1}),
	// the log-density drop across the bucket, and for the first bucket, whose
	// left neighbour is unknown, ln(d_0/d_1). Then it shifts all tilts by one
	// δ fitted so that the histogram's mean is reproduced, as MeanFit does.
	// A narrow peak inside one bucket (TPOT) and a cliff after the first
	// bucket (short requests) are where it gains most over linear.
	Density Estimator = iota
	// MeanFit places the observations of every finite bucket (l, u] by a
	// truncated exponential density ∝ exp(−θ·(x−l)/(u−l)), the maximum-entropy
	// shape on a bounded interval with a given mean, with one θ for all
	// buckets fitted so that the histogram's mean (Sum/n) is reproduced
	// exactly. θ > 0 puts the mass near the lower edges (the usual right-skewed
	// latency), θ = 0 is linear. With everything in one bucket that bucket's
	// mean is known exactly, which fixes its shape. When the +Inf bucket holds
	// observations their sum is only bounded (>= last edge each), so the
	// finite sum used for the fit is an upper bound and the fit leans high.
	MeanFit
	// Linear assumes a uniform distribution within each bucket, as
	// Prometheus does (but an estimate in the +Inf bucket is +Inf).
	Linear
	// LogLinear assumes a log-uniform distribution within each bucket with a
	// positive lower edge (geometric interpolation), and a uniform one in the
	// first bucket.
	LogLinear
)

// DefaultEstimator is the estimator of Evaluate unless Options says
// otherwise.
const DefaultEstimator = Density

// shape is an estimator fitted to one histogram.
type shape struct {
	est   Estimator
	theta []float64 // per-bucket exponential tilt (MeanFit, Density)
}

// maxTilt bounds |θ|: beyond it the within-bucket distribution is a point
// at an edge to within float precision anyway.
const maxTilt = 60

// tiltMeanExpm1 returns tiltMean(theta), the mean of the density ∝ exp(−θy)
// on [0, 1]: 1/θ − 1/(e^θ − 1), decreasing in θ from 1 to 0, and ½ at θ = 0;
// with the expm1(theta) it took (NaN where |theta| < 1e-4 took none), from
// which tiltSlope gets the derivative without another exponential.
func tiltMeanExpm1(theta float64) (m, e float64) {
	if math.Abs(theta) < 1e-4 {
		return 0.5 - theta/12, math.NaN()
	}
	e = math.Expm1(theta)
	return 1/theta - 1/e, e
}

// tiltSlope is the derivative of tiltMean at theta, −1/θ² + e^θ/(e^θ − 1)²,
// given e = expm1(theta) (NaN near 0, where it is −1/12): only a guide for
// where the mean fit evaluates next, never part of a result.
func tiltSlope(theta, e float64) float64 {
	if math.IsNaN(e) {
		return -1.0 / 12
	}
	return -1/(theta*theta) + (e+1)/(e*e)
}

// tiltAt is the inverse CDF of the density ∝ exp(−θy) on [0, 1].
func tiltAt(theta, f float64) float64 {
	if math.Abs(theta) < 1e-9 {
		return f
	}
	return -math.Log1p(f*math.Expm1(-theta)) / theta
}

// tiltShare is the CDF of the density ∝ exp(−θy) on [0, 1].
func tiltShare(theta, y float64) float64 {
	if math.Abs(theta) < 1e-9 {
		return y
	}
	return math.Expm1(-theta*y) / math.Expm1(-theta)
}

// fitIn prepares the estimator for the histogram b: the base tilt of every
// bucket (0, or from its neighbours' densities for Density), then one shift
// δ solving Σ n_i·(l_i + w_i·tiltMean(θ_i + δ)) = S by bisection (the left
// side decreases in δ). With no usable sum the shift is 0. The tilts are in
// scratch when it has room for them (len(b.upper)), allocated otherwise; the
// shape is the same whichever memory holds its tilts, and lives as long as
// scratch is not reused.
func (e Estimator) fitIn(b buckets, scratch []float64) shape {
	s := shape{est: e}
	if e != MeanFit && e != Density {
		return s
	}
	if cap(scratch) >= len(b.upper) {
		s.theta = scratch[:len(b.upper)]
		clear(s.theta)
	} else {
		s.theta = make([]float64, len(b.upper))
	}
	if e == Density {
		densityTilts(b, s.theta)
	}
	if finiteSum, ok := finiteBucketSum(b); ok {
		shiftToMean(b, s.theta, finiteSum)
	}
	return s
}

// densityTilts sets the base tilt of every finite bucket from its
// neighbours' densities (count/width): θ_i = ½·ln(d_{i−1}/d_{i+1}), and for
// the first bucket, whose left neighbour is unknown, ln(d_0/d_1). A bucket
// whose neighbours are unknown (the last finite one borders +Inf) or both
// empty keeps tilt 0. The 1e-9 keeps an empty neighbour's logarithm finite;
// clampTilt bounds what it gives.
func densityTilts(b buckets, theta []float64) {
	last := len(b.upper) - 1
	dens := func(i int) float64 {
		if i < 0 || i >= last {
			return math.NaN()
		}
		return b.count[i] / (b.upper[i] - b.lower[i])
	}
	for i := 0; i < last; i++ {
		lo, hi := dens(i-1), dens(i+1)
		if i == 0 {
			lo = dens(0)
		}
		var th float64
		switch {
		case math.IsNaN(lo) || math.IsNaN(hi):
		case lo == 0 && hi == 0:
		default:
			th = 0.5 * math.Log((lo+1e-9)/(hi+1e-9))
			if i == 0 {
				th *= 2
			}
		}
		theta[i] = clampTilt(th)
	}
}

// finiteBucketSum returns the sum of the finite buckets' observations, the
// value the mean fit must reproduce: the histogram's sum minus the +Inf
// bucket's observations counted at its lower edge (so an upper bound of the
// finite sum, and the fit leans high). It is not usable (false) without a
// sum, when every observation is in the +Inf bucket, or when a bucket with
// observations has an infinite lower edge.
func finiteBucketSum(b buckets) (float64, bool) {
	if math.IsNaN(b.sum) {
		return 0, false
	}
	last := len(b.upper) - 1
	finiteSum := b.sum
	if c := b.count[last]; c > 0 {
		if last == 0 {
			return 0, false
		}
		finiteSum -= c * b.lower[last]
	}
	for i := 0; i < last; i++ {
		if b.count[i] > 0 && math.IsInf(b.lower[i], 0) {
			return 0, false
		}
	}
	return finiteSum, true
}

// shiftToMean adds to every tilt the one δ for which the finite buckets'
// implied sum equals finiteSum, found by 64 bisection steps over
// [−2·maxTilt, 2·maxTilt] (the implied sum decreases in δ, so a sum outside
// what any tilt implies gives the nearest end). Each step's implied sum costs
// an expm1 per bucket with observations, the bulk of a fit; meanFit finds
// the outcome of most steps without it, and every outcome, so δ, is that of
// the plain bisection to the bit (see meanFit).
func shiftToMean(b buckets, theta []float64, finiteSum float64) {
	var buf [32]fitTerm // room for vLLM's buckets without an allocation
	f := newMeanFit(b, theta, finiteSum, buf[:0])
	delta := f.shift()
	for i := range theta {
		theta[i] = clampTilt(theta[i] + delta)
	}
}

// clampTilt limits a tilt to ±maxTilt (a NaN stays NaN, as with math.Max
// and math.Min).
func clampTilt(t float64) float64 {
	if t > maxTilt {
		return maxTilt
	}
	if t < -maxTilt {
		return -maxTilt
	}
	return t
}

// at returns the value below which a share f in [0, 1] of bucket i's
// observations lie. Bucket i must be finite (upper edge < +Inf).
func (s shape) at(b buckets, i int, f float64) float64 {
	l, u := b.lower[i], b.upper[i]
	if math.IsInf(l, -1) {
		return u
	}
	f = math.Min(math.Max(f, 0), 1)
	var x float64
	switch {
	case s.est == LogLinear && l > 0:
		x = l * math.Pow(u/l, f)
	case s.theta != nil:
		x = l + (u-l)*tiltAt(s.theta[i], f)
	default:
		x = l + (u-l)*f
	}
	return math.Min(math.Max(x, l), u)
}

// share returns the estimated share in [0, 1] of bucket i's observations that
// are <= x, for x inside the finite bucket i.
func (s shape) share(b buckets, i int, x float64) float64 {
	l, u := b.lower[i], b.upper[i]
	if math.IsInf(l, -1) || x >= u {
		return 1
	}
	if x <= l {
		return 0
	}
	var f float64
	switch {
	case s.est == LogLinear && l > 0:
		f = math.Log(x/l) / math.Log(u/l)
	case s.theta != nil:
		f = tiltShare(s.theta[i], (x-l)/(u-l))
	default:
		f = (x - l) / (u - l)
	}
	return math.Min(math.Max(f, 0), 1)
}

// placeQuantile places the nearest-rank q-quantile of the prepared buckets b
// (ok as prepare returned it), up to the estimator's fit: the bracket, and
// the bucket i and share f of its observations at which the estimator places
// the estimate; i < 0 when the result is complete without a fit (NaN, or a
// rank in the +Inf bucket).
//
// The bracket is the bucket that certainly holds the quantile: the rank is
// r = ceil(q·n) (1-based, at least 1), and the r-th smallest observation
// lies in the first bucket whose cumulative count reaches r, so it is in
// (lower, upper] with lower the previous edge. Proof sketch: cum(lower) < r
// <= cum(upper) means fewer than r observations are <= lower and at least r
// are <= upper. The first bucket's lower edge is 0 (latencies are never
// negative; -Inf if the first edge is not positive); a rank in the +Inf
// bucket has Upper = Estimate = +Inf, Lower the last finite edge. q = 0 is
// read as the minimum (rank 1) and q = 1 as the maximum (rank n). All fields
// are NaN when q is NaN or outside [0, 1], when b is not valid, or when it
// holds no observation.
//
// The share f is the centre of the rank's slot in its bucket,
// (r − cum(lower) − ½)/count, so that n equal shares tile the bucket; the
// estimator's within-bucket distribution maps it to the estimate.
func placeQuantile(b buckets, ok bool, q float64) (res Bounded, i int, f float64) {
	nan := math.NaN()
	if !ok || !(q >= 0 && q <= 1) || b.n <= 0 {
		return Bounded{Estimate: nan, Lower: nan, Upper: nan}, -1, 0
	}
	r := rankOf(q, b.n)
	i = b.bucketOfRank(r)
	res = Bounded{Lower: b.lower[i], Upper: b.upper[i]}
	if math.IsInf(res.Upper, 1) {
		res.Estimate = res.Upper
		return res, -1, 0
	}
	f = 1.0
	if c := b.count[i]; c > 0 {
		f = (r - b.cumBelow(i) - 0.5) / c
	}
	return res, i, f
}
