package slo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// coupledCase is a window with a known true assignment of first tokens to
// finishes, and the facts a scraper sees of it, loosened at random as real
// brackets are.
type coupledCase struct {
	ivs                     []CoupledInterval
	pre                     int
	badAtStart, goodAtStart float64
	joint                   float64 // true requests meeting every objective
}

// randomCoupled draws a window of k intervals after pre earlier ones: each
// request gets a first-token interval (possibly before them all), a finish
// interval at most maxLag later, a TTFT verdict and a finish verdict.
func randomCoupled(r *rand.Rand, pre, k int) coupledCase {
	n := pre + k
	c := coupledCase{ivs: make([]CoupledInterval, n), pre: pre}
	trueBad := make([]float64, n)
	trueGood := make([]float64, n)
	g := make([]float64, n) // TTFT-good finishers per sink
	f := make([]float64, n) // finish-good finishers per sink
	from := make([]int, n)
	for j := range from {
		from[j] = j
	}
	requests := r.IntN(60)
	for range requests {
		first := r.IntN(n+1) - 1 // -1: before every interval kept
		fin := first + r.IntN(3)
		ttftGood := r.Float64() < 0.6
		finGood := r.Float64() < 0.7
		if first >= 0 {
			if ttftGood {
				trueGood[first]++
			} else {
				trueBad[first]++
			}
		}
		if fin < pre || fin >= n {
			continue // finished before the window or after it
		}
		if first < pre { // in flight at the window's start
			if ttftGood {
				c.goodAtStart++
			} else {
				c.badAtStart++
			}
		}
		c.ivs[fin].N++
		if ttftGood {
			g[fin]++
		}
		if finGood {
			f[fin]++
		}
		if ttftGood && finGood {
			c.joint++
		}
		from[fin] = min(from[fin], first)
	}
	loosen := func(v float64) float64 { return v + float64(r.IntN(3)) }
	c.badAtStart, c.goodAtStart = loosen(c.badAtStart), loosen(c.goodAtStart)
	for j := range c.ivs {
		iv := &c.ivs[j]
		iv.Counted = j >= pre
		iv.Bad, iv.Good = loosen(trueBad[j]), loosen(trueGood[j])
		iv.TTFTLo = math.Max(0, g[j]-float64(r.IntN(3)))
		iv.TTFTHi = math.Min(iv.N, loosen(g[j]))
		iv.FinishLo = math.Max(0, f[j]-float64(r.IntN(2)))
		iv.FinishHi = math.Min(iv.N, loosen(f[j]))
		iv.From = max(from[j]-r.IntN(2), -1)
	}
	return c
}

// TestCoupleWindowHoldsTheTruth draws thousands of windows with a known
// assignment: the true number of requests meeting every objective must lie
// in CoupleWindow's bounds, with no tolerance.
func TestCoupleWindowHoldsTheTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 13))
	narrower := 0
	for trial := range 5000 {
		c := randomCoupled(r, r.IntN(3), 1+r.IntN(6))
		got := CoupleWindow(c.ivs, c.pre, c.badAtStart, c.goodAtStart)
		if c.joint < got.Lower || c.joint > got.Upper {
			t.Fatalf("trial %d: joint %v outside [%v, %v]\n%+v", trial, c.joint, got.Lower, got.Upper, c)
		}
		// The per-interval Fréchet sum the coupling improves on.
		lo, hi := 0.0, 0.0
		for _, iv := range c.ivs[c.pre:] {
			lo += math.Max(0, iv.FinishLo+iv.TTFTLo-iv.N)
			hi += math.Min(iv.FinishHi, iv.TTFTHi)
		}
		if got.Lower < lo-1e-9 || got.Upper > hi+1e-9 {
			t.Fatalf("trial %d: coupled [%v, %v] wider than the per-interval sum [%v, %v]", trial, got.Lower, got.Upper, lo, hi)
		}
		if got.Upper-got.Lower < hi-lo {
			narrower++
		}
	}
	if narrower == 0 {
		t.Errorf("the coupling never narrowed the per-interval bounds")
	}
	t.Logf("narrower than the per-interval sum in %d of 5000 windows", narrower)
}

// TestMaxFlowConvexIsExact compares Glover's greedy with augmenting paths on
// the same small networks: a greedy that found less than the optimum would
// make CoupleWindow's bounds exclude some feasible truth.
func TestMaxFlowConvexIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 3000 {
		k := 1 + r.IntN(7)
		ivs := make([]CoupledInterval, k)
		caps := make([]float64, k)
		for j := range ivs {
			ivs[j] = CoupledInterval{Bad: float64(r.IntN(6)), From: r.IntN(j+2) - 1}
			caps[j] = float64(r.IntN(7))
		}
		atStart := float64(r.IntN(5))
		fl := flow{ivs: ivs, left: make([]float64, k), skip: make([]int, 2*k+1)}
		fl.reachFrom()
		got := fl.maxFlowConvex(0, caps, atStart, false)
		want := augmentingMaxFlow(ivs, caps, atStart)
		if got != want {
			t.Fatalf("trial %d: greedy %v, max flow %v\n%+v caps %v start %v", trial, got, want, ivs, caps, atStart)
		}
	}
}

