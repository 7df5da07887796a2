package history

import (
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Options tunes a window query.
type Options struct {
	// Warmup, when positive, keeps the first Warmup after each segment start
	// out of the window's increases (not out of its gauges). A segment starts
	// at the model's `_created` time when the target exposes it, else at the
	// segment's first point if that segment began with a restart seen by this
	// history; the first segment of a model without `_created` has no known
	// start and no warm-up. A segment's increase is then counted from its first
	// retained point at or after start+Warmup (or from the window's start
	// point when that is later) instead of from zero; a segment with no such
	// point within the window contributes nothing. Where old points were
	// thinned, the first retained point may be later than the first scrape
	// after start+Warmup, so slightly more is excluded, never less.
	Warmup time.Duration
	// MaxGap, when positive, is the longest gap between two points that a
	// window's start may be taken across. The window's baseline is the last
	// point at or before its start; when the next point came more than
	// MaxGap later (scrapes failed, or the clock jumped), the increase over
	// that gap cannot be split at the start, so the window starts at the
	// first point after the gap instead: it then holds less than its length,
	// and its Start says so. Coarse tiers add their Step to the allowance.
	MaxGap time.Duration
	// NotBefore, when set, is the earliest scrape a window may start at:
	// the oldest scrape every other part of the window holds (a ledger
	// begun after the history, after a reload changed the SLOs). A window
	// reaching further back starts at the first point at or after it
	// instead, and its Start says so; a window of parts over different
	// scrapes is never built.
	NotBefore time.Time
}

// piece is the part of one segment inside a window: the increase from point
// index from (or from zero when from < 0) to point index to.
type piece struct {
	seg      *segment
	from, to int
	first    int // the segment's first point index within the window walk
	// run, when set, makes the piece stand for consecutive whole members of
	// a run of single-point segments (runs.go), from seg's point to the
	// last member's last point (to): from is −1, or to when the warm-up
	// empties them all.
	run *runSpan
}

// Window answers what happened to one model over the window ending at end
// and nominally length long. The window is (p0, p1], the two points Edges
// decides: p1 is the last point at or before end and p0 the latest retained
// point at or before end-length, or the oldest point when the history is
// shorter (or a later one: see Options; the returned Start says so).
// In coarse tiers p0 snaps to the retained point, so the window may be
// longer than nominal; it is always exact between Start and End.
//
// The increases are reset-aware: within a segment p1-p0; across segments the
// rest of p0's segment, every later segment counted from zero to its last
// point, and p1's segment from zero to p1. Histograms whose bucket layouts
// differ between the segments are summed on their common edges (+Inf always
// included), which is coarser but never invented. Families absent from every
// segment in the window are absent from the result. It returns false when
// the model is unknown or the window holds fewer than two points.
func (h *History) Window(model string, end time.Time, length time.Duration, opts Options) (slo.Window, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.windowReads.Add(1)
	sr := h.models[model]
	if sr == nil {
		return slo.Window{}, false
	}
	return sr.window(end, length, opts, h.ret.Tiers)
}

// Edges are the two points of one model a window runs between: it holds
// what happened after the point at Start up to the point at End, and was
// asked for as Nominal long.
type Edges struct {
	Start, End time.Time
	Nominal    time.Duration
}

// Edges decides the edges of the window of model ending at end and
// nominally length long (see Window): End is the newest point at or before
// end, Start the newest at or before end − length, or the oldest point
// when the history is shorter, moved past a gap too long to split
// (Options.MaxGap) and to the first point at or after Options.NotBefore.
// It returns false when the model is unknown or the window holds fewer
// than two points. The store asks it for every part of a window
// (store.Store.WindowEdges); Options.Warmup plays no part.
func (h *History) Edges(model string, end time.Time, length time.Duration, opts Options) (Edges, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	sr := h.models[model]
	if sr == nil {
		return Edges{}, false
	}
	i0, i1, ok := sr.edges(end, length, opts, h.ret.Tiers)
	if !ok {
		return Edges{}, false
	}
	return Edges{Start: fromNanos(sr.at(i0).t), End: fromNanos(sr.at(i1).t), Nominal: length}, true
}

// WindowAt answers what happened to one model between the edges e (which
// Edges gave, with no append since), the warm-up after each restart left
// out when warmup is positive (see Options.Warmup): Window over its edges,
// for a caller that holds the window's other parts to the same edges.
func (h *History) WindowAt(model string, e Edges, warmup time.Duration) (slo.Window, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.windowReads.Add(1)
	sr := h.models[model]
	if sr == nil {
		return slo.Window{}, false
	}
	i0, i1 := sr.lastAtOrBefore(clampNanos(e.Start)), sr.lastAtOrBefore(clampNanos(e.End))
	if i0 < 0 || i0 >= i1 {
		return slo.Window{}, false
	}
	return sr.windowBetween(i0, i1, e.Nominal, warmup, mergeFor(warmup)), true
}

// mergeFor is how a window with the given warm-up merges runs (runs.go).
func mergeFor(warmup time.Duration) mergeMode {
	if warmup > 0 {
		return mergeWarm
	}
	return mergeRaw
}

// edges are the indices of the points a window runs between (see Edges);
// ok is false when it holds fewer than two points. The history's lock
// must be held.
func (sr *series) edges(end time.Time, length time.Duration, opts Options, tiers []Tier) (i0, i1 int, ok bool) {
	i1 = sr.lastAtOrBefore(clampNanos(end))
	if i1 < 0 {
		return 0, 0, false
	}
	i0 = max(sr.lastAtOrBefore(clampNanos(end.Add(-length))), 0)
	if opts.MaxGap > 0 && i0 < i1 {
		i0 = sr.skipStartGap(i0, clampNanos(end.Add(-length)), opts.MaxGap, tiers)
	}
	if !opts.NotBefore.IsZero() && sr.at(i0).t < clampNanos(opts.NotBefore) {
		i0 = sr.firstAtOrAfter(clampNanos(opts.NotBefore))
	}
	return i0, i1, i0 < i1
}

// window is Window over one series; the history's lock must be held.
func (sr *series) window(end time.Time, length time.Duration, opts Options, tiers []Tier) (slo.Window, bool) {
	return sr.windowWith(end, length, opts, tiers, mergeFor(opts.Warmup))
}

// windowWith is window, merging the whole members of runs as merge says
// (mergeNone: the window summed piece by piece, what a test compares with).
func (sr *series) windowWith(end time.Time, length time.Duration, opts Options, tiers []Tier, merge mergeMode) (slo.Window, bool) {
	i0, i1, ok := sr.edges(end, length, opts, tiers)
	if !ok {
		return slo.Window{}, false
	}
	return sr.windowBetween(i0, i1, length, opts.Warmup, merge), true
}

// windowBetween is the window between the points i0 < i1, asked for as
// length long.
func (sr *series) windowBetween(i0, i1 int, length, warmup time.Duration, merge mergeMode) slo.Window {
	p0, p1 := sr.at(i0), sr.at(i1)
	wk := sr.walkWith(i0, i1, merge)
	pieces := wk.pieces
	if warmup > 0 {
		for i := range pieces {
			sr.skipWarmup(&pieces[i], warmup)
		}
	}
	w := slo.Window{
		Start:   fromNanos(p0.t),
		End:     fromNanos(p1.t),
		Nominal: length,
		Latency: map[slo.Metric]slo.Histogram{},
	}
	if len(pieces) == 1 {
		sr.fillOnePiece(pieces[0], &w)
	} else {
		sr.increases(pieces).fill(&w)
	}
	w.Restarts = wk.restarts
	w.InFlightAtRestarts = wk.inFlight
	w.Running, w.Waiting = windowGauge(p0, p1, wk.maxes, gaugeRunning), windowGauge(p0, p1, wk.maxes, gaugeWaiting)
	w.WaitingCapacity, w.WaitingDeferred = sr.reasonWindow(i0, i1)
	return w
}

// mergeMode says which whole members of a run a walk merges into one piece
// (runs.go): none; any (a window without warm-up, where each adds its final
// values); or those whose warm-up start is known (a window with warm-up,
// where each adds nothing: a member's first point at or after its warm-up
// is its only point, see skipWarmup).
type mergeMode int

const (
	mergeNone mergeMode = iota
	mergeRaw
	mergeWarm
)

// walked is what a walk over a window's points found: its pieces, the
// gauge maxima of every point after the first, the sum of the running and
// waiting gauges (those known and positive) at the end of every piece but
// the last (the requests a restart aborted), and the restarts (segment
// starts) inside it.
type walked struct {
	pieces   []piece
	maxes    [numGauges]float64
	inFlight float64
	restarts int
	// crossed counts the blocks crossed in one step (runChain.cross), and
	// widest is the most members one of them held.
	crossed, widest int
}

// walkWith is the walk of the window (i0, i1]: one piece per segment, but
// more than runMerge consecutive whole members of one run (merge permitting)
// become one piece, so that its cost beyond the points' gauges is bounded
// however many restarts the window spans.
func (sr *series) walkWith(i0, i1 int, merge mergeMode) walked {
	p0 := sr.at(i0)
	var w walked
	for g := range w.maxes {
		w.maxes[g] = p0.g[g].v
	}
	w.pieces = []piece{{seg: p0.seg, from: i0, to: i0, first: i0}}
	var ch runChain
	prev := p0
	// The points are read tier by tier (sr.at(i) in order, without
	// searching the tiers again for each).
	k, off := sr.tierOffset(i0 + 1)
	for i := i0 + 1; i <= i1; i++ {
		for off >= len(sr.tiers[k]) {
			k, off = k-1, 0
		}
		p := &sr.tiers[k][off]
		off++
		for g := range w.maxes {
			w.maxes[g] = maxKnown(w.maxes[g], p.g[g].max)
		}
		if cur := &w.pieces[len(w.pieces)-1]; p.seg == cur.seg {
			cur.to = i
			prev = p
			continue
		}
		// Every piece but the last ends at the last point of a segment
		// that a restart closed: the requests in flight there were aborted.
		for g := range prev.g {
			if v := prev.g[g].v; !math.IsNaN(v) && v > 0 {
				w.inFlight += v
			}
		}
		w.restarts++
		if merge != mergeNone {
			w.pieces = ch.note(w.pieces, merge)
		}
		w.pieces = append(w.pieces, piece{seg: p.seg, from: -1, to: i, first: i})
		prev = p
		if n := ch.cross(sr, &w, i, i1, merge); n > 0 {
			i += n
			for range n {
				for off >= len(sr.tiers[k]) {
					k, off = k-1, 0
				}
				prev = &sr.tiers[k][off]
				off++
			}
		}
	}
	return w
}

// cross lets the walk cross a block of members of the chain's run in one
// step (runBlockAgg) when the point i, whose segment the walk just began,
// is the first of a block ending at or before i1, and the block would join
// the chain's run piece: the largest such block. It folds the block into w
// as the walk would have, point by point, and returns how many points it
// crossed (0 when it crossed none): the walk goes on after the block's
// last point, whose segment is then its newest piece.
func (ch *runChain) cross(sr *series, w *walked, i, i1 int, merge mergeMode) int {
	m := w.pieces[len(w.pieces)-1].seg.mem
	if !ch.merged || m == nil || m.run != ch.run || m.ord != ch.last+1 {
		return 0
	}
	for k := runLevels - 1; k >= 0; k-- {
		size := levelSize(k)
		if m.ord%size != 0 || i+size-1 > i1 {
			continue
		}
		end := sr.at(i + size - 1).seg
		em := end.mem
		if em == nil || em.run != ch.run || em.ord != m.ord+size-1 || len(em.blks) <= k || (merge == mergeWarm && !em.blks[k].warm) {
			continue
		}
		ch.take(w, &em.blks[k], i, m.ord, size)
		w.pieces[len(w.pieces)-1] = piece{seg: end, from: -1, to: i + size - 1, first: i + size - 1}
		return size - 1
	}
	return 0
}

// take folds into w the block blk of size members, the first of ord ord at
// the point i: its gauges, its restarts, and all its members but the last
// into the chain's run piece.
func (ch *runChain) take(w *walked, blk *runBlockAgg, i, ord, size int) {
	for g := range w.maxes {
		w.maxes[g] = maxKnown(w.maxes[g], blk.maxes[g])
	}
	w.inFlight += blk.inFlight
	w.restarts += size - 1
	w.crossed++
	w.widest = max(w.widest, size)
	rp := &w.pieces[ch.start]
	for o := max(ord, ord+size-1-runBlock); o < ord+size-1; o++ {
		rp.run.tail[o%runBlock] = i + o - ord
	}
	rp.run.to = ord + size - 2
	rp.to = i + size - 2
	ch.n += size - 1
	ch.last = rp.run.to
}

// runChain is the trailing pieces of a walk that are consecutive whole
// members of one run: from pieces[start] on, n members, the newest of ord
// last; merged once they are one run piece.
type runChain struct {
	start, n int
	run      *runState
	last     int
	merged   bool
}

// note takes in the walk's newest piece, just completed (a new segment
// began after it), and returns the pieces with it merged into the chain's
// run piece where it belongs there.
func (ch *runChain) note(pieces []piece, merge mergeMode) []piece {
	n := len(pieces) - 1
	pc := &pieces[n]
	if n == 0 || !mergeable(pc, merge) {
		*ch = runChain{}
		return pieces
	}
	m := pc.seg.mem
	if ch.n == 0 || m.run != ch.run || m.ord != ch.last+1 {
		*ch = runChain{start: n, n: 1, run: m.run, last: m.ord}
		return pieces
	}
	ch.n++
	ch.last = m.ord
	switch {
	case ch.merged:
		rp := &pieces[ch.start]
		rp.run.to = m.ord
		rp.run.tail[m.ord%runBlock] = pc.to
		rp.to = pc.to
		return pieces[:n]
	case ch.n > runMerge:
		first := pieces[ch.start]
		rs := &runSpan{from: first.seg.mem.ord, to: m.ord}
		for j, q := range pieces[ch.start:] {
			if j < runBlock {
				rs.head[j] = q.to
			}
			if o := q.seg.mem.ord; o > rs.to-runBlock {
				rs.tail[o%runBlock] = q.to
			}
		}
		pieces[ch.start] = piece{seg: first.seg, from: -1, to: pc.to, first: first.first, run: rs}
		ch.merged = true
		return pieces[:ch.start+1]
	}
	return pieces
}

// mergeable reports whether a whole piece can join a run piece under
// merge: it is a member of a run (a single point) and, with a warm-up, its
// warm-up start is known.
func mergeable(pc *piece, merge mergeMode) bool {
	if pc.seg.mem == nil || pc.from >= 0 {
		return false
	}
	if merge == mergeWarm {
		_, known := pc.seg.warmupStart()
		return known
	}
	return true
}

// fill sets the window's histograms and counters from the increases.
func (inc increases) fill(w *slo.Window) {
	for k, v := range inc.hists {
		setHistogram(w, k.fam, v)
	}
	fillCounters(w, inc.counters)
}

// setHistogram sets the window's histogram of family f to v.
func setHistogram(w *slo.Window, f scrape.Family, v slo.Histogram) {
	switch f {
	case scrape.PromptTokensHist:
		w.PromptTokens = v
	case scrape.GenerationTokensHist:
		w.GenerationTokens = v
	case scrape.PreemptionsHist:
		w.PreemptionsPerRequest = v
	default:
		if isLatency(f) {
			w.Latency[slo.Metric(f)] = v
		}
	}
}

// fillCounters sets the window's counters from their increases.
func fillCounters(w *slo.Window, counters map[scrape.Family]float64) {
	prompt, okP := counters[scrape.PromptTokens]
	gen, okG := counters[scrape.GenerationTokens]
	if okP && okG {
		w.PromptTokensTotal, w.GenerationTokensTotal, w.HasTokenCounters = prompt, gen, true
	}
	w.RequestSuccess, w.HasRequestSuccess = counters[scrape.RequestSuccess]
	w.RequestAborted, w.HasRequestAborted = counters[scrape.RequestAborted]
	w.RequestRejected, w.HasRequestRejected = counters[scrape.RequestRejected]
	w.Preemptions, w.HasPreemptions = counters[scrape.Preemptions]
	computed, okC := counters[scrape.PromptTokensComputed]
	cached, okH := counters[scrape.PromptTokensCached]
	external, okE := counters[scrape.PromptTokensExternal]
	if okC && okH && okE {
		w.PromptTokensComputed, w.PromptTokensCached, w.PromptTokensExternal, w.HasPromptSources = computed, cached, external, true
	}
}

// windowGauge is gauge g over the window from p0 to p1: its values at both
// ends, its maximum (maxes) and its time-weighted mean, unknown unless both
// ends sampled it and some time between them had it known.
func windowGauge(p0, p1 *point, maxes [numGauges]float64, g int) slo.Gauge {
	a, b := p0.g[g], p1.g[g]
	d := b.known - a.known
	if math.IsNaN(a.v) || math.IsNaN(b.v) || !(d > 0) {
		return slo.Gauge{}
	}
	gauge := slo.Gauge{Known: true, AtStart: a.v, AtEnd: b.v, Max: maxes[g]}
	gauge.Mean = min((b.integral-a.integral)/d, gauge.Max)
	return gauge
}

// skipStartGap returns the index of a window's baseline point: i0, the last
// point at or before start, unless i0 lies before start and the point after
// it came more than maxGap (plus the Step of i0's tier) later, in which case
// the window begins after the gap, at i0+1.
func (s *series) skipStartGap(i0 int, start int64, maxGap time.Duration, tiers []Tier) int {
	p0, next := s.at(i0), s.at(i0+1)
	if next == nil || p0.t >= start {
		return i0
	}
	allow := maxGap + tiers[s.tierOf(i0)].Step
	if time.Duration(next.t-p0.t) > allow {
		return i0 + 1
	}
	return i0
}

// tierOf returns the tier holding the i-th point, oldest first.
func (s *series) tierOf(i int) int {
	for k := len(s.tiers) - 1; k >= 0; k-- {
		if i < len(s.tiers[k]) {
			return k
		}
		i -= len(s.tiers[k])
	}
	return 0
}

// isLatency reports whether a family is one of slo's latency metrics.
func isLatency(f scrape.Family) bool {
	for _, m := range slo.Metrics {
		if scrape.Family(m) == f {
			return true
		}
	}
	return false
}

// warmupStart returns the segment's start for warm-up purposes (Unix ns),
// false when unknown.
func (sg *segment) warmupStart() (int64, bool) {
	if sg.created > 0 {
		ns := sg.created * 1e9
		if ns >= math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(ns), true
	}
	return sg.start, sg.observed
}

// skipWarmup moves a piece's baseline to its segment's first point at or
// after the end of warm-up, emptying the piece when there is none.
func (s *series) skipWarmup(pc *piece, warmup time.Duration) {
	if pc.run != nil {
		// Single points of segments with a known start (mergeable): each
		// one's first point after its warm-up is its last, so each adds
		// nothing.
		pc.from = pc.to
		return
	}
	start, ok := pc.seg.warmupStart()
	if !ok {
		return
	}
	ready := start + int64(warmup)
	if ready < start { // overflow: warm-up never ends
		ready = math.MaxInt64
	}
	b := max(s.firstAtOrAfter(ready), pc.first)
	switch {
	case pc.from >= 0 && b <= pc.from:
		// the window starts after warm-up: nothing to skip
	case b <= pc.to:
		pc.from = b
	default:
		pc.from = pc.to
	}
}

// increases holds a window's summed increases per family.
type increases struct {
	hists    map[key]slo.Histogram
	counters map[scrape.Family]float64
}

// part is one segment's increase of one histogram.
type part struct {
	edges  []float64
	counts []float64
	sum    float64
}

// increases sums the pieces' increases. A piece with from == to adds nothing
// but still makes its families present (with its layout, when no piece adds
// anything to them). A piece of a segment that continues the previous one
// after a layout change counts from the previous piece's last point, on the
// edges both layouts share, instead of from zero. Each family's parts are
// summed as they come (merged), so a window over many restarts keeps one
// running sum per family rather than a part per segment.
func (s *series) increases(pieces []piece) increases {
	sums := map[key]*merged{}
	layouts := map[key][]float64{}
	var scratch []float64 // a part's counts, read by merged.add and not kept
	out := increases{hists: map[key]slo.Histogram{}, counters: map[scrape.Family]float64{}}
	for n, pc := range pieces {
		to := s.at(pc.to).values()
		var from []float64
		var base *baseline
		switch {
		case pc.run != nil && pc.from == pc.to:
			from = to
		case pc.run != nil:
			to = pc.run.sum(s)
		case pc.from >= 0:
			from = s.at(pc.from).values()
		case pc.seg.continues && n > 0:
			prev := pieces[n-1]
			base = &baseline{seg: prev.seg, vals: s.at(prev.to).values()}
		}
		empty := pc.from == pc.to
		for i := range pc.seg.entries {
			e := &pc.seg.entries[i]
			if e.end() > len(to) {
				break // entries are in offset order: the rest came later
			}
			if e.kind == scrape.KindCounter {
				out.counters[e.fam] += delta(to, from, e.off) - base.counter(e.key)
				continue
			}
			layouts[e.key] = e.edges
			if empty {
				continue
			}
			scratch = slices.Grow(scratch[:0], len(e.edges))[:len(e.edges)]
			p := part{edges: e.edges, counts: scratch}
			for j := range p.counts {
				p.counts[j] = delta(to, from, e.off+j)
			}
			p.sum = delta(to, from, e.off+len(e.edges))
			m := sums[e.key]
			if m == nil {
				m = &merged{}
				sums[e.key] = m
			}
			m.add(base.subtract(e.key, p))
		}
	}
	for k, edges := range layouts {
		if m := sums[k]; m != nil {
			out.hists[k] = m.histogram()
		} else {
			out.hists[k] = slo.Histogram{Edges: slices.Clone(edges), Counts: make([]float64, len(edges))}
		}
	}
	return out
}

// merged is one family's increase over a window, its parts (one per piece
// that adds to it) summed as they come: on the edges every part so far
// shares, each count is the sum of the parts' counts there in part order,
// starting from zero, and so is the sum. Every shared edge is an edge of
// each part, so each part's cumulative count there is exact; +Inf is
// always shared. Summing all parts at the end on the edges they all share
// makes the same additions in the same order on each edge it keeps, so
// gives the same floats: an edge a
// later part lacks drops out of both with its sum, and a kept edge's
// running sum is not touched by dropping another. TestIncreasesIsThePlainMerge
// and TestMergedIsThePlainSum compare both to the bit.
type merged struct {
	edges  []float64 // a part's edges (a layout's) until narrowed; copied by histogram
	counts []float64
	sum    float64
	parts  int
}

// add adds one part; its counts are read, not kept.
func (m *merged) add(p part) {
	if m.parts == 0 {
		m.edges, m.counts = p.edges, make([]float64, len(p.edges))
	} else if !slices.Equal(m.edges, p.edges) {
		m.narrow(commonEdges(m.edges, p.edges))
	}
	m.parts++
	j := 0
	for i, e := range m.edges {
		for p.edges[j] != e {
			j++
		}
		m.counts[i] += p.counts[j]
	}
	m.sum += p.sum
}

// narrow keeps the running counts of the given edges, a subset of m's.
func (m *merged) narrow(edges []float64) {
	counts := make([]float64, len(edges))
	j := 0
	for i, e := range edges {
		for m.edges[j] != e {
			j++
		}
		counts[i] = m.counts[j]
	}
	m.edges, m.counts = edges, counts
}

// histogram is the merged increase, on its own copy of the edges.
func (m *merged) histogram() slo.Histogram {
	return slo.Histogram{Edges: slices.Clone(m.edges), Counts: m.counts, Sum: m.sum}
}

// fillOnePiece sets the window's histograms and counters from a window of
// one piece (no restart and no layout change inside it, the usual window):
// the same numbers, to the bit, as increases followed by fill, without the
// per-family maps of running sums and layouts that merging several
// segments needs.
//
// Why they are the same. With one piece there is no earlier piece, so no
// baseline (it subtracts nothing, and a counter's "− 0" keeps its bits);
// every map entry of increases starts at zero and receives exactly one
// addition, provided no two entries of the segment share a key; and
// merged, given one part, holds that part's counts and sum each added to
// zero, which is what is computed here (a −0 becomes +0 both ways), on a
// copy of the layout's edges. The keys are unique: a segment's entries are
// only made by segment.add, which grow calls for keys the segment does not
// hold yet (lookup is nil), each key once (they come from the keys of the
// sample's histogram and counter maps, one kind each), and which
// decodeSegment calls only after refusing a key the state file lists twice
// ("family listed twice"). TestOnePieceIsTheMergedSum compares both ways.
//
// The window's histograms share one array for their edges and counts, each
// slice capped at its own length, so an append to one cannot reach another.
func (s *series) fillOnePiece(pc piece, w *slo.Window) {
	to := s.at(pc.to).values()
	var from []float64
	if pc.from >= 0 {
		from = s.at(pc.from).values()
	}
	n := 0
	for i := range pc.seg.entries {
		if e := &pc.seg.entries[i]; e.end() <= len(to) && e.kind != scrape.KindCounter {
			n += 2 * len(e.edges)
		}
	}
	buf := make([]float64, n)
	counters := map[scrape.Family]float64{}
	empty := pc.from == pc.to
	for i := range pc.seg.entries {
		e := &pc.seg.entries[i]
		if e.end() > len(to) {
			break // entries are in offset order: the rest came later
		}
		if e.kind == scrape.KindCounter {
			counters[e.fam] += delta(to, from, e.off)
			continue
		}
		k := len(e.edges)
		h := slo.Histogram{Edges: buf[:k:k], Counts: buf[k : 2*k : 2*k]}
		buf = buf[2*k:]
		copy(h.Edges, e.edges)
		if !empty {
			for j := range h.Counts {
				h.Counts[j] = 0 + delta(to, from, e.off+j)
			}
			h.Sum = 0 + delta(to, from, e.off+k)
		}
		setHistogram(w, e.fam, h)
	}
	fillCounters(w, counters)
}

// baseline is the last point of the segment that a continuing segment
// follows: the continuing segment's increase is its values minus these.
// A nil baseline subtracts nothing.
type baseline struct {
	seg  *segment
	vals []float64
}

// counter is the baseline's value of a counter, 0 when it had none.
func (b *baseline) counter(k key) float64 {
	if b == nil {
		return 0
	}
	if e := b.seg.lookup(k); e != nil && e.off < len(b.vals) {
		return b.vals[e.off]
	}
	return 0
}

// subtract turns a continuing segment's cumulative part into its increase
// since the baseline. Only edges of both layouts have a known baseline, so
// the result keeps just those (+Inf always among them); a family the
// baseline lacked counts from zero. The sum is comparable across layouts.
func (b *baseline) subtract(k key, p part) part {
	if b == nil {
		return p
	}
	e := b.seg.lookup(k)
	if e == nil || e.end() > len(b.vals) {
		return p
	}
	old := b.vals[e.off:e.end()]
	out := part{sum: max(p.sum-old[len(e.edges)], 0)}
	for i, j := 0, 0; i < len(p.edges) && j < len(e.edges); {
		switch {
		case p.edges[i] == e.edges[j]:
			out.edges = append(out.edges, p.edges[i])
			out.counts = append(out.counts, max(p.counts[i]-old[j], 0))
			i++
			j++
		case p.edges[i] < e.edges[j]:
			i++
		default:
			j++
		}
	}
	return out
}

// delta is to[i] - from[i], from counting as zero when absent (a new
// segment, or a family that appeared after the baseline point).
func delta(to, from []float64, i int) float64 {
	if i < len(from) {
		return to[i] - from[i]
	}
	return to[i]
}

// commonEdges returns the edges present in both ascending lists: a itself
// when both hold the same edges (every segment keeps its own copy of a
// layout, so a window over many restarts compares equal lists, not the same
// array), which is what the merge below would build from a's values.
func commonEdges(a, b []float64) []float64 {
	if slices.Equal(a, b) {
		return a
	}
	var out []float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}
