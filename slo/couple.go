package slo

import (
	"math"
	"slices"
)

// CoupledInterval is one scrape interval of a window as the window-wide
// coupling reads it: a source of first tokens and, when Counted, a finish
// interval whose joint is summed.
type CoupledInterval struct {
	// Bad and Good are the most TTFT-bad and TTFT-good first tokens of the
	// interval (Source.Bad and Source.Good).
	Bad, Good float64
	// Counted says the interval's finishers are in the window's sums.
	Counted bool
	// N is its finishers; FinishLo and FinishHi bound those meeting every
	// finish-observed objective, TTFTLo and TTFTHi the TTFT-good among them
	// (IntervalResult.FinishGood and TTFTGood).
	N, FinishLo, FinishHi, TTFTLo, TTFTHi float64
	// From is the index, in the slice given to CoupleWindow, of the earliest
	// interval that can hold the first token of one of its finishers; -1
	// when they can reach before the slice's first interval.
	From int
}

// CoupleWindow bounds the requests of a window's counted intervals that met
// every objective, sharing each interval's first tokens among all the
// finish intervals that can draw on them. The per-interval bounds let every
// finish interval claim the same TTFT-bad (or TTFT-good) first tokens; the
// true assignment gives each first token to one finisher at most. ivs[:pre]
// are intervals before the window, read only as sources; ivs[pre:] are the
// window's. badAtStart and goodAtStart bound the TTFT-bad and TTFT-good
// requests past their first token in flight at the window's start.
//
// Proof. For a counted interval j with n_j finishers, G_j of them TTFT-good
// and F_j meeting the finish-observed objectives, Fréchet gives joint_j in
// [max(0, F_j − B_j), min(G_j, F_j)] with B_j = n_j − G_j the TTFT-bad ones.
// So Σ joint_j >= Σ FinishLo_j − Σ min(B_j, FinishLo_j) and Σ joint_j <= Σ
// min(G_j, FinishHi_j). Each TTFT-bad finisher of j had its first token in
// one interval i in [From_j, j] (or before ivs[0] when From_j = −1), and
// distinct finishers are distinct first tokens. Every first token before the
// window that a window finisher drew was in flight at the window's start, so
// those number at most badAtStart together. The true B_j are therefore a
// feasible flow of two transportation problems, each keeping part of these
// facts: in the first, source i gives at most Bad_i (those of ivs[:pre]
// included) and everything before ivs[0] at most badAtStart; in the second,
// everything before the window gives at most badAtStart as one source. In
// both, sink j takes at most min(n_j − TTFTLo_j, FinishLo_j) and only from
// [From_j, j]. Σ min(B_j, FinishLo_j) is at most the lesser optimum, which
// bounds the lower side; the same with Good, goodAtStart and min(TTFTHi_j,
// FinishHi_j) bounds the upper side. Each sink draws from consecutive
// sources, so each problem is a b-matching in a convex bipartite graph,
// which maxFlowConvex solves exactly. Dropping constraints (the in-flight
// caps between scrapes) only raises an optimum, so the bounds stay valid.
func CoupleWindow(ivs []CoupledInterval, pre int, badAtStart, goodAtStart float64) Bounded {
	return CoupleWindowIn(ivs, pre, badAtStart, goodAtStart, nil)
}

