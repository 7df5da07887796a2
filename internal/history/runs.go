package history

import (
	"math"
	"slices"
)

// Runs of single-point segments. A target whose counters restart at every
// scrape leaves one segment per scrape, and every tier keeps each
// segment's last point, so a long window (an error budget's period, a
// burn-rate alert's long window) spans as many segments as there were
// scrapes. Summed piece by piece, such a window cost one pass over every
// segment's values at every evaluation: a day of restarts every scrape
// made each evaluation thousands of vector sums, and the cost grew with
// the past.
//
// A segment that was born with a single point and closed after it (the
// next scrape began another segment) has a final increase: that point's
// values, counted from zero. Consecutive such segments with the same layout
// (none continuing another after a layout change) form a run; each is a
// member, and every runBlock-th member keeps the sum of the final values of
// the members before it (cum). A window whose middle holds more than
// runMerge whole members of one run sums them as at most runBlock−1
// members one by one, one difference of two cums, and at most runBlock
// members one by one: a bounded cost however many restarts it spans. Each
// runBlock-th member also carries what the walk over the window's points
// folds over the block that it ends (runBlockAgg), so that the walk crosses
// a block in one step: the window costs a pass over a runBlock-th of its
// members, not over all of them.
//
// Exactness. Every count of a cumulative histogram and every counter vLLM
// exposes is a whole number, and so are its running and waiting gauges;
// whole numbers below 2^53 add exactly in any order, so those come out the
// same to the bit as the piece-by-piece sum. A value that is not whole (a
// histogram's _sum of seconds) is the same sum of the same terms taken in
// another order, so it may differ from the piece-by-piece one in its last
// bits, as any two orders of a float sum may. Windows of at most runMerge
// whole members of a run, which is every window of a target that does not
// restart at nearly every scrape, are summed piece by piece as before.
//
// Membership is decided by the points alone (a closed segment whose start
// is its last point's time was born with that single point), so a history
// restored from a state file has the same members, and equal points give
// equal memory estimates. Memory: each member's record, its share of the
// cums and block aggregates (one of each per runBlock members), counted in
// its segment's bytes (segmentBytes), and the open run's running sum
// (series.run), counted in the series' bytes. A history without such runs
// holds none of it.

// runBlock is how many members of a run share one cum vector and one block
// aggregate.
const runBlock = 8

// runMerge is how many consecutive whole members of a run a window sums one
// by one before it sums them from the cums; at least 2·runBlock, so that a
// merged span always holds a whole block.
const runMerge = 2 * runBlock

// member places a segment in its run.
type member struct {
	// run is the member's run; ord is its place in it.
	run *runState
	ord int
	// cum, at every runBlock-th member, sums the final values of the run's
	// members before it.
	cum []float64
	// blk, on the last member of a block, is what a walk folds over the
	// block.
	blk *runBlockAgg
}

// runState is a run: its newest member, and while the run is open (the
// newest closed segment of the series is its newest member, so the next
// closed segment may join it), the sum of the final values of all its
// members and what its newest block of members holds so far.
type runState struct {
	last *segment
	sum  []float64
	blk  runBlockAgg
}

// open reports whether sg is the newest member of an open run.
func (sg *segment) openRun() *runState {
	if sg == nil || sg.mem == nil || sg.mem.run.last != sg || sg.mem.run.sum == nil {
		return nil
	}
	return sg.mem.run
}

// runBlockAgg is what a walk over a block of runBlock members folds
// (walkWith): the maxima of their points' gauges, the sum of the running
// and waiting gauges (those known and positive) at all of them but the
// last, and whether every member's warm-up start is known. A member's
// single point never changes: the tiers keep every segment's last point,
// and fold a dropped point's maxima only into a later point of the same
// segment.
type runBlockAgg struct {
	maxes    [numGauges]float64
	inFlight float64
	warm     bool
}

