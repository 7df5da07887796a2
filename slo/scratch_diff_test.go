package slo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// quantilePlain is a quantile of a fittedHistogram as it was written before
// the buckets and tilts could live on the caller's stack: prepare and fit
// allocating, the fit made at the first quantile that needs it.
func quantilePlain(e Estimator, h Histogram, qs []float64) []Quantile {
	b, ok := prepare(h)
	var s shape
	fitted := false
	var out []Quantile
	for _, q := range qs {
		if !(q >= 0 && q <= 1) {
			continue
		}
		nan := math.NaN()
		res := Bounded{Estimate: nan, Lower: nan, Upper: nan}
		if ok && b.n > 0 {
			r := rankOf(q, b.n)
			i := b.bucketOfRank(r)
			res = Bounded{Lower: b.lower[i], Upper: b.upper[i]}
			if math.IsInf(res.Upper, 1) {
				res.Estimate = res.Upper
			} else {
				f := 1.0
				if c := b.count[i]; c > 0 {
					f = (r - b.cumBelow(i) - 0.5) / c
				}
				if !fitted {
					s, fitted = e.fit(b), true
				}
				res.Estimate = s.at(b, i, f)
			}
		}
		out = append(out, Quantile{Q: q, Bounded: res})
	}
	return out
}

// goodCountPlain is Estimator.GoodCount as it was written before its
// buckets and tilts could live on its stack.
func goodCountPlain(e Estimator, threshold float64, h Histogram) Bounded {
	b, ok := prepare(h)
	if !ok || b.n <= 0 || math.IsNaN(threshold) {
		return Exact(0)
	}
	if math.IsInf(threshold, 1) {
		return Exact(b.n)
	}
	for i, u := range b.upper {
		if sameValue(threshold, u) {
			return Exact(b.cum[i])
		}
		if threshold > u {
			continue
		}
		l := b.lower[i]
		if threshold < l || (l == 0 && threshold < 0) || (i > 0 && sameValue(threshold, l)) {
			return Exact(b.cumBelow(i))
		}
		lo, hi := b.cumBelow(i), b.cum[i]
		if lo == hi {
			return Exact(lo)
		}
		res := Bounded{Lower: lo, Upper: hi, Estimate: lo}
		if !math.IsInf(u, 1) {
			res.Estimate = lo + b.count[i]*e.fit(b).share(b, i, threshold)
		}
		res.Estimate = clampInto(res.Estimate, res)
		return res
	}
	return Exact(b.n)
}

// randomScratchHistogram draws a histogram of 1 to 45 edges (beyond
// scratchEdges too, where the scratch has no room), with counts that fall
// now and then, −0, NaN and infinite counts and sums, and negative first
// edges.
func randomScratchHistogram(r *rand.Rand) Histogram {
	k := 1 + r.IntN(45)
	h := Histogram{Edges: make([]float64, k), Counts: make([]float64, k)}
	edge := 0.001 * float64(1+r.IntN(5))
	if r.IntN(10) == 0 {
		edge = -1
	}
	c := 0.0
	for i := range k {
		h.Edges[i] = edge
		edge *= 1.5 + r.Float64()
		c += float64(r.IntN(4) * r.IntN(30))
		h.Counts[i] = c
		switch x := r.IntN(400); {
		case x == 0:
			h.Counts[i] = math.NaN()
		case x == 1:
			h.Counts[i] = math.Inf(1)
		case x == 2:
			h.Counts[i] = math.Copysign(0, -1)
		case x < 20:
			h.Counts[i] = c - float64(r.IntN(3)) - 1e-13*r.Float64() // falls: repaired
		}
	}
	if r.IntN(4) > 0 {
		h.Edges[k-1] = math.Inf(1)
	}
	h.Sum = c * h.Edges[max(0, k-2)] * r.Float64()
	switch r.IntN(20) {
	case 0:
		h.Sum = math.NaN()
	case 1:
		h.Sum = math.Inf(1)
	}
	return h
}

// sameQuantiles says a and b hold the same quantiles to the bit (NaN equal
// to NaN).
func sameQuantiles(a, b []Quantile) bool {
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !same(a[i].Q, b[i].Q) || !same(a[i].Estimate, b[i].Estimate) || !same(a[i].Lower, b[i].Lower) ||
			!same(a[i].Upper, b[i].Upper) {
			return false
		}
	}
	return true
}

// TestScratchIsThePlainMemory: quantiles, GoodCount and Attainment keep the
// buckets and tilts of a histogram of up to scratchEdges edges on their
// stack, and Attainment counts the observations without the buckets; on
// 20,000 random histograms, every estimator, quantiles in and out of
// [0, 1] and thresholds on, between and beyond the edges, each gives the
// bits of its allocating form.
func TestScratchIsThePlainMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 43))
	qs := []float64{0.5, -0.1, 0.9, 0.95, 0.99, 1, 0, math.NaN(), 1.5}
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y)
	}
	sameBounded := func(x, y Bounded) bool {
		return same(x.Lower, y.Lower) && same(x.Upper, y.Upper) && same(x.Estimate, y.Estimate)
	}
	fitted := 0
	for trial := range 20000 {
		h := randomScratchHistogram(r)
		e := Estimator(trial % 4)
		got, want := quantiles(e, qs, h), quantilePlain(e, h, qs)
		if !sameQuantiles(got, want) {
			t.Fatalf("trial %d, %v: quantiles %+v, the plain ones %+v\n%+v", trial, e, got, want, h)
		}
		if b, ok := prepare(h); ok && b.n > 0 {
			fitted++
		}
		k := r.IntN(len(h.Edges))
		for _, th := range []float64{h.Edges[k], h.Edges[k] * (0.2 + r.Float64()), -1, math.Inf(1), math.NaN(), h.Edges[len(h.Edges)-1] * 2} {
			if g, w := e.GoodCount(th, h), goodCountPlain(e, th, h); !sameBounded(g, w) {
				t.Fatalf("trial %d, %v, threshold %v: GoodCount %+v, the plain one %+v\n%+v", trial, e, th, g, w, h)
			}
			b, ok := prepare(h)
			wantAtt := Bounded{}
			if ok && b.n > 0 {
				wantAtt = Divide(goodCountPlain(e, th, h), b.n)
			}
			gotAtt, gotOK := e.Attainment(th, h)
			if gotOK != (ok && b.n > 0) || !sameBounded(gotAtt, wantAtt) {
				t.Fatalf("trial %d, %v, threshold %v: Attainment %+v %v, the plain one %+v\n%+v", trial, e, th, gotAtt, gotOK, wantAtt, h)
			}
		}
	}
	if fitted < 10000 {
		t.Fatalf("only %d of the histograms hold observations", fitted)
	}
}

// fit prepares the estimator for the histogram b: the base tilt of every
// bucket (0, or from its neighbours' densities for Density), then one shift
// δ solving Σ n_i·(l_i + w_i·tiltMean(θ_i + δ)) = S by bisection (the left
// side decreases in δ). With no usable sum the shift is 0.
func (e Estimator) fit(b buckets) shape {
	return e.fitIn(b, nil)
}