// CoupleWindowIn is CoupleWindow with its transportation problems' memory
// taken from s (nil: allocated for the call), the same bound to the bit:
// every slice it takes is cleared or written before it is read.
func CoupleWindowIn(ivs []CoupledInterval, pre int, badAtStart, goodAtStart float64, s *CoupleScratch) Bounded {
	if s == nil {
		s = new(CoupleScratch)
	}
	finLo, finHi := 0.0, 0.0
	buf := s.floatsOf(3 * len(ivs))
	badCaps, goodCaps, left := buf[:len(ivs)], buf[len(ivs):2*len(ivs)], buf[2*len(ivs):]
	clear(buf[:2*len(ivs)]) // the caps of the sinks skipped below are 0
	for j, iv := range ivs {
		if j < pre || !iv.Counted || !(iv.N > 0) {
			continue
		}
		finLo += math.Max(iv.FinishLo, 0)
		finHi += math.Max(iv.FinishHi, 0)
		badCaps[j] = math.Max(0, math.Min(iv.N-iv.TTFTLo, iv.FinishLo))
		goodCaps[j] = math.Max(0, math.Min(iv.TTFTHi, iv.FinishHi))
	}
	fl := flow{ivs: ivs, left: left, skip: s.intsOf(2*len(ivs) + 1)}
	fl.reachFrom()
	bad := fl.maxFlowConvex(0, badCaps, badAtStart, false)
	good := fl.maxFlowConvex(0, goodCaps, goodAtStart, true)
	if pre > 0 { // with pre = 0 the second problem is the first
		bad = math.Min(bad, fl.maxFlowConvex(pre, badCaps, badAtStart, false))
		good = math.Min(good, fl.maxFlowConvex(pre, goodCaps, goodAtStart, true))
	}
	res := Bounded{Lower: math.Max(0, finLo-bad), Upper: math.Min(good, finHi)}
	res.Upper = math.Max(res.Lower, res.Upper) // only inconsistent inputs cross them
	return res
}

// CoupleScratch is memory that CoupleWindowIn and CoupleTokensIn reuse
// from one call to the next, so that a caller coupling many windows in a
// row (an evaluation of every target) allocates it once instead of per
// window. Its zero value is ready; it holds nothing a result depends on
// between calls, and one goroutine at a time may use it.
type CoupleScratch struct {
	floats []float64
	ints   []int
	steps  stepHeap
}

// floatsOf returns n floats of s's memory (their contents undefined),
// grown when it has less.
func (s *CoupleScratch) floatsOf(n int) []float64 {
	if cap(s.floats) < n {
		s.floats = make([]float64, n)
	}
	return s.floats[:n]
}

// intsOf is floatsOf for ints.
func (s *CoupleScratch) intsOf(n int) []int {
	if cap(s.ints) < n {
		s.ints = make([]int, n)
	}
	return s.ints[:n]
}

// flow is the scratch of CoupleWindow's transportation problems over ivs:
// left is each sink's capacity left; skip holds, in its first len(ivs)
// entries, minFrom (see reachFrom) and in the other len(ivs)+1 the open
// sinks' links (see open).
type flow struct {
	ivs  []CoupledInterval
	left []float64
	skip []int
}

// reachFrom sets minFrom[j], the least From of the sinks ivs[j:]: a source
// before it can give to none of them, whichever problem reads them
// (max(From, first−1) over them is at least max(minFrom[j], first−1)).
func (fl *flow) reachFrom() {
	n := len(fl.ivs)
	minFrom := fl.skip[:n]
	for j := n - 1; j >= 0; j-- {
		minFrom[j] = fl.ivs[j].From
		if j+1 < n {
			minFrom[j] = min(minFrom[j], minFrom[j+1])
		}
	}
}

// open is the first sink at or after j that is not yet full (left > 0, or
// NaN: a sink maxFlowConvex does not skip), len(ivs) when none is; a full
// sink links to the next one, the links halved as they are followed.
func (fl *flow) open(j int) int {
	next := fl.skip[len(fl.ivs):]
	for next[j] != j {
		next[j] = next[next[j]]
		j = next[j]
	}
	return j
}