// closeSegment notes that last, the last point of its segment, will stay
// its segment's last (a new segment began after it; before is the point
// before last, nil for none), and makes the segment a member of the open
// run or the first of a new one when it was born with that single point;
// another segment closes the open run.
func (s *series) closeSegment(last, before *point) {
	sg := last.seg
	var prevSeg *segment
	if before != nil {
		prevSeg = before.seg
	}
	r := prevSeg.openRun()
	if sg.continues || sg.start != last.t || sg.refs != 1 || len(last.values()) != sg.size {
		s.closeRun(r)
		return
	}
	if r != nil && !sameLayout(r.last, sg) {
		s.closeRun(r)
		r = nil
	}
	was := segmentBytes(sg)
	m := &member{}
	if r == nil {
		r = &runState{sum: make([]float64, sg.size)}
	} else {
		prevBytes := segmentBytes(prevSeg)
		m.ord = prevSeg.mem.ord + 1
		r.last = nil // the open run's sum moves to the new member's bytes
		s.bytes += segmentBytes(prevSeg) - prevBytes
	}
	m.run = r
	if m.ord%runBlock == 0 {
		m.cum = slices.Clone(r.sum)
	}
	for j, v := range last.values() {
		r.sum[j] += v
	}
	sg.mem = m
	r.noteBlock(sg, last)
	r.last = sg
	s.bytes += segmentBytes(sg) - was
}

// closeRun closes the open run r (nil: none): no segment joins it any
// more, and its running sum is let go.
func (s *series) closeRun(r *runState) {
	if r == nil {
		return
	}
	was := segmentBytes(r.last)
	r.sum = nil
	if r.last.refs > 0 {
		s.bytes += segmentBytes(r.last) - was
	}
}

// noteBlock adds the member sg, whose point is last, to the newest block's
// aggregate, and hands the aggregate to sg when it completes the block.
func (r *runState) noteBlock(sg *segment, last *point) {
	ord := sg.mem.ord
	if ord%runBlock == 0 {
		r.blk = runBlockAgg{warm: true}
		for g := range r.blk.maxes {
			r.blk.maxes[g] = math.NaN()
		}
	}
	_, known := sg.warmupStart()
	r.blk.warm = r.blk.warm && known
	for g := range r.blk.maxes {
		r.blk.maxes[g] = maxKnown(r.blk.maxes[g], last.g[g].max)
	}
	if ord%runBlock < runBlock-1 {
		for g := range last.g {
			if v := last.g[g].v; !math.IsNaN(v) && v > 0 {
				r.blk.inFlight += v
			}
		}
		return
	}
	agg := r.blk
	sg.mem.blk = &agg
}

// sameLayout reports whether two segments store the same families with
// the same bucket edges at the same offsets.
func sameLayout(a, b *segment) bool {
	if a.size != b.size || len(a.entries) != len(b.entries) {
		return false
	}
	for i := range a.entries {
		x, y := &a.entries[i], &b.entries[i]
		if x.key != y.key || x.off != y.off || !slices.Equal(x.edges, y.edges) {
			return false
		}
	}
	return true
}

// rebuildRuns recomputes the runs from the points held (after a state
// restore): every segment but the newest closes at its last point.
func (s *series) rebuildRuns() {
	var prev, before *point
	for k := len(s.tiers) - 1; k >= 0; k-- {
		for i := range s.tiers[k] {
			p := &s.tiers[k][i]
			if prev != nil && p.seg != prev.seg {
				s.closeSegment(prev, before)
			}
			before, prev = prev, p
		}
	}
}

// runSpan is a piece of a window that stands for more than runMerge
// consecutive whole members of one run (see walkWith): their final values,
// summed from the members' cums. head holds the point index of the first
// runBlock members, tail that of the newest runBlock, as a ring indexed by
// ord % runBlock.
type runSpan struct {
	from, to int // ords of the first and the last member
	head     [runBlock]int
	tail     [runBlock]int
}

// sum is the sum of the members' final values, in their layout: the
// members before the first block boundary one by one, the whole blocks as
// the difference of two cums, and the members from the last boundary one
// by one.
func (r *runSpan) sum(s *series) []float64 {
	a := (r.from + runBlock - 1) / runBlock * runBlock // first boundary
	z := r.to / runBlock * runBlock                    // last boundary
	ca, cz := s.at(r.head[a-r.from]).seg.mem.cum, s.at(r.tail[z%runBlock]).seg.mem.cum
	acc := make([]float64, len(cz))
	add := func(v []float64) {
		for j := range acc {
			acc[j] += v[j]
		}
	}
	for ord := r.from; ord < a; ord++ {
		add(s.at(r.head[ord-r.from]).values())
	}
	for j := range acc {
		acc[j] += cz[j] - ca[j]
	}
	for ord := z; ord <= r.to; ord++ {
		add(s.at(r.tail[ord%runBlock]).values())
	}
	return acc
}