// augmentingMaxFlow solves the same transportation problem by
// Ford–Fulkerson with breadth-first augmenting paths on integer capacities.
func augmentingMaxFlow(ivs []CoupledInterval, caps []float64, atStart float64) float64 {
	k := len(ivs)
	// Nodes: 0 source, 1..k+1 supplies (1 is "before"), k+2..2k+1 sinks, 2k+2 target.
	n := 2*k + 3
	capacity := make([][]float64, n)
	for i := range capacity {
		capacity[i] = make([]float64, n)
	}
	src, dst := 0, n-1
	supplyNode := func(i int) int { return i + 2 } // i = -1 .. k-1
	sinkNode := func(j int) int { return k + 2 + j }
	capacity[src][supplyNode(-1)] = atStart
	for i, iv := range ivs {
		capacity[src][supplyNode(i)] = iv.Bad
	}
	for j, iv := range ivs {
		capacity[sinkNode(j)][dst] = caps[j]
		for i := iv.From; i <= j; i++ {
			capacity[supplyNode(i)][sinkNode(j)] = math.Inf(1)
		}
	}
	total := 0.0
	for {
		prev := make([]int, n)
		for i := range prev {
			prev[i] = -1
		}
		prev[src] = src
		queue := []int{src}
		for len(queue) > 0 && prev[dst] < 0 {
			u := queue[0]
			queue = queue[1:]
			for v := range n {
				if prev[v] < 0 && capacity[u][v] > 0 {
					prev[v] = u
					queue = append(queue, v)
				}
			}
		}
		if prev[dst] < 0 {
			return total
		}
		push := math.Inf(1)
		for v := dst; v != src; v = prev[v] {
			push = math.Min(push, capacity[prev[v]][v])
		}
		for v := dst; v != src; v = prev[v] {
			capacity[prev[v]][v] -= push
			capacity[v][prev[v]] += push
		}
		total += push
	}
}

// TestCoupleTokensHoldsTheTruth draws windows of intervals whose requests
// have known token counts and verdicts, builds each interval's curve from
// its histogram and loosened count bounds, couples them under a loosened
// bound on the true total, and checks the true good tokens lie inside, with
// no tolerance; the result is never wider than the sum of the intervals' own
// GoodputTokens bounds.
func TestCoupleTokensHoldsTheTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 17))
	edges := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, math.Inf(1)}
	narrower := 0
	for trial := range 3000 {
		k := 1 + r.IntN(5)
		curves := make([]*TokenCurve, k)
		truth, goodSum := 0.0, 0.0
		sepLo, sepHi := 0.0, 0.0
		for j := range curves {
			n := r.IntN(12)
			counts := make([]float64, len(edges))
			sum, good, goodTok := 0.0, 0.0, 0.0
			for range n {
				tok := float64(1 + r.IntN(300))
				sum += tok
				for e := range edges {
					if tok <= edges[e] {
						counts[e]++
					}
				}
				if r.Float64() < 0.7 {
					good++
					goodTok += tok
				}
			}
			truth += goodTok
			goodSum += good
			b := Bounded{Lower: math.Max(0, good-float64(r.IntN(3))), Upper: math.Min(float64(n), good+float64(r.IntN(3)))}
			h := Histogram{Edges: edges, Counts: counts, Sum: sum}
			c, ok := NewTokenCurve(b, h)
			if !ok {
				t.Fatalf("trial %d: no curve", trial)
			}
			curves[j] = &c
			if own, ok := GoodputTokens(b, h); ok {
				sepLo += own.Lower
				sepHi += own.Upper
			}
		}
		window := Bounded{Lower: math.Max(0, goodSum-float64(r.IntN(2))), Upper: goodSum + float64(r.IntN(2))}
		got := CoupleTokens(curves, window)
		if truth < got.Lower || truth > got.Upper {
			t.Fatalf("trial %d: good tokens %v outside [%v, %v]", trial, truth, got.Lower, got.Upper)
		}
		if got.Lower < sepLo-1e-9 || got.Upper > sepHi+1e-9 {
			t.Fatalf("trial %d: [%v, %v] wider than the intervals' own [%v, %v]", trial, got.Lower, got.Upper, sepLo, sepHi)
		}
		if got.Upper-got.Lower < sepHi-sepLo-1e-9 {
			narrower++
		}
	}
	if narrower == 0 {
		t.Error("the window's count never narrowed the token bounds")
	}
	t.Logf("narrower than the intervals' own bounds in %d of 3000 windows", narrower)
}

// TestHullSteps checks the minorant and majorant steps on small shapes.
func TestHullSteps(t *testing.T) {
	v := []float64{0, 5, 6, 20}
	lo := hullSteps(v, true) // convex minorant: 0, 3, 6 (chord 0→6), then 14
	if want := []float64{3, 3, 14}; !slices.Equal(lo, want) {
		t.Errorf("convex steps %v, want %v", lo, want)
	}
	if hi := hullSteps(v, false); len(hi) != 3 || hi[0] != hi[1] || hi[1] != hi[2] || math.Abs(hi[0]-20.0/3) > 1e-12 {
		t.Errorf("concave steps %v, want the chord's 20/3 three times", hi) // every point lies under it
	}
	if hi := hullSteps([]float64{0, 10, 12, 13}, false); !slices.Equal(hi, []float64{10, 2, 1}) {
		t.Errorf("concave steps of a concave shape %v, want its own 10, 2, 1", hi)
	}
}

// CoupleTokens is CoupleTokensIn with a heap allocated for the call.
func CoupleTokens(curves []*TokenCurve, good Bounded) Bounded {
	return CoupleTokensIn(curves, good, nil)
}
