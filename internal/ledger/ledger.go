// Package ledger keeps, per model, the record of every scrape interval that
// joint attainment needs: which first tokens the finishing requests can have
// come from, what each interval's finishers were found to meet, and
// cumulative sums at each scrape, so that a window's joint ("met every
// objective", goodput, abandoned requests) is a difference of two
// checkpoints tightened by the intervals kept.
//
// Package store owns it beside the model's history and makes it follow the
// history's retention: the store feeds it the interval increase each
// history append computes (Append, which returns what it made of the
// interval, so nothing reads it back) and thins its checkpoints to the
// scrapes the history holds (Thin), so a window's joint covers the scrapes
// its other series cover. It calls nothing outside itself and package slo,
// does no I/O and reads no clock; it keeps the sums the bounds are taken
// over, and package slo proves and computes the bounds.
package ledger

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// matchHorizon is how far back the ledger keeps whole intervals to match the
// first tokens of finishing requests. Older first tokens are one
// pseudo-source whose TTFT split is unknown, bounded only by the requests in
// flight, so a longer decode loses tightness, never truth.
const matchHorizon = time.Hour

// Ledger is one model's record of every scrape interval: what the matching of
// first tokens to finishes needs from the recent intervals, and cumulative
// sums at each kept scrape, so that a window is a difference of two of them.
//
// Memory is bounded by the history's: intervals older than matchHorizon are
// dropped (at most matchHorizon over the scrape interval of them), and a
// checkpoint is kept only while the history holds a point at its time, plus
// those the history dropped since the last thinning (at most thinEvery of
// scrapes). A history within its memory limit therefore bounds the ledger
// too, however often the target restarts.
type Ledger struct {
	slos      []slo.SLO
	intervals []interval   // oldest first, within matchHorizon
	points    []checkpoint // oldest first, thinned by the retention
	seg       int
	// thinned is when the checkpoints were last thinned (Unix ns).
	thinned int64
	// spans is true once spans are expected; pending holds the counted
	// intervals waiting for theirs, oldest first (exact.go).
	spans   bool
	pending []pending
}

// thinEvery is how often the checkpoints are thinned: each pass walks them
// all, and a checkpoint kept up to this long after the history dropped its
// point costs nothing but memory for that long (window starts are always at
// points the history holds, so it is never read).
const thinEvery = time.Minute

// interval is one scrape interval as a source of first tokens.
type interval struct {
	start, end    time.Time
	seg           int
	restarted     bool
	inFlightStart float64
	// sources holds one source per SLO with a TTFT objective (nil entries
	// for the others).
	sources []slo.Source
	// counted is false inside a warm-up; judged holds, per SLO, what the
	// interval's finishers were found to meet (for the window totals).
	counted bool
	judged  []judged
	// reachStart is the start (Unix ns) of the earliest kept interval that
	// can hold the first token of one of this interval's finishers;
	// reachOlder says they can reach back beyond the kept intervals (so it
	// is until noteReach says otherwise).
	reachStart int64
	reachOlder bool
}

// judged is one SLO's per-interval bounds kept for the window totals:
// finishers, those meeting every finish-observed objective, the TTFT-good
// among them; unknown when an objective could not be judged.
type judged struct {
	n, finLo, finHi, ttftLo, ttftHi float64
	unknown                         bool
	// tokens bounds the generation tokens of the finishers meeting every
	// objective by their number, for slo.CoupleTokensIn; hasTokens is false
	// without a token histogram over the same finishers.
	tokens    slo.TokenCurve
	hasTokens bool
}

// checkpoint holds the cumulative sums from the ledger's first interval to
// the scrape at t, and the bounds on the requests past their first token in
// flight at t.
type checkpoint struct {
	t   int64 // Unix ns
	seg int32
	// boundary marks the first checkpoint of each blockLen of time: the
	// sums cLo and cHi add, at each boundary, the coupled bound of the block
	// of intervals since the previous one. (Beside seg, it costs no space.)
	boundary bool
	// firstTokens and finished sum every interval (warm-up included).
	firstTokens, finished float64
	// finishedTokens sums the generation tokens of the finished requests.
	finishedTokens float64
	// qLo and qHi bound the requests past their first token in flight at t;
	// qEst estimates them (see queueEstimate).
	qLo, qHi, qEst float64
	// first holds the first SLO's sums and more the others' and the spans'
	// (most configs have one SLO and no spans; inline, it costs no
	// allocation per checkpoint, and a pointer costs a third of a slice
	// header on every one).
	first sloSums
	more  *moreSums
}

// moreSums are a checkpoint's sums beyond the first SLO's: the other SLOs'
// and, once spans covered an interval, every SLO's sums over the covered
// intervals (exact.go; nil exact is all zero).
type moreSums struct {
	slos  []sloSums
	exact []exactSums
	// objective is exact mode's per-objective sums (exact_objectives.go;
	// nil without spans).
	objective []float64
}

// newCheckpoint returns a checkpoint with zero sums for n SLOs.
func newCheckpoint(t int64, seg int, n int) checkpoint {
	c := checkpoint{t: t, seg: int32(seg)}
	if n > 1 {
		c.more = &moreSums{slos: make([]sloSums, n-1)}
	}
	return c
}

