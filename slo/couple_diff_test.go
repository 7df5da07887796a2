package slo

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

// allocatePlain is allocate as it was written over container/heap: the
// reference the typed heap must match to the bit.
func allocatePlain(curves []*TokenCurve, need float64, low bool) float64 {
	total, have := 0.0, 0.0
	var h plainHeap
	for j, c := range curves {
		steps := c.HighDn
		if low {
			total += c.LowAt
			have += float64(c.From)
			steps = c.LowUp
		} else {
			total += c.HighAt
			have += float64(c.To)
		}
		if len(steps) > 0 {
			h = append(h, step{cost: steps[0], curve: j})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 && ((low && have < need) || (!low && have > need)) {
		s := heap.Pop(&h).(step)
		steps := curves[s.curve].HighDn
		if low {
			total += s.cost
			have++
			steps = curves[s.curve].LowUp
		} else {
			total -= s.cost
			have--
		}
		if next := s.next + 1; next < len(steps) {
			heap.Push(&h, step{cost: steps[next], curve: s.curve, next: next})
		}
	}
	return total
}

// plainHeap is the container/heap min-heap of steps allocatePlain uses.
type plainHeap []step

func (h plainHeap) Len() int           { return len(h) }
func (h plainHeap) Less(i, j int) bool { return h[i].cost < h[j].cost }
func (h plainHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *plainHeap) Push(x any)        { *h = append(*h, x.(step)) }
func (h *plainHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// randomSteps draws n step costs: few distinct values so that ties are
// common, sometimes out of order (float rounding can leave a hull's slopes
// so), now and then NaN or an infinity.
func randomSteps(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for k := range out {
		switch x := r.IntN(40); {
		case x == 0:
			out[k] = math.NaN()
		case x == 1:
			out[k] = math.Inf(1)
		case x < 20:
			out[k] = float64(r.IntN(6)) * 0.1
		default:
			out[k] = r.Float64() * 300
		}
	}
	return out
}

// TestAllocateIsThePlainHeap compares allocate with its container/heap
// original on random curves, both arbitrary ones (ties, unordered steps,
// NaN) and those NewTokenCurve builds from random histograms, at every
// need from below the curves' least total to above their most, asserting
// equal bits.
func TestAllocateIsThePlainHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 29))
	edges := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, math.Inf(1)}
	compared := 0
	// allocate keeps its heap in the array it is given: one reused (as
	// CoupleTokens reuses it) and one without room (grown as needed).
	heapOf := [2]stepHeap{make(stepHeap, 0, 30), nil}
	var shared CoupleScratch // CoupleTokensIn's memory, reused over every trial
	for trial := range 1200 {
		curves := make([]*TokenCurve, r.IntN(30))
		from, to := 0, 0
		for j := range curves {
			var c TokenCurve
			if trial%2 == 0 {
				f := r.IntN(5)
				n := r.IntN(15)
				c = TokenCurve{From: f, To: f + n, LowAt: r.Float64() * 100, HighAt: r.Float64() * 1000,
					LowUp: randomSteps(r, n), HighDn: randomSteps(r, n)}
			} else {
				counts := make([]float64, len(edges))
				sum := 0.0
				n := r.IntN(40)
				for range n {
					tok := float64(1 + r.IntN(600))
					sum += tok
					for e := range edges {
						if tok <= edges[e] {
							counts[e]++
						}
					}
				}
				g := float64(r.IntN(n + 1))
				var ok bool
				c, ok = NewTokenCurve(Bounded{Lower: math.Max(0, g-float64(r.IntN(4))), Upper: g + float64(r.IntN(4))}, Histogram{Edges: edges, Counts: counts, Sum: sum})
				if !ok {
					t.Fatalf("trial %d: no curve", trial)
				}
			}
			curves[j] = &c
			from += c.From
			to += c.To
		}
		for range 3 {
			lo := float64(from-2) + r.Float64()*float64(to-from+4)
			good := Bounded{Lower: lo, Upper: lo + r.Float64()*float64(to-from+2)}
			got, want := CoupleTokensIn(curves, good, &shared), CoupleTokens(curves, good)
			if math.Float64bits(got.Lower) != math.Float64bits(want.Lower) && !(math.IsNaN(got.Lower) && math.IsNaN(want.Lower)) ||
				math.Float64bits(got.Upper) != math.Float64bits(want.Upper) && !(math.IsNaN(got.Upper) && math.IsNaN(want.Upper)) {
				t.Fatalf("trial %d, good %+v: %+v in reused memory, %+v in its own", trial, good, got, want)
			}
		}
		for need := from - 2; need <= to+2; need++ {
			for _, low := range []bool{true, false} {
				got, want := allocate(curves, float64(need), low, heapOf[trial%2]), allocatePlain(curves, float64(need), low)
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("trial %d, need %d, low %v: %v, the plain heap gives %v", trial, need, low, got, want)
				}
				compared++
			}
		}
	}
	t.Logf("%d allocations compared", compared)
}

