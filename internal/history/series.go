package history

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// key names one stored cumulative family: a histogram or a counter.
type key struct {
	kind scrape.Kind
	fam  scrape.Family
}

// entry places one family inside a segment's flat value vector.
type entry struct {
	key
	// off is the first index of the family's values.
	off int
	// edges are a histogram's bucket upper bounds; its counts sit at
	// off..off+len(edges)-1 and its sum at off+len(edges). Nil for counters.
	edges []float64
}

// size is the number of values the entry occupies.
func (e *entry) size() int {
	if e.kind == scrape.KindHistogram {
		return len(e.edges) + 1
	}
	return 1
}

// end is the index just past the entry's values.
func (e *entry) end() int { return e.off + e.size() }

// segment is one run of a model's process, within which every cumulative
// value only grows. Its layout only grows too: a family first seen mid-segment
// is appended, so every point's value vector is a prefix of the layout.
type segment struct {
	entries []entry
	index   map[key]int
	size    int
	// created is the model's `_created` time (Unix seconds), 0 when unknown.
	created float64
	// start is the time of the segment's first point (Unix ns); a segment
	// that continues another after a layout change inherits its start.
	start int64
	// observed is true when the segment began with a restart seen by this
	// history (not merely with the first scrape of the model).
	observed bool
	// continues is true when the segment began with a bucket-layout change of
	// a process that did not restart (nothing decreased, same `_created`):
	// its values continue the previous segment's on the edges both layouts
	// share, instead of counting from zero.
	continues bool
	// refs is the number of held points in the segment (memory accounting);
	// beside the flags, it costs no space.
	refs int32
	// base is the value vector the segment's packed points are encoded
	// against (see pack); nil until the first point is packed, then fixed.
	base []float64
	// mem places the segment in its run of single-point segments, nil
	// unless it is a member (runs.go).
	mem *member
}

func newSegment(start int64, observed bool) *segment {
	return &segment{index: map[key]int{}, start: start, observed: observed}
}

// add appends an entry for k to the layout and returns it.
func (sg *segment) add(k key, edges []float64) *entry {
	e := entry{key: k, off: sg.size}
	if k.kind == scrape.KindHistogram {
		e.edges = slices.Clone(edges)
	}
	sg.entries = append(sg.entries, e)
	sg.index[k] = len(sg.entries) - 1
	sg.size += e.size()
	return &sg.entries[len(sg.entries)-1]
}

// lookup returns the entry for k, or nil.
func (sg *segment) lookup(k key) *entry {
	if i, ok := sg.index[k]; ok {
		return &sg.entries[i]
	}
	return nil
}

// The gauges a window reports, by index into point.gauges.
const (
	gaugeRunning = iota
	gaugeWaiting
	numGauges
)

// gaugeFamily maps a gauge index to its family.
func gaugeFamily(i int) scrape.Family {
	if i == gaugeRunning {
		return scrape.Running
	}
	return scrape.Waiting
}

// gaugeState is one gauge at one point, with running aggregates that make
// window means and maxima exact at every retained point.
type gaugeState struct {
	// v is the value sampled at this point; NaN when the target lacked it.
	v float64
	// integral is ∫ held value dt (value·seconds) from the model's first point
	// to this point, each sample holding until the next; known is the number of
	// seconds of that span whose held value was known.
	integral, known float64
	// max is the largest sample in (previous retained point, this point];
	// NaN when none was known.
	max float64
}

// point is one scrape of one model.
type point struct {
	t   int64 // Unix ns
	seg *segment
	// vals are the cumulative values in the segment's layout order (a prefix
	// of it), or nil when the point is packed into enc (coarse tiers); read
	// them through values.
	vals []float64
	enc  []byte
	g    [numGauges]gaugeState
	// r holds the waiting-by-reason gauges of the newest servers, nil on
	// others and in the coarse tiers (see reasonGauges).
	r *reasonGauges
}