// sum returns SLO i's sums.
func (c *checkpoint) sum(i int) *sloSums {
	if i == 0 {
		return &c.first
	}
	return &c.more.slos[i-1]
}

// sloSums are one SLO's cumulative sums over the counted intervals.
type sloSums struct {
	finished     float64
	lo, hi, est  float64 // met every objective
	tokLo, tokHi float64 // their generation tokens
	tokEst       float64
	// cLo and cHi are running sums, from one boundary checkpoint to the
	// next, of the blocks' coupled bounds on those meeting every objective
	// (see closeBlock); only their differences between boundaries mean
	// anything.
	cLo, cHi      float64
	unknown       uint32 // counted intervals with finishes that could not be judged
	tokensUnknown uint32 // counted intervals with finishes and no token histogram
	// unknownMask has bit i set when objective metric slo.Metrics[i] was
	// ever found unmeasured.
	unknownMask uint8
}

// maskOf sets the bits of the metrics in mask.
func maskOf(mask uint8, ms []slo.Metric) uint8 {
	for _, m := range ms {
		if i := slices.Index(slo.Metrics, m); i >= 0 && i < 8 {
			mask |= 1 << i
		}
	}
	return mask
}

// metricsOf lists the metrics whose bits are set, in report order.
func metricsOf(mask uint8) []slo.Metric {
	var out []slo.Metric
	for i, m := range slo.Metrics {
		if i < 8 && mask&(1<<i) != 0 {
			out = append(out, m)
		}
	}
	return out
}

// New returns an empty ledger judging slos.
func New(slos []slo.SLO) *Ledger {
	return &Ledger{slos: slos}
}

// Reconfigure moves the ledger to another SLO list and reports whether it
// could: its sums depend on the SLOs' names and objectives (a new goal or
// abandoned setting keeps them), so under another list it must start
// afresh.
func (l *Ledger) Reconfigure(slos []slo.SLO) bool {
	if !slices.Equal(sloTexts(l.slos), sloTexts(slos)) {
		return false
	}
	l.slos = slos
	return true
}

// inFlightOf is running + waiting at the start and end of a window, NaN when
// unknown.
func inFlightOf(w slo.Window) (start, end float64) {
	if !w.Running.Known || !w.Waiting.Known {
		return math.NaN(), math.NaN()
	}
	return math.Max(0, w.Running.AtStart) + math.Max(0, w.Waiting.AtStart),
		math.Max(0, w.Running.AtEnd) + math.Max(0, w.Waiting.AtEnd)
}

// Record is what Append made of an interval for one SLO: what the running
// total of good requests adds and what a store learning from intervals
// reads, taken from the interval's two checkpoints as Append left them.
type Record struct {
	// Interval is the interval's span, opening restart and bounds on its
	// good requests; its End is zero when the ledger does not hold a
	// checkpoint at the interval's start (a ledger begun or restored
	// since), so that its two checkpoints do not describe it alone.
	Interval IntervalGood
	// Good estimates the interval's requests that met every objective;
	// GoodKnown is false when an objective could not be judged over it.
	// Inside a warm-up the interval is not counted, and Good is 0.
	Good      float64
	GoodKnown bool
}

// Append records the interval w (the increase since the model's previous
// scrape) and returns, per SLO in order, what it made of it; nil when it
// did not record it (an interval without length, or not after the newest
// checkpoint). counted is false inside a warm-up: the interval then serves
// as a source of first tokens and in the conservation of requests, but its
// finishes are judged by no SLO. Intervals older than the matching horizon
// are dropped; the checkpoints are thinned by Thin.
func (l *Ledger) Append(w slo.Window, counted bool) []Record {
	if !w.End.After(w.Start) {
		return nil
	}
	if len(l.points) > 0 && w.End.UnixNano() <= l.points[len(l.points)-1].t {
		return nil
	}
	restarted := w.Restarts > 0
	if restarted {
		l.seg++
	}
	rStart, rEnd := inFlightOf(w)
	iv := interval{start: w.Start, end: w.End, seg: l.seg, restarted: restarted, inFlightStart: rStart, counted: counted, judged: make([]judged, len(l.slos)), reachOlder: true}
	capEnd := rEnd
	if math.IsNaN(capEnd) {
		capEnd = math.Inf(1)
	}
	iv.sources = make([]slo.Source, len(l.slos))
	for i, s := range l.slos {
		if th, ok := slo.TTFTThreshold(s); ok {
			iv.sources[i] = slo.TTFTSource(w.Start, w.End, w.Latency[slo.TTFT], th, capEnd, slo.DefaultEstimator)
		}
	}
	l.intervals = append(l.intervals, iv)
	fin := slo.FinishersOf(w)
	prev := l.last()
	cp := newCheckpoint(w.End.UnixNano(), l.seg, len(l.slos))
	for i := range l.slos {
		*cp.sum(i) = *prev.sum(i)
	}
	cp.copyExact(prev)
	ft := 0.0
	if h, ok := w.Latency[slo.TTFT]; ok && h.Valid() {
		ft = h.Total()
	}
	cp.firstTokens = prev.firstTokens + ft
	// An unknown count (e2e appeared or vanished in the interval) is 0
	// here: judge leaves the interval unjudged, and taking none as
	// finished keeps InFlightQueue's bound an upper bound.
	cp.finished = prev.finished + fin.N
	cp.finishedTokens = prev.finishedTokens
	if w.GenerationTokens.Valid() {
		cp.finishedTokens += math.Max(0, w.GenerationTokens.Sum)
	}
	prevHi := prev.qHi
	switch {
	case restarted:
		prevHi = 0 // a new process starts with nothing in flight
	case len(l.points) == 0:
		prevHi = rStart
		if math.IsNaN(prevHi) {
			prevHi = math.Inf(1)
		}
		first := newCheckpoint(w.Start.UnixNano(), l.seg, len(l.slos))
		first.qHi = prevHi
		first.boundary = true
		l.points = append(l.points, first)
	}
	cp.qHi = slo.InFlightQueue(prevHi, ft, fin.N, rEnd)
	cp.qEst = queueEstimate(w, false)
	if len(l.points) == 1 {
		l.points[0].qEst = queueEstimate(w, true)
	}
	l.judge(&cp, w, fin, counted)
	l.notePending(w, counted && fin.Known, &prev, &cp)
	l.closeBlock(&cp)
	l.raiseQueueLower(fin)
	l.points = append(l.points, cp)
	l.dropIntervals(w.End)
	return l.records()
}

