package slo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomHistogram builds an arbitrary valid histogram: random edges (some
// negative, some huge), random counts (sometimes decreasing, sometimes
// fractional), and a Sum that may or may not be consistent with the buckets.
func randomHistogram(r *rand.Rand) Histogram {
	k := 1 + r.IntN(12)
	edges := make([]float64, k)
	e := r.Float64()*2 - 0.5
	if r.IntN(3) > 0 {
		e = math.Abs(e) + 1e-3
	}
	for i := range k - 1 {
		edges[i] = e
		e += r.ExpFloat64() * math.Pow(10, float64(r.IntN(5)-2))
	}
	edges[k-1] = inf
	counts := make([]float64, k)
	c := 0.0
	for i := range counts {
		switch r.IntN(6) {
		case 0: // empty bucket
		case 1: // decrease (inconsistent data)
			c = math.Max(0, c-float64(r.IntN(3)))
		case 2:
			c += r.Float64() * 3
		default:
			c += float64(r.IntN(20))
		}
		counts[i] = c
	}
	sum := 0.0
	switch r.IntN(4) {
	case 0:
		sum = r.NormFloat64() * 100 // arbitrary, possibly impossible
	case 1:
		sum = math.NaN()
	default: // consistent: midpoints of finite buckets
		prev := 0.0
		for i := range k - 1 {
			lo := 0.0
			if i > 0 {
				lo = edges[i-1]
			}
			sum += (counts[i] - prev) * (lo + edges[i]) / 2
			prev = math.Max(prev, counts[i])
		}
	}
	return Histogram{Edges: edges, Counts: counts, Sum: sum}
}

// TestQuantileInvariants checks on random histograms, for every estimator:
// no NaN and no panic when the bracket exists, Lower <= Estimate <= Upper,
// the estimate equal to the bracket of QuantileBracket, and brackets and
// estimates non-decreasing in q.
func TestQuantileInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 800 {
		h := randomHistogram(r)
		for _, e := range []Estimator{Density, MeanFit, Linear, LogLinear} {
			prev := Bounded{Estimate: math.Inf(-1), Lower: math.Inf(-1), Upper: math.Inf(-1)}
			for i := 0; i <= 20; i++ {
				q := float64(i) / 20
				b := e.Quantile(q, h)
				lo, up, ok := QuantileBracket(q, h)
				if !ok {
					if !math.IsNaN(b.Estimate) {
						t.Fatalf("%v q=%v %+v: no bracket but estimate %+v", e, q, h, b)
					}
					continue
				}
				if b.Lower != lo || b.Upper != up || math.IsNaN(b.Estimate) || b.Estimate < lo || b.Estimate > up {
					t.Fatalf("%v q=%v %+v: estimate %+v, bracket (%v, %v]", e, q, h, b, lo, up)
				}
				if b.Estimate < prev.Estimate || b.Lower < prev.Lower || b.Upper < prev.Upper {
					t.Fatalf("%v %+v: q=%v gives %+v after %+v", e, h, q, b, prev)
				}
				prev = b
			}
		}
	}
}

// TestGoodCountInvariants checks on random histograms that good counts are
// ordered, within [0, n], non-decreasing in the threshold, and ratios in [0, 1].
func TestGoodCountInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 800 {
		h := randomHistogram(r)
		b, _ := prepare(h)
		for _, e := range []Estimator{Density, MeanFit, Linear, LogLinear} {
			prev := Exact(0)
			for _, th := range []float64{-1, 0, 1e-3, 0.01, 0.1, 0.3, 0.5, 1, 2, 5, 10, 100, 1e6, inf} {
				g := e.GoodCount(th, h)
				checkBounded(t, "good count", g)
				if g.Lower < 0 || g.Upper > b.n || g.Estimate < prev.Estimate || g.Lower < prev.Lower || g.Upper < prev.Upper {
					t.Fatalf("%v %+v threshold %v: %+v after %+v (n=%v)", e, h, th, g, prev, b.n)
				}
				prev = g
				if a, ok := e.Attainment(th, h); ok {
					checkBounded(t, "attainment", a)
					if a.Lower < 0 || a.Upper > 1+1e-12 {
						t.Fatalf("attainment out of [0, 1]: %+v", a)
					}
				}
			}
		}
	}
}

// TestEvaluateWindowInvariants runs EvaluateWindow on random windows.
func TestEvaluateWindowInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	slos := []SLO{interactive, {Name: "all", Objectives: []Objective{{TTFT, 1}, {TPOT, 0.1}, {ITL, 0.1}, {E2E, 10}, {Queue, 1}}, Goal: 0.5}}
	for range 1000 {
		w := Window{Start: t0, End: t0.Add(secondsDuration(r.Float64() * 100)), Latency: map[Metric]Histogram{}}
		for _, m := range Metrics {
			if r.IntN(4) > 0 {
				w.Latency[m] = randomHistogram(r)
			}
		}
		w.GenerationTokens = randomHistogram(r)
		w.Running = Gauge{Known: r.IntN(2) == 0, AtStart: float64(r.IntN(5)), AtEnd: float64(r.IntN(5)), Mean: r.Float64()}
		w.Waiting = Gauge{Known: r.IntN(2) == 0, AtStart: float64(r.IntN(5)), AtEnd: float64(r.IntN(5)), Mean: r.Float64()}
		w.HasTokenCounters = r.IntN(2) == 0
		w.GenerationTokensTotal = float64(r.IntN(1000))
		checkReport(t, EvaluateWindow(w, slos, Options{Quantiles: []float64{0.99, 0.5, 0.9, 0, 1, -1, math.NaN()}, Estimator: Estimator(r.IntN(4))}))
	}
}