// series is one model's history: points in tiers, tiers[0] the newest and
// finest. Globally, points are ordered tiers[n-1]..., tiers[0], oldest first.
type series struct {
	tiers   [][]point
	resets  int
	latest  *scrape.ModelSample
	latestT int64
	// bytes is the running memory estimate of the points and layouts held
	// (see budget.go).
	bytes int64
}

func newSeries(nTiers int) *series {
	return &series{tiers: make([][]point, nTiers)}
}

// len is the number of points held.
func (s *series) len() int {
	n := 0
	for _, t := range s.tiers {
		n += len(t)
	}
	return n
}

// at returns the i-th point, oldest first.
func (s *series) at(i int) *point {
	for k := len(s.tiers) - 1; k >= 0; k-- {
		if i < len(s.tiers[k]) {
			return &s.tiers[k][i]
		}
		i -= len(s.tiers[k])
	}
	return nil
}

// tierOffset returns the tier holding the i-th point, oldest first, and
// the point's index within it (the tier is -1 when there is no such point).
func (s *series) tierOffset(i int) (tier, off int) {
	for k := len(s.tiers) - 1; k >= 0; k-- {
		if i < len(s.tiers[k]) {
			return k, i
		}
		i -= len(s.tiers[k])
	}
	return -1, 0
}

// last returns the newest point, or nil.
func (s *series) last() *point {
	for k := range s.tiers {
		if n := len(s.tiers[k]); n > 0 {
			return &s.tiers[k][n-1]
		}
	}
	return nil
}

// first returns the oldest point, or nil.
func (s *series) first() *point {
	for k := len(s.tiers) - 1; k >= 0; k-- {
		if len(s.tiers[k]) > 0 {
			return &s.tiers[k][0]
		}
	}
	return nil
}

// lastAtOrBefore returns the index of the newest point with time <= t, or -1.
func (s *series) lastAtOrBefore(t int64) int {
	return sort.Search(s.len(), func(i int) bool { return s.at(i).t > t }) - 1
}

// firstAtOrAfter returns the index of the oldest point with time >= t
// (len when none).
func (s *series) firstAtOrAfter(t int64) int {
	return sort.Search(s.len(), func(i int) bool { return s.at(i).t >= t })
}

// createdTolerance is how much the `_created` start time must move to mean a
// restart. Families of one process are created microseconds apart, so the
// largest of them may shift slightly when a family comes or goes; a real
// restart moves it by at least the model's load time, seconds.
const createdTolerance = 1.0

// segmentBreak says whether ms cannot continue prev's segment, and why.
type segmentBreak int

const (
	// sameSegment: ms continues prev's segment.
	sameSegment segmentBreak = iota
	// layoutChange: a histogram's buckets changed but the process did not
	// restart (nothing decreased on the edges both layouts share, the same
	// `_created`): a new segment that continues the old one's values.
	layoutChange
	// restart: the process start changed or a value decreased: a new segment
	// counting from zero.
	restart
)

// breakBetween compares ms with prev, the segment's last point: a changed
// `_created` or a decreased value is a restart, changed buckets alone a
// layout change. A decrease is looked for on every edge both layouts share
// (+Inf always) and on the sum, so a re-registered histogram that starts
// from zero is a restart, and a layout that merely changes (a target that
// renders its buckets differently) does not double-count its whole past.
func breakBetween(prev *point, ms *scrape.ModelSample) segmentBreak {
	sg := prev.seg
	prevVals := prev.values()
	if ms.Created != 0 && sg.created != 0 && math.Abs(ms.Created-sg.created) >= createdTolerance {
		return restart
	}
	brk := sameSegment
	for f, h := range ms.Histograms {
		e := sg.lookup(key{scrape.KindHistogram, f})
		if e == nil {
			continue
		}
		old := prevVals[e.off:e.end()]
		if h.Sum < old[len(e.edges)] {
			return restart
		}
		if slices.Equal(e.edges, h.Edges) {
			for i, c := range h.Counts {
				if c < old[i] {
					return restart
				}
			}
			continue
		}
		brk = layoutChange
		if decreasedOnCommonEdges(e.edges, old, h.Edges, h.Counts) {
			return restart
		}
	}
	for f, v := range ms.Counters {
		if e := sg.lookup(key{scrape.KindCounter, f}); e != nil && v < prevVals[e.off] {
			return restart
		}
	}
	return brk
}