// records is what Append made of the newest interval, from its two
// checkpoints, the newest two. A ledger whose first interval opened with a
// restart holds no checkpoint before it: its record then knows nothing.
func (l *Ledger) records() []Record {
	out := make([]Record, len(l.slos))
	if len(l.points) < 2 {
		return out
	}
	a, b := &l.points[len(l.points)-2], &l.points[len(l.points)-1]
	iv := &l.intervals[len(l.intervals)-1]
	for i := range out {
		sa, sb := a.sum(i), b.sum(i)
		r := &out[i]
		r.Good, r.GoodKnown = sb.est-sa.est, sb.unknown == sa.unknown
		if a.t != iv.start.UnixNano() {
			continue
		}
		r.Interval = IntervalGood{
			Start: iv.start, End: iv.end, Restarted: iv.restarted,
			Finished:  sb.finished - sa.finished,
			Good:      slo.Bounded{Lower: sb.lo - sa.lo, Upper: sb.hi - sa.hi, Estimate: sb.est - sa.est}.NonNegative(),
			GoodKnown: iv.counted && r.GoodKnown,
		}
	}
	return out
}

// judge evaluates every SLO over the newest interval's finishers, carries the
// bounds on the TTFT-good and TTFT-bad requests in flight to its end, and,
// when counted, adds the results to the checkpoint's sums.
func (l *Ledger) judge(cp *checkpoint, w slo.Window, fin slo.Finishers, counted bool) {
	if !fin.Known {
		l.unjudged(cp)
		return
	}
	noted := false
	for i, s := range l.slos {
		sums := cp.sum(i)
		var sources []slo.Source
		_, hasTTFT := slo.TTFTThreshold(s)
		if hasTTFT {
			sources = l.sourcesFor(i, fin)
			if !noted { // every SLO's sources span the same intervals
				l.noteReach(sources)
				noted = true
			}
		}
		res := slo.EvaluateInterval(s, sources, fin, w.Latency, w.GenerationTokens, slo.DefaultEstimator)
		if hasTTFT {
			l.carrySplit(i, res.TTFTGood, fin.N, cp.qHi)
		}
		l.intervals[len(l.intervals)-1].judged[i] = judged{
			n: fin.N, finLo: res.FinishGood.Lower, finHi: res.FinishGood.Upper,
			ttftLo: res.TTFTGood.Lower, ttftHi: res.TTFTGood.Upper, unknown: len(res.Unknown) > 0,
		}
		if res.HasTokens && w.GenerationTokens.Total() == fin.N {
			j := &l.intervals[len(l.intervals)-1].judged[i]
			j.tokens, j.hasTokens = slo.NewTokenCurve(res.Good, w.GenerationTokens)
		}
		if !counted {
			continue
		}
		if len(res.Unknown) > 0 {
			if fin.N > 0 {
				sums.unknown++
				sums.unknownMask = maskOf(sums.unknownMask, res.Unknown)
			}
			continue
		}
		sums.finished += fin.N
		sums.lo += res.Good.Lower
		sums.hi += res.Good.Upper
		sums.est += res.Good.Estimate
		l.addJudgedObjectives(cp, i, w, fin, res)
		if !res.HasTokens {
			if fin.N > 0 {
				sums.tokensUnknown++
			}
			continue
		}
		sums.tokLo += res.Tokens.Lower
		sums.tokHi += res.Tokens.Upper
		sums.tokEst += res.Tokens.Estimate
	}
}

// unjudged records the newest interval as one whose finishers could not be
// counted (slo.FinishersOf): every SLO's sums count it among the intervals
// that could not be judged, marked e2e, whether or not it is counted (a
// warm-up's finishers too are in the checkpoints' conservation, which
// misses this interval's), so no window that holds it has a joint: its
// "all", goodput, burn rate and abandoned requests are unknown, not made
// exact by a guessed count. The bounds on the TTFT-good and TTFT-bad
// requests in flight at its end are carried as if none of them finished,
// which keeps them upper bounds; its finishers' reach stays unknown.
func (l *Ledger) unjudged(cp *checkpoint) {
	last := len(l.intervals) - 1
	for i, s := range l.slos {
		if _, ok := slo.TTFTThreshold(s); ok {
			l.carrySplit(i, slo.Bounded{}, 0, cp.qHi)
		}
		l.intervals[last].judged[i] = judged{unknown: true}
		sums := cp.sum(i)
		sums.unknown++
		sums.unknownMask = maskOf(sums.unknownMask, []slo.Metric{slo.E2E})
	}
}

