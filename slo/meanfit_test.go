package slo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// plainShiftToMean is shiftToMean as it was before meanFit: every one of the
// 64 bisection steps evaluates the implied sum, and the tilts are clamped
// with math.Max and math.Min. It is the reference meanFit must reproduce to
// the bit.
func plainShiftToMean(b buckets, theta []float64, finiteSum float64) (evaluations int) {
	clamp := func(t float64) float64 { return math.Max(-maxTilt, math.Min(maxTilt, t)) }
	last := len(b.upper) - 1
	implied := func(delta float64) float64 {
		evaluations++
		v := 0.0
		for i := 0; i < last; i++ {
			if c := b.count[i]; c > 0 {
				v += c * (b.lower[i] + (b.upper[i]-b.lower[i])*tiltMean(clamp(theta[i]+delta)))
			}
		}
		return v
	}
	lo, hi := -2.0*maxTilt, 2.0*maxTilt
	for range 64 {
		mid := (lo + hi) / 2
		if implied(mid) > finiteSum {
			lo = mid
		} else {
			hi = mid
		}
	}
	delta := (lo + hi) / 2
	for i := range theta {
		theta[i] = clamp(theta[i] + delta)
	}
	return evaluations
}

// fitHistogram draws a histogram of one of the shapes the fit meets:
// vLLM's edges or random ones, counts from a log-normal, a narrow peak, one
// bucket, a cliff, a few observations or huge counts, and a sum anywhere
// from the buckets' lower edges to their upper ones (and beyond, where no
// tilt reaches it), sometimes with observations in +Inf.
func fitHistogram(r *rand.Rand) Histogram {
	var edges []float64
	switch r.IntN(3) {
	case 0:
		edges = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	case 1:
		edges = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	default:
		e := r.Float64() * 0.01
		if r.IntN(4) == 0 {
			e = -r.Float64() // a first edge at or below 0 (lower edge -Inf)
		}
		for range 1 + r.IntN(40) {
			e += r.ExpFloat64() * math.Pow(10, float64(r.IntN(5)-3))
			edges = append(edges, e)
		}
	}
	edges = append(edges, math.Inf(1))
	counts := make([]float64, len(edges))
	scale := math.Pow(10, float64(r.IntN(9)))
	mu, sigma := math.Log(edges[r.IntN(len(edges))]+1e-3), 0.1+2*r.Float64()
	shape := r.IntN(5)
	n := 1 + r.IntN(5000)
	if shape == 4 {
		n = 1 + r.IntN(3)
	}
	lower, upper := 0.0, 0.0
	for range n {
		var x float64
		switch shape {
		case 1: // a narrow peak
			x = math.Exp(mu) * (1 + 0.01*r.NormFloat64())
		case 2: // everything at one value
			x = math.Exp(mu)
		case 3: // a cliff: many short, a long tail
			x = 0.002 * r.Float64()
			if r.IntN(10) == 0 {
				x = math.Exp(mu + sigma*r.NormFloat64())
			}
		default:
			x = math.Exp(mu + sigma*r.NormFloat64())
		}
		for i, e := range edges {
			if x <= e {
				counts[i] += scale
				if i > 0 {
					lower += scale * edges[i-1]
				}
				if !math.IsInf(e, 1) {
					upper += scale * e
				} else {
					upper += scale * edges[len(edges)-2] * 2
				}
				break
			}
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	f := r.Float64()
	if r.IntN(10) == 0 {
		f = -0.5 + 2*r.Float64() // a sum outside what the buckets allow
	}
	return Histogram{Edges: edges, Counts: counts, Sum: lower + f*(upper-lower)}
}

// TestMeanFitIsThePlainBisection: on edge cases and ten thousand random
// histograms of every shape above, both estimators' fitted tilts equal
// those of the plain bisection bit for bit, and the test reports how many
// evaluations of the implied sum and of the tilt mean the fit saved.
func TestMeanFitIsThePlainBisection(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 22))
	inf := math.Inf(1)
	edge := []Histogram{
		{Edges: []float64{1, 2, inf}, Counts: []float64{0, 5, 5}, Sum: 5},                                // one bucket, sum at its lower edge
		{Edges: []float64{1, 2, inf}, Counts: []float64{0, 5, 5}, Sum: 10},                               // at its upper edge
		{Edges: []float64{1, 2, inf}, Counts: []float64{0, 5, 5}, Sum: 7.5},                              // at its middle: δ = 0
		{Edges: []float64{1, 2, inf}, Counts: []float64{3, 5, 9}, Sum: 1e6},                              // far beyond what any tilt implies
		{Edges: []float64{1, 2, inf}, Counts: []float64{3, 5, 9}, Sum: -1},                               // far below
		{Edges: []float64{-2, -1, 0, inf}, Counts: []float64{0, 4, 6, 6}, Sum: -5},                       // negative edges
		{Edges: []float64{1, 1 + 1e-12, 3, inf}, Counts: []float64{1, 2, 4, 4}, Sum: 5},                  // a bucket narrower than the tilts' precision
		{Edges: []float64{1e-3, 1, 1e3, inf}, Counts: []float64{1e300, 2e300, 3e300, 3e300}, Sum: 1e303}, // products beyond float range
	}
	var plain, fast, means, terms, fits int
	for i := range len(edge) + 10000 {
		var h Histogram
		if i < len(edge) {
			h = edge[i]
		} else {
			h = fitHistogram(r)
		}
		b, ok := prepare(h)
		if !ok {
			continue
		}
		finiteSum, ok := finiteBucketSum(b)
		if !ok {
			continue
		}
		for _, e := range []Estimator{Density, MeanFit} {
			base := make([]float64, len(b.upper))
			if e == Density {
				densityTilts(b, base)
			}
			want := append([]float64(nil), base...)
			plain += plainShiftToMean(b, want, finiteSum)
			got := append([]float64(nil), base...)
			f := countedShift(b, got, finiteSum)
			fast, means, terms = fast+f.evaluations, means+f.tiltMeans, terms+len(f.terms)
			fits++
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("histogram %d (%v), %v: tilt %d is %v, the plain bisection's %v", i, h, e, j, got[j], want[j])
				}
			}
		}
	}
	if fits < 20000 {
		t.Fatalf("only %d fits drawn", fits)
	}
	t.Logf("%d fits: %.1f evaluations of the implied sum each, against the plain bisection's %.1f; %.1f tilt means (expm1) per bucket, against %.1f",
		fits, float64(fast)/float64(fits), float64(plain)/float64(fits), float64(means)/float64(terms), float64(plain)/float64(fits))
}

