package ledger

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Exact intervals. vLLM's spans describe every finished request; when the
// spans that ended in one scrape interval number exactly the requests vLLM
// counted finished over the same two scrapes, they are that interval's
// finishers, and their count of good requests replaces the histograms'
// bound on the interval. Spans arrive after the counters move (the sender
// batches them), so an interval is noted pending when it closes and
// settled later (Settle): covered, when the spans number its finishers and
// agree with its proved bounds, or not, once they can no longer arrive.
//
// A covered interval's numbers go into running sums kept beside the
// histograms' (exactSums, at every checkpoint from the interval's end on),
// so that a window of any length, the SLO period's included, is the sum of
// its covered intervals' exact counts and of its other intervals' bounds:
//
//	good ∈ [Σ_uncovered lo + Σ_covered g, Σ_uncovered hi + Σ_covered g]
//
// computed as the per-interval sums minus the covered intervals' bounds
// plus their counts. Each interval's bound holds its own good requests
// (that is what the per-interval sums are), and a covered interval's count
// is its good requests, so the sum holds the window's; it is intersected
// with the window's tightened bound, which holds them too. A window whose
// every interval is covered is exact.

// exactSums are one SLO's running sums over the counted intervals the
// spans covered.
type exactSums struct {
	// n is the covered intervals' finished requests.
	n float64
	// spanLo, spanHi and spanEst bound those intervals' good requests as
	// the spans count them (equal unless a span lacked a metric an
	// objective needs); histLo, histHi and histEst are the per-interval
	// bounds the histograms gave the same intervals, which the spans'
	// replace.
	spanLo, spanHi, spanEst float64
	histLo, histHi, histEst float64
	// The same for the good requests' generation tokens, over the covered
	// intervals whose histograms bounded them.
	tokSpanLo, tokSpanHi, tokSpanEst float64
	tokHistLo, tokHistHi, tokHistEst float64
}

func (e *exactSums) add(d exactSums) {
	e.n += d.n
	e.spanLo, e.spanHi, e.spanEst = e.spanLo+d.spanLo, e.spanHi+d.spanHi, e.spanEst+d.spanEst
	e.histLo, e.histHi, e.histEst = e.histLo+d.histLo, e.histHi+d.histHi, e.histEst+d.histEst
	e.tokSpanLo, e.tokSpanHi, e.tokSpanEst = e.tokSpanLo+d.tokSpanLo, e.tokSpanHi+d.tokSpanHi, e.tokSpanEst+d.tokSpanEst
	e.tokHistLo, e.tokHistHi, e.tokHistEst = e.tokHistLo+d.tokHistLo, e.tokHistHi+d.tokHistHi, e.tokHistEst+d.tokHistEst
}

func (e exactSums) minus(o exactSums) exactSums {
	return exactSums{
		n:      e.n - o.n,
		spanLo: e.spanLo - o.spanLo, spanHi: e.spanHi - o.spanHi, spanEst: e.spanEst - o.spanEst,
		histLo: e.histLo - o.histLo, histHi: e.histHi - o.histHi, histEst: e.histEst - o.histEst,
		tokSpanLo: e.tokSpanLo - o.tokSpanLo, tokSpanHi: e.tokSpanHi - o.tokSpanHi, tokSpanEst: e.tokSpanEst - o.tokSpanEst,
		tokHistLo: e.tokHistLo - o.tokHistLo, tokHistHi: e.tokHistHi - o.tokHistHi, tokHistEst: e.tokHistEst - o.tokHistEst,
	}
}

// exactSum returns SLO i's running sums over the covered intervals up to
// the checkpoint (zero before the first covered one).
func (c *checkpoint) exactSum(i int) exactSums {
	if c.more == nil || len(c.more.exact) <= i {
		return exactSums{}
	}
	return c.more.exact[i]
}

// addExact adds d, SLO by SLO, to the checkpoint's running sums.
func (c *checkpoint) addExact(d []exactSums) {
	if c.more == nil {
		c.more = &moreSums{}
	}
	if len(c.more.exact) < len(d) {
		c.more.exact = append(c.more.exact, make([]exactSums, len(d)-len(c.more.exact))...)
	}
	for i := range d {
		c.more.exact[i].add(d[i])
	}
}