// blockLen is the span of the blocks of intervals that the ledger couples
// as they close, so that windows longer than the kept intervals (the error
// budget's, the long burn windows) are bounded block by block instead of
// interval by interval. Tier steps that are multiples of it keep every
// boundary a window needs.
const blockLen = 5 * time.Minute

// closeBlock makes cp, the checkpoint of the interval just judged, a
// boundary when it is the first in a new blockLen of time, and adds to its
// cLo and cHi the bound on the block since the previous boundary: the sum
// of the block's per-interval bounds, tightened by its totals and
// intersected with slo.CoupleWindow over its intervals. Each step keeps a
// valid bound on the block, so the difference of the sums between two
// boundaries bounds the blocks between them.
func (l *Ledger) closeBlock(cp *checkpoint) {
	if len(l.points) == 0 || cp.t/int64(blockLen) == l.points[len(l.points)-1].t/int64(blockLen) {
		return
	}
	cp.boundary = true
	k := len(l.points) - 1
	for k >= 0 && !l.points[k].boundary {
		k--
	}
	for i := range l.slos {
		sums := cp.sum(i)
		if k < 0 { // the first boundary (a state kept before boundaries)
			sums.cLo, sums.cHi = sums.lo, sums.hi
			continue
		}
		pb := l.points[k]
		prev := pb.sum(i)
		block := slo.Bounded{Lower: sums.lo - prev.lo, Upper: sums.hi - prev.hi}
		if t, ok := l.totals(i, pb.t, cp.t); ok && sums.unknown == prev.unknown {
			block = slo.TightenWindow(block, t)
			if ivs, pre, ok := l.coupled(i, pb.t, cp.t, nil); ok {
				block = block.Intersect(slo.CoupleWindow(ivs, pre, t.BadAtStart, t.GoodAtStart))
			}
		}
		sums.cLo, sums.cHi = prev.cLo+block.Lower, prev.cHi+block.Upper
	}
}

// blocked bounds SLO i's good requests between checkpoints i0 and i1 by
// the whole blocks between the first and the last boundary among them and
// the per-interval sums outside; ok is false without a whole block. The
// first boundary is sought from i0 forward and the last from i1 backward,
// so a long window (an error budget's period) costs the checkpoints of a
// block or two at its ends, not every checkpoint between them.
func (l *Ledger) blocked(i, i0, i1 int) (slo.Bounded, bool) {
	b0 := i0
	for b0 <= i1 && !l.points[b0].boundary {
		b0++
	}
	if b0 > i1 {
		return slo.Bounded{}, false
	}
	b1 := i1
	for !l.points[b1].boundary { // stops at b0 at the latest
		b1--
	}
	if b0 == b1 {
		return slo.Bounded{}, false
	}
	a, s0, s1, b := l.points[i0].sum(i), l.points[b0].sum(i), l.points[b1].sum(i), l.points[i1].sum(i)
	return slo.Bounded{
		Lower: (s0.lo - a.lo) + (s1.cLo - s0.cLo) + (b.lo - s1.lo),
		Upper: (s0.hi - a.hi) + (s1.cHi - s0.cHi) + (b.hi - s1.hi),
	}.NonNegative(), true
}

// noteReach records on the newest interval how far back its finishers' first
// tokens can lie: sources is what sourcesFor found (the same for every SLO).
func (l *Ledger) noteReach(sources []slo.Source) {
	cur := &l.intervals[len(l.intervals)-1]
	if len(sources) == 0 {
		cur.reachStart, cur.reachOlder = cur.start.UnixNano(), false
		return
	}
	cur.reachOlder = sources[0].Start.IsZero()
	first := sources[0]
	if cur.reachOlder && len(sources) > 1 {
		first = sources[1]
	}
	cur.reachStart = first.Start.UnixNano()
}

// carrySplit sets the newest interval's bounds on the TTFT-good and TTFT-bad
// requests past their first token in flight at its end, from those at its
// start (the previous interval's, 0 after a restart, the requests in flight
// at the first scrape when nothing older is known).
func (l *Ledger) carrySplit(i int, ttftGood slo.Bounded, n, queueHi float64) {
	last := len(l.intervals) - 1
	cur := &l.intervals[last]
	prevGood, prevBad := math.Inf(1), math.Inf(1)
	switch {
	case cur.restarted:
		prevGood, prevBad = 0, 0
	case last > 0 && l.intervals[last-1].seg == cur.seg:
		p := l.intervals[last-1].sources[i]
		if p.HasSplit {
			prevGood, prevBad = p.InFlightGood, p.InFlightBad
		}
		if !math.IsNaN(p.InFlightEnd) {
			prevGood, prevBad = math.Min(prevGood, p.InFlightEnd), math.Min(prevBad, p.InFlightEnd)
		}
	case !math.IsNaN(cur.inFlightStart):
		prevGood, prevBad = cur.inFlightStart, cur.inFlightStart
	}
	src := &cur.sources[i]
	src.InFlightGood, src.InFlightBad = slo.InFlightSplit(prevGood, prevBad, *src, ttftGood, n, queueHi)
	src.HasSplit = true
}