// coupleWindowPlain is CoupleWindow as it was first written: both
// transportation problems solved for every window, pre = 0 included, with
// the supply read through a function.
func coupleWindowPlain(ivs []CoupledInterval, pre int, badAtStart, goodAtStart float64) Bounded {
	finLo, finHi := 0.0, 0.0
	buf := make([]float64, 3*len(ivs))
	badCaps, goodCaps, left := buf[:len(ivs)], buf[len(ivs):2*len(ivs)], buf[2*len(ivs):]
	for j, iv := range ivs {
		if j < pre || !iv.Counted || !(iv.N > 0) {
			continue
		}
		finLo += math.Max(iv.FinishLo, 0)
		finHi += math.Max(iv.FinishHi, 0)
		badCaps[j] = math.Max(0, math.Min(iv.N-iv.TTFTLo, iv.FinishLo))
		goodCaps[j] = math.Max(0, math.Min(iv.TTFTHi, iv.FinishHi))
	}
	badOf := func(iv CoupledInterval) float64 { return iv.Bad }
	goodOf := func(iv CoupledInterval) float64 { return iv.Good }
	bad := math.Min(maxFlowPlain(ivs, 0, badCaps, left, badAtStart, badOf), maxFlowPlain(ivs, pre, badCaps, left, badAtStart, badOf))
	good := math.Min(maxFlowPlain(ivs, 0, goodCaps, left, goodAtStart, goodOf), maxFlowPlain(ivs, pre, goodCaps, left, goodAtStart, goodOf))
	res := Bounded{Lower: math.Max(0, finLo-bad), Upper: math.Min(good, finHi)}
	res.Upper = math.Max(res.Lower, res.Upper)
	return res
}

// maxFlowPlain is maxFlowConvex with the supply read through a function.
func maxFlowPlain(ivs []CoupledInterval, first int, caps, left []float64, atStart float64, supply func(CoupledInterval) float64) float64 {
	copy(left, caps)
	total := 0.0
	give := func(i int, s float64) {
		if math.IsNaN(s) || s <= 0 {
			return
		}
		for j := max(i, first); j < len(ivs) && s > 0; j++ {
			if left[j] <= 0 || max(ivs[j].From, first-1) > i {
				continue
			}
			take := math.Min(s, left[j])
			left[j] -= take
			s -= take
			total += take
		}
	}
	give(first-1, atStart)
	for i := first; i < len(ivs); i++ {
		give(i, supply(ivs[i]))
	}
	return total
}

// TestCoupleWindowIsThePlainOne compares CoupleWindow with its first
// form on random windows, with and without intervals before the window,
// of up to 340 intervals, with reaches in any order and with fractional,
// NaN and infinite entries, asserting equal bits; and CoupleWindowIn in
// one scratch reused over every window (of every size, so that each finds
// what a larger or different one left) with CoupleWindow.
func TestCoupleWindowIsThePlainOne(t *testing.T) {
	var shared CoupleScratch
	r := rand.New(rand.NewPCG(31, 37))
	odd := []float64{math.NaN(), math.Inf(1), -1, 0.5, 1e-300}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for trial := range 20000 {
		c := randomCoupled(r, r.IntN(4), 1+r.IntN(12))
		if trial%10 == 9 {
			// An hour of intervals, where skipping the full sinks and
			// those that cannot draw on a source saves the most.
			c = randomCoupled(r, r.IntN(40), 1+r.IntN(300))
		}
		if trial%7 == 0 {
			for j := range c.ivs { // reaches in any order, -1 among them
				c.ivs[j].From = r.IntN(j+2) - 1
			}
		}
		if trial%3 == 0 {
			for j := range c.ivs {
				iv := &c.ivs[j]
				for _, f := range []*float64{&iv.Bad, &iv.Good, &iv.N, &iv.FinishLo, &iv.FinishHi, &iv.TTFTLo, &iv.TTFTHi} {
					switch x := r.IntN(12); {
					case x == 0:
						*f = odd[r.IntN(len(odd))]
					case x < 4:
						*f += r.Float64()
					}
				}
			}
		}
		got := CoupleWindow(c.ivs, c.pre, c.badAtStart, c.goodAtStart)
		want := coupleWindowPlain(c.ivs, c.pre, c.badAtStart, c.goodAtStart)
		if !same(got.Lower, want.Lower) || !same(got.Upper, want.Upper) || !same(got.Estimate, want.Estimate) {
			t.Fatalf("trial %d: %+v, the plain coupling gives %+v\n%+v pre %d", trial, got, want, c.ivs, c.pre)
		}
		if in := CoupleWindowIn(c.ivs, c.pre, c.badAtStart, c.goodAtStart, &shared); !same(in.Lower, got.Lower) || !same(in.Upper, got.Upper) || !same(in.Estimate, got.Estimate) {
			t.Fatalf("trial %d: %+v in reused memory, %+v in its own\n%+v pre %d", trial, in, got, c.ivs, c.pre)
		}
	}
}