// countedShift is shiftToMean, returning the fit with its counts.
func countedShift(b buckets, theta []float64, finiteSum float64) meanFit {
	f := newMeanFit(b, theta, finiteSum, nil)
	delta := f.shift()
	for i := range theta {
		theta[i] = clampTilt(theta[i] + delta)
	}
	return f
}

// FuzzMeanFitIsThePlainBisection: for any histogram of three finite buckets
// the fit accepts, its tilts are the plain bisection's, bit for bit.
func FuzzMeanFitIsThePlainBisection(f *testing.F) {
	f.Add(0.1, 0.5, 2.0, 3.0, 10.0, 12.0, 2.5)
	f.Add(1.0, 1.0+1e-12, 3.0, 1.0, 2.0, 4.0, 5.0)
	f.Add(-2.0, -1.0, 0.0, 0.0, 4.0, 6.0, -5.0)
	f.Fuzz(func(t *testing.T, e0, e1, e2, c0, c1, c2, sum float64) {
		h := Histogram{Edges: []float64{e0, e1, e2, math.Inf(1)}, Counts: []float64{c0, c1, c2, c2}, Sum: sum}
		b, ok := prepare(h)
		if !ok {
			return
		}
		finiteSum, ok := finiteBucketSum(b)
		if !ok {
			return
		}
		for _, e := range []Estimator{Density, MeanFit} {
			base := make([]float64, len(b.upper))
			if e == Density {
				densityTilts(b, base)
			}
			want := append([]float64(nil), base...)
			plainShiftToMean(b, want, finiteSum)
			got := append([]float64(nil), base...)
			shiftToMean(b, got, finiteSum)
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("%v, %v: tilt %d is %v, the plain bisection's %v", h, e, j, got[j], want[j])
				}
			}
		}
	})
}

// tiltMean is the mean of the density ∝ exp(−θy) on [0, 1]:
// 1/θ − 1/(e^θ − 1), decreasing in θ from 1 to 0, and ½ at θ = 0.
func tiltMean(theta float64) float64 {
	m, _ := tiltMeanExpm1(theta)
	return m
}