// sourcesFor lists the sources of SLO i that the newest interval's finishers
// can reach: the intervals of the same process run back to the earliest
// reachable one, and, when the kept intervals end before that without a
// restart, a pseudo-source for everything older (unknown TTFT split, bounded
// by the requests in flight where it ends).
func (l *Ledger) sourcesFor(i int, fin slo.Finishers) []slo.Source {
	earliest := fin.Start.Add(-maxLag(fin) - 2*slo.MatchMargin)
	last := len(l.intervals) - 1
	seg := l.intervals[last].seg
	first := last
	for first > 0 {
		iv := l.intervals[first]
		if iv.restarted || !iv.start.After(earliest) {
			break
		}
		if l.intervals[first-1].seg != seg {
			break
		}
		first--
	}
	var out []slo.Source
	head := l.intervals[first]
	if !head.restarted && head.start.After(earliest) {
		capAt := head.inFlightStart
		if math.IsNaN(capAt) {
			capAt = math.Inf(1)
		}
		out = append(out, slo.Source{End: head.start, Bad: math.Inf(1), Good: math.Inf(1), InFlightEnd: capAt})
	}
	for k := first; k <= last; k++ {
		out = append(out, l.intervals[k].sources[i])
	}
	return out
}

// maxLag is the largest lag fin's histogram allows (its highest non-empty
// bucket's upper edge), saturating at the largest Duration.
func maxLag(fin slo.Finishers) time.Duration {
	h := fin.Lag
	if !h.Valid() {
		return time.Duration(math.MaxInt64 / 4)
	}
	prev := 0.0
	top := 0.0
	for i, c := range h.Counts {
		if c > prev {
			top = h.Edges[i]
		}
		prev = c
	}
	if math.IsInf(top, 1) || top*1e9 > float64(math.MaxInt64/4) {
		return time.Duration(math.MaxInt64 / 4)
	}
	return time.Duration(top * 1e9)
}

// raiseQueueLower adds the newest finishers whose first token surely came
// before an earlier scrape of the same run to that scrape's lower bound on
// the requests past their first token in flight.
func (l *Ledger) raiseQueueLower(fin slo.Finishers) {
	for k := len(l.points) - 1; k >= 0; k-- {
		p := &l.points[k]
		if int(p.seg) != l.seg {
			return
		}
		n := slo.SurelyBefore(fin, time.Unix(0, p.t))
		if n <= 0 {
			return
		}
		p.qLo += n
	}
}

// last returns the newest checkpoint, or a zero one with the SLO slots.
func (l *Ledger) last() checkpoint {
	if len(l.points) == 0 {
		c := newCheckpoint(0, 0, len(l.slos))
		c.qHi = math.Inf(1)
		return c
	}
	return l.points[len(l.points)-1]
}

// dropIntervals drops the intervals that ended more than the matching
// horizon before now, keeping the newest.
func (l *Ledger) dropIntervals(now time.Time) {
	cut := 0
	for cut < len(l.intervals)-1 && l.intervals[cut].end.Before(now.Add(-matchHorizon)) {
		cut++
	}
	n := copy(l.intervals, l.intervals[cut:])
	clear(l.intervals[n:])
	l.intervals = trimCap(l.intervals[:n])
}

// ThinDue reports whether the checkpoints are due to be thinned at now:
// once per thinEvery, as each thinning walks them all.
func (l *Ledger) ThinDue(now time.Time) bool {
	return now.UnixNano()-l.thinned >= int64(thinEvery)
}

// Thin drops the checkpoints at scrapes the history no longer holds: held
// lists the times (Unix ns, ascending) at which it holds a point of the
// ledger's model. Its tiers and memory limit decide for both stores, so
// the checkpoint at a window's start is there whenever the history's point
// is.
func (l *Ledger) Thin(now time.Time, held []int64) {
	l.thinned = now.UnixNano()
	kept := l.points[:0]
	j := 0
	for _, p := range l.points {
		for j < len(held) && held[j] < p.t {
			j++
		}
		if j < len(held) && held[j] == p.t {
			kept = append(kept, p)
		}
	}
	clear(l.points[len(kept):])
	l.points = trimCap(kept)
}

// trimCap returns s in a smaller array when its capacity exceeds its length
// by more than an eighth, so that a ledger's memory follows what it keeps
// (an append doubles the array; the next thinning gives the slack back).
func trimCap[T any](s []T) []T {
	if c := cap(s); c > 32 && c > len(s)+len(s)/8 {
		return append(make([]T, 0, len(s)+len(s)/16+4), s...)
	}
	return s
}

// at returns the index of the newest checkpoint at or before t, -1 if none.
func (l *Ledger) at(t time.Time) int {
	ns := t.UnixNano()
	return sort.Search(len(l.points), func(i int) bool { return l.points[i].t > ns }) - 1
}