// copyExact gives cp, a new checkpoint, prev's running sums over the
// covered intervals.
func (cp *checkpoint) copyExact(prev checkpoint) {
	if prev.more == nil {
		return
	}
	if len(prev.more.objective) > 0 {
		if cp.more == nil {
			cp.more = &moreSums{}
		}
		cp.more.objective = slices.Clone(prev.more.objective)
	}
	if len(prev.more.exact) == 0 {
		return
	}
	cp.addExact(prev.more.exact)
}

// pending is a counted interval waiting for its spans: what its
// settlement needs of the histograms' judgment.
type pending struct {
	start, end int64 // Unix ns
	// finished is the interval's finishers as the ledger counts them;
	// success is vLLM's finished-request counter's increase (NaN unknown):
	// the spans must number both.
	finished, success float64
	slos              []pendingSLO
}

// pendingSLO is one SLO's per-interval bounds, from the checkpoints'
// difference: known is false when an objective could not be judged (the
// interval is then in no sum, so nothing is replaced), tokKnown when the
// token histogram did not bound the good requests' tokens.
type pendingSLO struct {
	known, tokKnown      bool
	lo, hi, est          float64
	tokLo, tokHi, tokEst float64
	// obj holds, per per-request objective (PerRequest order), the
	// interval's bounds on the finishers meeting it: lower, upper and
	// estimate, three numbers each; nil when they were not kept (a state
	// written before them, or an objective not judged).
	obj []float64
}

// maxPending caps the intervals waiting for spans (a day of 15 s scrapes
// is 5,760): Settle gives up on intervals older than its horizon, so only
// a caller that stops settling reaches it, and then the oldest go
// uncovered.
const maxPending = 4096

// ExpectSpans tells the ledger that spans will be offered (Settle): from
// the next Append on, counted intervals wait for them. Without it, the
// ledger keeps nothing for spans.
func (l *Ledger) ExpectSpans() { l.spans = true }

// notePending records the interval that closed at cp (after prev) as
// waiting for its spans.
func (l *Ledger) notePending(w slo.Window, counted bool, prev, cp *checkpoint) {
	if !l.spans || !counted {
		return
	}
	p := pending{start: w.Start.UnixNano(), end: w.End.UnixNano(), finished: cp.finished - prev.finished, success: math.NaN()}
	if w.HasRequestSuccess && !math.IsNaN(w.RequestSuccess) && !math.IsInf(w.RequestSuccess, 0) {
		p.success = w.RequestSuccess
	}
	p.slos = make([]pendingSLO, len(l.slos))
	for i := range l.slos {
		a, b := prev.sum(i), cp.sum(i)
		ps := &p.slos[i]
		ps.known = b.unknown == a.unknown
		ps.lo, ps.hi, ps.est = b.lo-a.lo, b.hi-a.hi, b.est-a.est
		ps.tokKnown = ps.known && b.tokensUnknown == a.tokensUnknown
		ps.tokLo, ps.tokHi, ps.tokEst = b.tokLo-a.tokLo, b.tokHi-a.tokHi, b.tokEst-a.tokEst
		if ps.known {
			ps.obj = l.intervalObjectives(i, prev, cp)
		}
	}
	if len(l.pending) >= maxPending {
		l.pending = append(l.pending[:0], l.pending[1:]...)
	}
	l.pending = append(l.pending, p)
}

// Spans reads the spans that ended in (start, end]: when they number
// exactly finished, it returns their counts (SpanCounts) and ok; otherwise
// ok is false.
type Spans func(start, end time.Time, finished int) (SpanCounts, bool)

// SpanCounts is what the spans of one scrape interval count, per SLO in the
// ledger's order.
type SpanCounts struct {
	// Good counts the requests meeting every objective, Tokens their
	// generation tokens.
	Good, Tokens []slo.Bounded
	// Objectives counts, per SLO, the requests meeting each per-request
	// objective alone, in the order of PerRequest(slo). A nil or short
	// entry leaves the interval's per-objective counts to the histograms.
	Objectives [][]slo.Bounded
}