// maxFlowConvex is the most the sinks ivs[first:] (caps[j] each, drawing
// from sources From_j..j, where a From_j before first stands for the
// window's start holding atStart) can take from the sources ivs[first:]
// (each its Good when good is set, else its Bad). Glover's rule solves it
// exactly: give each source, in time order, to the open sinks that can draw
// on it, the one whose range ends first first (here the earliest sink, as
// each range ends at its own interval); an exchange argument shows some
// optimum agrees with every choice.
//
// A source is offered to the sinks from its own interval on, in order, as
// the rule reads; the sinks it passes over without a change are skipped
// unread: a full one (its capacity left only falls, so it stays full) and,
// once no later sink can draw on the source (minFrom), all the rest. The
// same sinks take the same amounts in the same order, so every sum is the
// same float as over every sink.
func (fl *flow) maxFlowConvex(first int, caps []float64, atStart float64, good bool) float64 {
	ivs, left := fl.ivs, fl.left
	n := len(ivs)
	copy(left, caps)
	minFrom, next := fl.skip[:n], fl.skip[n:]
	for j := range n {
		next[j] = j
		if left[j] <= 0 {
			next[j] = j + 1
		}
	}
	next[n] = n
	total := 0.0
	give := func(i int, s float64) {
		if math.IsNaN(s) || s <= 0 {
			return
		}
		for j := fl.open(max(i, first)); j < n && s > 0; j = fl.open(j + 1) {
			if max(minFrom[j], first-1) > i {
				break // no sink from j on can draw on source i
			}
			if max(ivs[j].From, first-1) > i {
				continue
			}
			take := math.Min(s, left[j])
			left[j] -= take
			s -= take
			total += take
			if left[j] <= 0 {
				next[j] = j + 1
			}
		}
	}
	give(first-1, atStart)
	for i := first; i < n; i++ {
		if good {
			give(i, ivs[i].Good)
		} else {
			give(i, ivs[i].Bad)
		}
	}
	return total
}

// TokenCurve is one interval's bounds on the generation tokens of its good
// requests (those meeting every objective) as a function of how many they
// are, kept as the steps of a convex minorant and a concave majorant so
// that CoupleTokensIn can share a window's bound on their count among its
// intervals. Build it once per interval with NewTokenCurve; its fields are
// exported only so that a state file can keep it.
type TokenCurve struct {
	// From and To are the least and most good requests the interval's
	// bounds allow; LowAt is the least tokens at From, HighAt the most at To.
	From, To      int
	LowAt, HighAt float64
	// LowUp are the minorant's steps upward from From; HighDn the
	// majorant's steps downward from To.
	LowUp, HighDn []float64
}

// NewTokenCurve tabulates, for every whole count g in good, GoodputTokens'
// bounds on the tokens of g good requests among the finishers whose token
// histogram is tokens; ok is false when the histogram is invalid.
func NewTokenCurve(good Bounded, tokens Histogram) (TokenCurve, bool) {
	b, ok := prepare(tokens)
	if !ok || math.IsNaN(b.sum) {
		return TokenCurve{}, false
	}
	total := math.Max(b.sum, 0)
	from := int(math.Max(0, math.Ceil(good.Lower-wholeNoise)))
	to := max(from, int(math.Min(b.n, math.Floor(good.Upper+wholeNoise))))
	lo := make([]float64, to-from+1)
	hi := make([]float64, to-from+1)
	for g := from; g <= to; g++ {
		lo[g-from], hi[g-from] = b.goodTokens(float64(g), float64(g), total)
	}
	c := TokenCurve{From: from, To: to, LowAt: lo[0], HighAt: hi[len(hi)-1]}
	if to > from {
		c.LowUp = hullSteps(lo, true)
		c.HighDn = hullSteps(hi, false)
		slices.Reverse(c.HighDn) // removing from the top costs the last steps first
	}
	return c, true
}