// edges returns the checkpoints at exactly the window's two scrapes, start
// and end, as the store decided them (store.Store.WindowEdges); ok is
// false unless the ledger holds both, end after start. A joint is a
// difference of the checkpoints at its edges, so taking the nearest ones
// instead (older than start when the ledger began after it) would count
// other scrapes than the window's other parts: the ledger answers for the
// window asked or not at all.
func (l *Ledger) edges(start, end time.Time) (i0, i1 int, ok bool) {
	i0, i1 = l.at(start), l.at(end)
	if i0 < 0 || i1 <= i0 || l.points[i0].t != start.UnixNano() || l.points[i1].t != end.UnixNano() {
		return 0, 0, false
	}
	return i0, i1, true
}

// Since is the scrape of the ledger's oldest checkpoint: no window of its
// joints starts before it (the store makes it the window's
// history.Options.NotBefore). ok is false while it holds none.
func (l *Ledger) Since() (time.Time, bool) {
	if len(l.points) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, l.points[0].t).UTC(), true
}

// Window returns SLO i's joint over the window (start, end]: from the
// checkpoint at start to the one at end. Callers pass the edges of the
// window the joint belongs to (store.Store.WindowEdges); the
// checkpoints are those of the history's points, so both cover the same
// scrapes. ok is false unless the ledger holds a checkpoint at each edge
// (see edges).
//
// Where spans covered some of the window's intervals, the joint is narrowed
// by their counts (exact.go): exact when they covered all of them.
func (l *Ledger) Window(i int, start, end time.Time) (slo.Joint, bool) {
	return l.WindowOf(i, start, end, true)
}

// WindowOf is Window, from the histograms alone unless spans is set: what a
// calibration of the histograms against the spans compares.
func (l *Ledger) WindowOf(i int, start, end time.Time, spans bool) (slo.Joint, bool) {
	return l.WindowIn(i, start, end, spans, nil)
}

// Scratch is the memory a window's joint is computed in (the kept
// intervals listed for the coupling, their reaches, the token curves, and
// the coupling's own), reused by WindowIn from one window to the next and
// from one ledger to another: an evaluation joins every window of every
// target, and what it allocates sets how often the collector marks the
// heap of histories again, while memory kept in each ledger would stay
// with every target between evaluations. Its zero value is ready; the
// joints it helped compute hold none of it, and one goroutine at a time
// may use it.
type Scratch struct {
	reaches []int
	ivs     []slo.CoupledInterval
	curves  []*slo.TokenCurve
	couple  slo.CoupleScratch
}

// WindowIn is WindowOf with its memory taken from s (nil: allocated for
// the call); the joint is WindowOf's to the bit.
func (l *Ledger) WindowIn(i int, start, end time.Time, spans bool, s *Scratch) (slo.Joint, bool) {
	if s == nil {
		s = new(Scratch)
	}
	i0, i1, ok := l.edges(start, end)
	if !ok {
		return slo.Joint{}, false
	}
	p0, p1 := l.points[i0], l.points[i1]
	a, b := p0.sum(i), p1.sum(i)
	w := slo.Joint{Start: time.Unix(0, p0.t).UTC(), End: time.Unix(0, p1.t).UTC(), Finished: b.finished - a.finished}
	w.FinishedTokens = p1.finishedTokens - p0.finishedTokens
	if b.unknown > a.unknown {
		w.Unknown = metricsOf(b.unknownMask)
		return w, true
	}
	w.Good = l.good(i, i0, i1, s)
	w.HasTokens = b.tokensUnknown == a.tokensUnknown
	w.Tokens = slo.Bounded{Lower: b.tokLo - a.tokLo, Upper: b.tokHi - a.tokHi, Estimate: b.tokEst - a.tokEst}.NonNegative()
	// Rounding of the running sums aside, the good requests' tokens are a
	// part of the finished requests' tokens.
	w.Tokens.Upper = math.Min(w.Tokens.Upper, w.FinishedTokens)
	w.Tokens = w.Tokens.NonNegative()
	if curves, ok := l.tokenCurves(i, p0.t, p1.t, s); ok {
		w.Tokens = w.Tokens.Intersect(slo.CoupleTokensIn(curves, w.Good, &s.couple))
	}
	if spans {
		l.withSpans(i, i0, i1, &w)
	}
	w.Abandoned = slo.Abandoned(queueAt(p0), queueAt(p1), p1.firstTokens-p0.firstTokens, p1.finished-p0.finished)
	w.Good, w.Tokens, w.Abandoned = w.Good.WholeCounts(), w.Tokens.WholeCounts(), w.Abandoned.WholeCounts()
	return w, true
}

// good bounds SLO i's good requests between checkpoints i0 and i1: the
// per-interval sums, tightened by the kept intervals' totals and coupling
// and by the closed blocks; the coupling's memory is s's.
func (l *Ledger) good(i, i0, i1 int, s *Scratch) slo.Bounded {
	p0, p1 := l.points[i0], l.points[i1]
	a, b := p0.sum(i), p1.sum(i)
	good := slo.Bounded{Lower: b.lo - a.lo, Upper: b.hi - a.hi, Estimate: b.est - a.est}.NonNegative()
	if t, ok := l.totals(i, p0.t, p1.t); ok {
		good = slo.TightenWindow(good, t)
		if ivs, pre, ok := l.coupled(i, p0.t, p1.t, s); ok {
			good = good.Intersect(slo.CoupleWindowIn(ivs, pre, t.BadAtStart, t.GoodAtStart, &s.couple))
		}
	}
	if bl, ok := l.blocked(i, i0, i1); ok {
		good = good.Intersect(bl)
	}
	return good
}