// Settled is an interval whose spans were settled: covered by them or not.
type Settled struct {
	Start, End time.Time
	// Covered is true when the spans numbered the interval's finishers and
	// agreed with its proved bounds.
	Covered bool
	// Good is, per SLO, the interval's estimate of the requests meeting
	// every objective: the spans' count when covered, the histograms'
	// otherwise; Known is false where neither judged every objective.
	Good  []float64
	Known []bool
	// Objectives is, per SLO, the interval's estimate of the requests
	// meeting each per-request objective (PerRequest order): the spans'
	// count when covered, the histograms' per-interval estimate otherwise;
	// nil for an SLO whose objectives the interval did not judge.
	Objectives [][]float64
}

// Settle offers the pending intervals that ended at or before ready to
// spans: an interval the spans cover goes into the running sums; one they
// do not stays pending while it ended after expired (its spans may still
// arrive), then settles uncovered. It returns the intervals settled, oldest
// first.
func (l *Ledger) Settle(ready, expired time.Time, spans Spans) []Settled {
	var out []Settled
	kept := l.pending[:0]
	for _, p := range l.pending {
		if p.end > ready.UnixNano() {
			kept = append(kept, p)
			continue
		}
		s, done := l.settle(p, expired, spans)
		if !done {
			kept = append(kept, p)
			continue
		}
		out = append(out, s)
	}
	clear(l.pending[len(kept):])
	l.pending = trimCap(kept)
	return out
}

// settle offers one pending interval to spans; done is false while its
// spans may still arrive.
func (l *Ledger) settle(p pending, expired time.Time, spans Spans) (s Settled, done bool) {
	s = Settled{Start: timeOf(p.start), End: timeOf(p.end), Good: make([]float64, len(p.slos)), Known: make([]bool, len(p.slos))}
	for i, ps := range p.slos {
		s.Good[i], s.Known[i] = math.Max(0, ps.est), ps.known
	}
	s.Objectives = settledObjectives(p, nil, false)
	coverable := p.finished == math.Trunc(p.finished) && p.finished >= 0 && (math.IsNaN(p.success) || p.success == p.finished)
	if coverable {
		c, ok := spans(s.Start, s.End, int(p.finished))
		if ok && len(c.Good) == len(p.slos) && len(c.Tokens) == len(p.slos) {
			d, consistent := exactDelta(p, c.Good, c.Tokens)
			obj, objConsistent := l.objectiveDelta(p, c.Objectives)
			if consistent && objConsistent {
				l.applyExact(p.end, d, obj)
				s.Covered = true
				for i := range c.Good {
					s.Good[i], s.Known[i] = c.Good[i].Estimate, true
				}
				s.Objectives = settledObjectives(p, c.Objectives, true)
				return s, true
			}
			return s, true // the spans contradict the histograms: never exact
		}
	}
	if !coverable || p.end <= expired.UnixNano() {
		return s, true
	}
	return s, false
}

// exactDelta is what a covered interval adds to each SLO's running sums;
// consistent is false when the spans' count falls outside a bound the
// histograms prove for the same requests (both cannot describe them: the
// interval stays on the histograms).
func exactDelta(p pending, good, tokens []slo.Bounded) ([]exactSums, bool) {
	d := make([]exactSums, len(p.slos))
	for i, ps := range p.slos {
		if !ps.known {
			continue
		}
		if !finiteBound(good[i]) || !overlaps(good[i], ps.lo, ps.hi) {
			return nil, false
		}
		d[i] = exactSums{
			n:      p.finished,
			spanLo: good[i].Lower, spanHi: good[i].Upper, spanEst: good[i].Estimate,
			histLo: ps.lo, histHi: ps.hi, histEst: ps.est,
		}
		if !ps.tokKnown || !finiteBound(tokens[i]) {
			// No token bound of the histograms to replace, or none from
			// the spans (a span without its count): a running sum must
			// stay finite, or every later difference of two is NaN.
			continue
		}
		if !overlaps(tokens[i], ps.tokLo, ps.tokHi) {
			return nil, false
		}
		d[i].tokSpanLo, d[i].tokSpanHi, d[i].tokSpanEst = tokens[i].Lower, tokens[i].Upper, tokens[i].Estimate
		d[i].tokHistLo, d[i].tokHistHi, d[i].tokHistEst = ps.tokLo, ps.tokHi, ps.tokEst
	}
	return d, true
}