// decreasedOnCommonEdges reports whether any cumulative count on an edge
// present in both layouts is lower in the new one.
func decreasedOnCommonEdges(oldEdges, oldCounts, newEdges, newCounts []float64) bool {
	for i, j := 0, 0; i < len(oldEdges) && j < len(newEdges); {
		switch {
		case oldEdges[i] == newEdges[j]:
			if newCounts[j] < oldCounts[i] {
				return true
			}
			i++
			j++
		case oldEdges[i] < newEdges[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// add appends a validated sample taken at t and reports whether it started a
// new segment after an earlier one (a reset).
func (s *series) add(t int64, ms *scrape.ModelSample) bool {
	prev := s.last()
	brk := sameSegment
	if prev != nil {
		brk = breakBetween(prev, ms)
	}
	reset := brk == restart
	sg := segmentFor(prev, brk, t)
	if prev != nil && sg != prev.seg {
		var before *point
		if n := s.len(); n >= 2 {
			before = s.at(n - 2)
		}
		s.closeSegment(prev, before)
	}
	if sg.created == 0 {
		sg.created = ms.Created
	}
	s.grow(sg, ms)
	p := point{t: t, seg: sg, vals: sg.valuesOf(prev, ms)}
	for i := range p.g {
		p.g[i] = gaugeAt(prev, i, t, ms)
	}
	p.r = reasonsAt(prev, t, ms)
	s.tiers[0] = append(s.tiers[0], p)
	s.addPoint(&s.tiers[0][len(s.tiers[0])-1])
	if reset {
		s.resets++
	}
	return reset
}

// segmentFor is the segment a sample at t joins after prev (nil for the
// model's first): prev's own, or a new one after a restart or a layout
// change (which continues prev's values and start).
func segmentFor(prev *point, brk segmentBreak, t int64) *segment {
	switch {
	case prev == nil || brk == restart:
		return newSegment(t, brk == restart)
	case brk == layoutChange:
		sg := newSegment(prev.seg.start, prev.seg.observed)
		sg.continues = true
		sg.created = prev.seg.created
		return sg
	}
	return prev.seg
}

// grow adds to the segment's layout the families of ms it has not seen, in
// a fixed order so that equal inputs give equal layouts, and accounts for
// the larger layout of a segment already held.
func (s *series) grow(sg *segment, ms *scrape.ModelSample) {
	var fresh []key
	for f := range ms.Histograms {
		if k := (key{scrape.KindHistogram, f}); sg.lookup(k) == nil {
			fresh = append(fresh, k)
		}
	}
	for f := range ms.Counters {
		if k := (key{scrape.KindCounter, f}); sg.lookup(k) == nil {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, func(a, b key) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(string(a.fam), string(b.fam))
	})
	grown := int64(0)
	if sg.refs > 0 {
		grown = -segmentBytes(sg)
	}
	for _, k := range fresh {
		sg.add(k, ms.Histograms[k.fam].Edges)
	}
	if sg.refs > 0 {
		s.bytes += grown + segmentBytes(sg)
	}
}

// valuesOf is the value vector of ms in the segment's layout: carried
// forward from prev, the previous point, when it is of the same segment,
// for families absent from this scrape, overwritten by those present.
func (sg *segment) valuesOf(prev *point, ms *scrape.ModelSample) []float64 {
	vals := make([]float64, sg.size)
	if prev != nil && prev.seg == sg {
		copy(vals, prev.values())
	}
	for f, h := range ms.Histograms {
		e := sg.lookup(key{scrape.KindHistogram, f})
		copy(vals[e.off:], h.Counts)
		vals[e.off+len(h.Counts)] = h.Sum
	}
	for f, v := range ms.Counters {
		vals[sg.lookup(key{scrape.KindCounter, f}).off] = v
	}
	return vals
}

// gaugeAt is gauge i sampled by ms at t, its running integral carried from
// prev (nil for the model's first point), each sample holding until the
// next.
func gaugeAt(prev *point, i int, t int64, ms *scrape.ModelSample) gaugeState {
	if prev == nil {
		return sampleGauge(nil, 0, gaugeFamily(i), t, ms)
	}
	return sampleGauge(&prev.g[i], prev.t, gaugeFamily(i), t, ms)
}

// sampleGauge is gauge family f sampled by ms at t, its running integral
// carried from pg, its state at the previous point (at prevT; nil for the
// first point that has it), each sample holding until the next.
func sampleGauge(pg *gaugeState, prevT int64, f scrape.Family, t int64, ms *scrape.ModelSample) gaugeState {
	v, ok := ms.Gauges[f]
	if !ok || math.IsInf(v, 0) {
		v = math.NaN()
	}
	g := gaugeState{v: v, max: v}
	if pg != nil {
		g.integral, g.known = pg.integral, pg.known
		if !math.IsNaN(pg.v) {
			dt := float64(t-prevT) / 1e9
			g.integral += pg.v * dt
			g.known += dt
		}
	}
	return g
}

// frontFrom returns the oldest point of tiers k, k-1, ..., 0: the point that
// follows tier k's front once that front is removed. Nil when none.
func (s *series) frontFrom(k int) *point {
	for ; k >= 0; k-- {
		if len(s.tiers[k]) > 0 {
			return &s.tiers[k][0]
		}
	}
	return nil
}

// backFrom returns the newest point of tiers k, k+1, ...: the retained point
// just before anything entering tier k. Nil when none.
func (s *series) backFrom(k int) *point {
	for ; k < len(s.tiers); k++ {
		if n := len(s.tiers[k]); n > 0 {
			return &s.tiers[k][n-1]
		}
	}
	return nil
}

// compact moves points that aged out of each tier into the next one, keeping
// a point only when it is the first of its Step bucket or the last of its
// segment, and drops points older than the last tier. A dropped point's gauge
// maximum folds into the next point so window maxima stay exact.
func (s *series) compact(now int64, tiers []Tier) {
	for k := range s.tiers {
		limit := now - tiers[k].Keep.Nanoseconds()
		for len(s.tiers[k]) > 0 && s.tiers[k][0].t < limit {
			p := s.tiers[k][0]
			s.tiers[k][0] = point{}
			s.tiers[k] = s.tiers[k][1:]
			next := s.frontFrom(k)
			if k+1 < len(s.tiers) && (next == nil || next.seg != p.seg || s.firstInBucket(k+1, p.t, tiers[k+1].Step)) {
				before := pointBytes(&p) + segmentBytes(p.seg)
				p.r = nil // the coarse tiers keep no waiting by reason
				p.packPoint()
				s.bytes += pointBytes(&p) + segmentBytes(p.seg) - before
				s.tiers[k+1] = append(s.tiers[k+1], p)
				continue
			}
			s.removePoint(&p)
			if next != nil {
				for i := range next.g {
					next.g[i].max = maxKnown(next.g[i].max, p.g[i].max)
				}
				next.r.foldMax(p.r)
			}
		}
	}
	for k := range s.tiers {
		if len(s.tiers[k]) == 0 {
			s.tiers[k] = nil // release the backing array of an emptied tier
		}
	}
}

// firstInBucket reports whether a point at t entering tier k would be the
// first retained point of its Step bucket.
func (s *series) firstInBucket(k int, t int64, step time.Duration) bool {
	if step <= 0 {
		return true
	}
	prev := s.backFrom(k)
	return prev == nil || prev.t/int64(step) != t/int64(step)
}

// maxKnown is the larger of a and b, ignoring NaN (unknown) values.
func maxKnown(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return max(a, b)
}