// queueAt bounds the requests past their first token in flight at a
// checkpoint; the estimate (queueEstimate) is clamped into the bounds.
func queueAt(p checkpoint) slo.Bounded {
	b := slo.Bounded{Lower: p.qLo, Upper: math.Max(p.qLo, p.qHi)}
	b.Estimate = math.Min(math.Max(p.qEst, b.Lower), b.Upper)
	return b
}

// queueEstimate estimates the requests past their first token in flight at
// w's end scrape (at its start when atStart), the Q whose difference between
// two scrapes gives the abandoned requests.
//
// Q is a count at an instant, and vLLM's running gauge is one at the same
// instant: a request joins the batch for the step that computes its prompt
// and produces its first token, and stays in it until it finishes, is
// cancelled or is preempted. So running counts Q, over by the prompts in
// prefill at the scrape (at most a step's admissions, or a chunked prompt's
// few steps) and under by the preempted requests waiting again; both are a
// small part of a batch. Waiting requests have no first token (preempted ones
// aside) and are left out.
//
// The alternative, the decode stage's mean occupancy over the interval by
// Little's law (the decode-time histogram's sum over the interval's length),
// estimates a different quantity: a mean over the whole interval, not the
// count at its edge, so each edge's estimate errs by how the batch moved
// within the interval and those errors do not cancel in a difference. It
// also misses every cancelled stream, whose decode time no histogram
// observes, exactly where abandoned requests matter. It remains the fallback
// when the running gauge is unknown.
func queueEstimate(w slo.Window, atStart bool) float64 {
	if w.Running.Known {
		r := w.Running.AtEnd
		if atStart {
			r = w.Running.AtStart
		}
		if !math.IsNaN(r) {
			return math.Max(0, r)
		}
	}
	if d, ok := w.Latency[slo.Decode]; ok && d.Valid() && w.Seconds() > 0 {
		return math.Max(0, d.Sum) / w.Seconds()
	}
	return 0
}

// totals sums SLO i's window totals over the kept intervals of (from, to]
// (Unix ns); ok is false when the SLO has no TTFT objective or the kept
// intervals do not cover the window.
func (l *Ledger) totals(i int, from, to int64) (slo.WindowTotals, bool) {
	if _, ok := slo.TTFTThreshold(l.slos[i]); !ok {
		return slo.WindowTotals{}, false
	}
	first, last, ok := l.span(from, to)
	if !ok {
		return slo.WindowTotals{}, false
	}
	t := slo.WindowTotals{BadAtStart: math.Inf(1), GoodAtStart: math.Inf(1)}
	if first > 0 {
		p := l.intervals[first-1].sources[i]
		t.BadAtStart, t.GoodAtStart = p.InFlightEnd, p.InFlightEnd
		if p.HasSplit {
			t.BadAtStart, t.GoodAtStart = math.Min(t.BadAtStart, p.InFlightBad), math.Min(t.GoodAtStart, p.InFlightGood)
		}
	} else if r := l.intervals[0].inFlightStart; !math.IsNaN(r) {
		t.BadAtStart, t.GoodAtStart = r, r
	}
	if math.IsNaN(t.BadAtStart) || math.IsNaN(t.GoodAtStart) {
		return slo.WindowTotals{}, false
	}
	for k := first; k < last; k++ {
		iv := &l.intervals[k]
		if len(iv.judged) <= i || len(iv.sources) <= i {
			return slo.WindowTotals{}, false
		}
		src := &iv.sources[i]
		t.BadIn += src.Bad
		t.GoodIn += src.Good
		j := &iv.judged[i]
		if !iv.counted {
			continue
		}
		if j.unknown {
			return slo.WindowTotals{}, false
		}
		t.N += j.n
		t.FinishGood.Lower += j.finLo
		t.FinishGood.Upper += j.finHi
		t.TTFTGood.Lower += j.ttftLo
		t.TTFTGood.Upper += j.ttftHi
	}
	return t, true
}

// coupled lists SLO i's kept intervals for slo.CoupleWindow: those of
// (from, to] (Unix ns), after pre intervals before the window that its
// finishers can reach; ok is false unless the kept intervals cover the
// window (totals checks the same). The list is in s's memory (nil:
// allocated), valid until s is used again.
func (l *Ledger) coupled(i int, from, to int64, s *Scratch) (ivs []slo.CoupledInterval, pre int, ok bool) {
	first, last, ok := l.span(from, to)
	if !ok {
		return nil, 0, false
	}
	if s == nil {
		s = new(Scratch)
	}
	// Each interval's reach is looked up once: the window's intervals are
	// read here for the head, and the head's own reach read below. The
	// reaches of head's intervals before first are looked up only there.
	reaches := grown(s.reaches, last-first)
	s.reaches = reaches
	reach := first
	for k := first; k < last; k++ {
		reaches[k-first] = l.reachIndex(k)
		reach = min(reach, reaches[k-first])
	}
	head := max(reach, 0)
	ivs = grown(s.ivs, last-head)[:0]
	for k := head; k < last; k++ {
		iv := &l.intervals[k]
		j, src := &iv.judged[i], &iv.sources[i]
		var from int
		if k >= first {
			from = reaches[k-first]
		} else {
			from = l.reachIndex(k)
		}
		if from >= 0 {
			from -= head
		}
		ivs = append(ivs, slo.CoupledInterval{
			Bad: src.Bad, Good: src.Good, Counted: k >= first && iv.counted && !j.unknown,
			N: j.n, FinishLo: j.finLo, FinishHi: j.finHi, TTFTLo: j.ttftLo, TTFTHi: j.ttftHi,
			From: from,
		})
	}
	s.ivs = ivs
	return ivs, first - head, true
}