func finiteBound(b slo.Bounded) bool {
	for _, v := range [...]float64{b.Lower, b.Estimate, b.Upper} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// overlaps reports whether the spans' bound b meets the histograms' [lo,
// hi], the latter rounded inward to whole counts as a window's are (its
// ends are differences of running sums, with their float noise).
func overlaps(b slo.Bounded, lo, hi float64) bool {
	h := slo.Bounded{Lower: lo, Upper: hi}.WholeCounts()
	return b.Upper >= h.Lower && b.Lower <= h.Upper
}

// applyExact adds d to the running sums of every checkpoint at or after
// end: each window that holds the interval (it ends after the window's
// start and at or before its end) gets it by the difference of two of them.
func (l *Ledger) applyExact(end int64, d []exactSums, obj []float64) {
	for k := max(l.at(timeOf(end)), 0); k < len(l.points); k++ {
		if l.points[k].t >= end {
			l.points[k].addExact(d)
			l.points[k].addCoveredObjectives(l.slos, obj)
		}
	}
}

// mixed bounds SLO i's good requests and their tokens between checkpoints
// p0 and p1 by the per-interval sums with the covered intervals' bounds
// replaced by the spans' counts (see the top of this file); ok is false
// when no request between them finished in a covered interval (a covered
// interval without finishers replaces nothing).
func mixed(i int, p0, p1 *checkpoint) (good, tokens slo.Bounded, ok bool) {
	d := p1.exactSum(i).minus(p0.exactSum(i))
	if !(d.n > 0) {
		return slo.Bounded{}, slo.Bounded{}, false
	}
	a, b := p0.sum(i), p1.sum(i)
	good = slo.Bounded{
		Lower:    (b.lo - a.lo) - d.histLo + d.spanLo,
		Upper:    (b.hi - a.hi) - d.histHi + d.spanHi,
		Estimate: (b.est - a.est) - d.histEst + d.spanEst,
	}.NonNegative()
	tokens = slo.Bounded{
		Lower:    (b.tokLo - a.tokLo) - d.tokHistLo + d.tokSpanLo,
		Upper:    (b.tokHi - a.tokHi) - d.tokHistHi + d.tokSpanHi,
		Estimate: (b.tokEst - a.tokEst) - d.tokHistEst + d.tokSpanEst,
	}.NonNegative()
	return good, tokens, true
}

// withSpans narrows w, SLO i's joint between checkpoints i0 and i1, by
// the covered intervals' counts; the estimate is the mixed sum's (exact
// where covered), kept within the narrowed bounds.
func (l *Ledger) withSpans(i, i0, i1 int, w *slo.Joint) {
	good, tokens, ok := mixed(i, &l.points[i0], &l.points[i1])
	if !ok {
		return
	}
	w.Good = narrow(w.Good, good)
	if w.HasTokens {
		w.Tokens = narrow(w.Tokens, tokens)
	}
}

// narrow intersects two bounds on the same count, with m's estimate.
func narrow(b, m slo.Bounded) slo.Bounded {
	r := b.Intersect(m)
	r.Estimate = math.Min(math.Max(m.Estimate, r.Lower), r.Upper)
	return r
}

// Covered is how many of SLO i's finished requests of the window (start,
// end] (as Window spans it) lie in intervals the spans covered, and how
// many finished in all: their ratio is the share of the window that is
// exact. ok is false when Window has no joint there.
func (l *Ledger) Covered(i int, start, end time.Time) (covered, finished float64, ok bool) {
	i0, i1, ok := l.edges(start, end)
	if !ok {
		return 0, 0, false
	}
	p0, p1 := &l.points[i0], &l.points[i1]
	d := p1.exactSum(i).minus(p0.exactSum(i))
	a, b := p0.sum(i), p1.sum(i)
	return math.Max(0, d.n), math.Max(0, b.finished-a.finished), true
}

// exactState copies a checkpoint's running sums over the covered
// intervals into their state-file form (nil before the first).
func exactState(p *checkpoint) []exactSumsState {
	if p.more == nil || len(p.more.exact) == 0 {
		return nil
	}
	out := make([]exactSumsState, len(p.more.exact))
	for i, e := range p.more.exact {
		out[i] = exactSumsState{
			N: e.n, SpanLo: e.spanLo, SpanHi: e.spanHi, SpanEst: e.spanEst, HistLo: e.histLo, HistHi: e.histHi, HistEst: e.histEst,
			TokSpanLo: e.tokSpanLo, TokSpanHi: e.tokSpanHi, TokSpanEst: e.tokSpanEst, TokHistLo: e.tokHistLo, TokHistHi: e.tokHistHi, TokHistEst: e.tokHistEst,
		}
	}
	return out
}

// restoreExact puts a checkpoint's restored running sums over the covered
// intervals back; it refuses sums for another number of SLOs.
func restoreExact(p *checkpoint, st []exactSumsState, slos int) error {
	if len(st) == 0 {
		return nil
	}
	if len(st) != slos {
		return fmt.Errorf("checkpoint at %d: %d exact sums for %d SLOs", p.t, len(st), slos)
	}
	d := make([]exactSums, len(st))
	for i, e := range st {
		for _, v := range [...]float64{e.N, e.SpanLo, e.SpanHi, e.SpanEst, e.HistLo, e.HistHi, e.HistEst, e.TokSpanLo, e.TokSpanHi, e.TokSpanEst, e.TokHistLo, e.TokHistHi, e.TokHistEst} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("checkpoint at %d: exact sum %v", p.t, v)
			}
		}
		d[i] = exactSums{
			n: e.N, spanLo: e.SpanLo, spanHi: e.SpanHi, spanEst: e.SpanEst, histLo: e.HistLo, histHi: e.HistHi, histEst: e.HistEst,
			tokSpanLo: e.TokSpanLo, tokSpanHi: e.TokSpanHi, tokSpanEst: e.TokSpanEst, tokHistLo: e.TokHistLo, tokHistHi: e.TokHistHi, tokHistEst: e.TokHistEst,
		}
	}
	p.addExact(d)
	return nil
}