// CoupleTokensIn bounds the generation tokens of a window's good requests
// from each counted interval's curve and good, the window's bound on their
// total count (tighter than the sum of the intervals' when CoupleWindow
// shared first tokens among them), with its heap of steps kept in s (nil:
// allocated for the call): allocate empties the heap it is given before it
// pushes, so the memory never changes the bound.
//
// Proof. Let g_j be interval j's true good count: a whole number between
// its curve's from and to, and Σ g_j lies in good. For any whole g,
// GoodputTokens' proof bounds the tokens of g good requests among j's
// finishers by [L_j(g), U_j(g)] (goodTokens with gLo = gHi = g), so the
// window's good tokens are at least the minimum of Σ L_j(g_j) and at most
// the maximum of Σ U_j(g_j) over every such vector. Replacing each L_j by
// its greatest convex minorant (and U_j by its least concave majorant) only
// lowers the minimum (raises the maximum). A separable convex sum under box
// constraints and Σ g_j >= good.Lower is minimised exactly by starting
// every g_j at its least value and adding, unit by unit, the cheapest next
// step (the steps of a convex function only grow); the concave maximum
// under Σ g_j <= good.Upper likewise by removing the cheapest steps from
// the top. Where the boxes cannot meet the sum, stopping at their corner is
// the optimum over fewer constraints, still a bound.
func CoupleTokensIn(curves []*TokenCurve, good Bounded, s *CoupleScratch) Bounded {
	if s == nil {
		s = new(CoupleScratch)
	}
	if cap(s.steps) < len(curves) {
		s.steps = make(stepHeap, 0, len(curves))
	}
	h := s.steps // one heap for both: each empties it
	lower := allocate(curves, math.Ceil(good.Lower-wholeNoise), true, h)
	upper := allocate(curves, math.Floor(good.Upper+wholeNoise), false, h)
	return Bounded{Lower: lower, Upper: math.Max(lower, upper)}
}

// wholeNoise absorbs the float noise of sums of whole counts.
const wholeNoise = 1e-6

// hullSteps returns the unit steps of the greatest convex minorant (convex)
// or the least concave majorant (!convex) of v over 0..len(v)−1.
func hullSteps(v []float64, convex bool) []float64 {
	hull := []int{}
	for x := range v {
		for len(hull) >= 2 {
			a, b := hull[len(hull)-2], hull[len(hull)-1]
			// Cross product of (b−a, x−a): drop b when it lies on the wrong
			// side of the chord from a to x.
			cross := float64(b-a)*(v[x]-v[a]) - float64(x-a)*(v[b]-v[a])
			if (convex && cross <= 0) || (!convex && cross >= 0) {
				hull = hull[:len(hull)-1]
				continue
			}
			break
		}
		hull = append(hull, x)
	}
	steps := make([]float64, 0, len(v))
	for k := 1; k < len(hull); k++ {
		a, b := hull[k-1], hull[k]
		slope := (v[b] - v[a]) / float64(b-a)
		for range b - a {
			steps = append(steps, slope)
		}
	}
	return steps
}

// allocate is the least Σ L_j (low) with Σ g_j >= need, or the greatest Σ
// U_j (!low) with Σ g_j <= need, taking the cheapest steps first. The heap
// of next steps does what container/heap's Init, Pop and Push do, compare
// for compare and swap for swap, without boxing a step in an interface at
// every pop and push: the steps come out in the same order, so the sums add
// the same floats in the same order. The heap is kept in h's array (its
// contents are dropped), which has room for a step per curve: it never holds
// more, as each pop is followed by at most one push.
func allocate(curves []*TokenCurve, need float64, low bool, h stepHeap) float64 {
	total, have := 0.0, 0.0
	h = h[:0]
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
	h.init()
	for len(h) > 0 && ((low && have < need) || (!low && have > need)) {
		s := h.pop()
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
			h.push(step{cost: steps[next], curve: s.curve, next: next})
		}
	}
	return total
}

// step is one unit step of a token curve, by its cost.
type step struct {
	cost        float64
	curve, next int // next: the step's index in its curve
}

// stepHeap is a min-heap of steps by cost, kept as container/heap keeps
// one (the same sift-up and sift-down).
type stepHeap []step

// init orders h into a heap (container/heap.Init).
func (h stepHeap) init() {
	n := len(h)
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i, n)
	}
}

// push adds s (container/heap.Push).
func (h *stepHeap) push(s step) {
	*h = append(*h, s)
	h.up(len(*h) - 1)
}

// pop removes and returns the cheapest step (container/heap.Pop).
func (h *stepHeap) pop() step {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	old.down(0, n)
	s := old[n]
	*h = old[:n]
	return s
}

func (h stepHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !(h[j].cost < h[i].cost) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h stepHeap) down(i, n int) {
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h[j2].cost < h[j1].cost {
			j = j2 // right child
		}
		if !(h[j].cost < h[i].cost) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