// grown returns n elements of buf's array (their contents undefined),
// a new array when it has fewer.
func grown[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// reachIndex is the index of the earliest kept interval that can hold the
// first token of one of interval k's finishers, -1 when they reach beyond
// the kept intervals. The interval the reach started in may since have been
// dropped (compact keeps an hour): the reach then extends beyond the kept
// ones, and a reach that falls inside an interval (only an inconsistent
// state) is widened to take that interval in.
func (l *Ledger) reachIndex(k int) int {
	iv := &l.intervals[k]
	if iv.reachOlder {
		return -1
	}
	m := sort.Search(len(l.intervals), func(m int) bool { return l.intervals[m].start.UnixNano() >= iv.reachStart })
	if m < len(l.intervals) && l.intervals[m].start.UnixNano() == iv.reachStart {
		return m
	}
	return m - 1
}

// span returns the kept intervals of the window (from, to] (Unix ns) as
// the range [first, last); ok is false unless they cover it from its start
// and hold at least one.
func (l *Ledger) span(from, to int64) (first, last int, ok bool) {
	first = sort.Search(len(l.intervals), func(k int) bool { return l.intervals[k].end.UnixNano() > from })
	if first >= len(l.intervals) || l.intervals[first].start.UnixNano() != from {
		return 0, 0, false
	}
	last = first
	for last < len(l.intervals) && l.intervals[last].end.UnixNano() <= to {
		last++
	}
	return first, last, last > first
}

// tokenCurves lists SLO i's token curves of the counted intervals of
// (from, to] (Unix ns) for slo.CoupleTokensIn; ok is false unless the kept
// intervals cover the window and each has its curve. The list is in s's
// memory, valid until s is used again.
func (l *Ledger) tokenCurves(i int, from, to int64, s *Scratch) ([]*slo.TokenCurve, bool) {
	first, last, ok := l.span(from, to)
	if !ok {
		return nil, false
	}
	out := grown(s.curves, last-first)[:0]
	s.curves = out
	for k := first; k < last; k++ {
		iv := &l.intervals[k]
		if !iv.counted {
			continue
		}
		j := &iv.judged[i]
		if j.unknown || !j.hasTokens {
			return nil, false
		}
		out = append(out, &j.tokens)
	}
	return out, len(out) > 0
}

// Judged is what the finishers of one counted interval were found to meet.
type Judged struct {
	Start, End time.Time
	// Finished is the number of finishers; FinishGood bounds those meeting
	// every objective observed at the finish.
	Finished   float64
	FinishGood slo.Bounded
}

// JudgedIntervals lists SLO i's counted intervals kept, oldest first: what
// a check of the per-interval bounds against the truth reads.
func (l *Ledger) JudgedIntervals(i int) []Judged {
	var out []Judged
	for _, iv := range l.intervals {
		if !iv.counted || i >= len(iv.judged) {
			continue
		}
		j := iv.judged[i]
		out = append(out, Judged{Start: iv.start, End: iv.end, Finished: j.n, FinishGood: slo.Bounded{Lower: j.finLo, Upper: j.finHi}})
	}
	return out
}

// Sums bounds SLO i's good requests over the window (start, end] (as
// Window spans it) by the per-interval sums alone, before the totals, the
// coupling and the blocks tighten them.
func (l *Ledger) Sums(i int, start, end time.Time) (slo.Bounded, bool) {
	i0, i1, ok := l.edges(start, end)
	if !ok {
		return slo.Bounded{}, false
	}
	a, b := l.points[i0].sum(i), l.points[i1].sum(i)
	return slo.Bounded{Lower: b.lo - a.lo, Upper: b.hi - a.hi, Estimate: b.est - a.est}, true
}

// Len is how many intervals and checkpoints the ledger holds: intervals are
// at most matchHorizon of scrapes, checkpoints at most the points the
// history holds for the model plus the scrapes of one thinEvery.
func (l *Ledger) Len() (intervals, checkpoints int) {
	return len(l.intervals), len(l.points)
}

// IntervalGood is one scrape interval as the capacity estimate reads it
// (Record.Interval): its span, whether a restart opened it, and one SLO's
// bounds on its good requests.
type IntervalGood struct {
	Start, End time.Time
	Restarted  bool
	// Finished is the interval's finishers; Good bounds those that met
	// every per-request objective. GoodKnown is false inside a warm-up or
	// when an objective could not be judged in the interval.
	Finished  float64
	Good      slo.Bounded
	GoodKnown bool
}