// pendingStates copies the intervals waiting for spans into their
// state-file form.
func pendingStates(ps []pending) []pendingState {
	out := make([]pendingState, 0, len(ps))
	for _, p := range ps {
		st := pendingState{Start: p.start, End: p.end, Finished: p.finished, Success: p.success}
		for _, s := range p.slos {
			st.SLOs = append(st.SLOs, pendingSLOState{Known: s.known, TokKnown: s.tokKnown, Lo: s.lo, Hi: s.hi, Est: s.est, TokLo: s.tokLo, TokHi: s.tokHi, TokEst: s.tokEst, Obj: cloneObjective(s.obj)})
		}
		out = append(out, st)
	}
	return out
}

// restorePending rebuilds the intervals waiting for spans; it refuses
// entries for another number of SLOs, out of order, or beyond the cap.
func restorePending(st []pendingState, slos []slo.SLO) ([]pending, error) {
	if len(st) > maxPending {
		return nil, fmt.Errorf("%d intervals waiting for spans, at most %d", len(st), maxPending)
	}
	out := make([]pending, 0, len(st))
	var last int64 = math.MinInt64
	for _, ps := range st {
		if len(ps.SLOs) != len(slos) || ps.End <= last || ps.Start >= ps.End {
			return nil, fmt.Errorf("interval waiting for spans at %d: %d SLO bounds for %d SLOs, or out of order", ps.End, len(ps.SLOs), len(slos))
		}
		last = ps.End
		p := pending{start: ps.Start, end: ps.End, finished: ps.Finished, success: ps.Success}
		for i, s := range ps.SLOs {
			if n := 3 * len(PerRequest(slos[i])); len(s.Obj) != 0 && (len(s.Obj) != n || !allFinite(s.Obj)) {
				return nil, fmt.Errorf("interval waiting for spans at %d: %d objective bounds for %d, or not finite", ps.End, len(s.Obj), n)
			}
			p.slos = append(p.slos, pendingSLO{known: s.Known, tokKnown: s.TokKnown, lo: s.Lo, hi: s.Hi, est: s.Est, tokLo: s.TokLo, tokHi: s.TokHi, tokEst: s.TokEst, obj: cloneObjective(s.Obj)})
		}
		out = append(out, p)
	}
	return out, nil
}
