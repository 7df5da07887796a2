package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// pass is one evaluation of one model: history window → ledger joints →
// slo → report, each window read from the history once and evaluated once
// however many parts of the report ask for it (the regular windows, the
// error budgets, the burn-rate alerts' windows, exact mode's lagged
// windows). Its memory is one evaluated window per distinct (end, length,
// warm-up) asked for, taken from its scratch and handed back with the pass
// (the report copies what it keeps). t.mu must be held.
type pass struct {
	t     *target
	spec  Spec
	model string
	now   time.Time
	done  map[passKey]*evaluated
	sc    *passScratch
}

// passScratch is the memory passes reuse one after the other: the
// ledger's joints' (ledger.Ledger.WindowIn), the pass's index of its
// windows, and the evaluated windows themselves, so that an evaluation of
// every target allocates them once per goroutine instead of once per
// window (what it allocates sets how often the collector marks the heap of
// histories again). One pass at a time may use it: a pass's evaluated
// windows are valid until the next pass begins. Its zero value is ready.
type passScratch struct {
	joints ledger.Scratch
	done   map[passKey]*evaluated
	// windows holds every evaluated window allocated so far; the pass uses
	// windows[:used].
	windows []*evaluated
	used    int
}

// next returns a zero evaluated window of the pass's memory.
func (sc *passScratch) next() *evaluated {
	if sc.used == len(sc.windows) {
		sc.windows = append(sc.windows, new(evaluated))
	}
	e := sc.windows[sc.used]
	sc.used++
	*e = evaluated{}
	return e
}

// passKey names a window of a pass: where it ends, how long it is, and
// whether the warm-up after each restart is left out (only when the target
// has one: otherwise both are the same window).
type passKey struct {
	end    time.Time
	length time.Duration
	warm   bool
	// histograms leaves out what spans made exact in the ledger (for
	// exact mode's calibration).
	histograms bool
}

// evaluated is one window of a pass and its evaluation; ok is false when
// the history holds no such window. edges are the scrapes it runs between
// (store.Store.WindowEdges), which every part of it was read between.
// quantiles says whether rep holds the configured quantiles (the budgets
// and alerts need none, and they are the costly part).
type evaluated struct {
	edges     history.Edges
	w         slo.Window
	rep       slo.WindowReport
	ok        bool
	quantiles bool
}

// newPass begins a pass in sc's memory (nil: its own), which the pass
// before it on sc hands back.
func (t *target) newPass(spec Spec, model string, now time.Time, sc *passScratch) *pass {
	if sc == nil {
		sc = new(passScratch)
	}
	if sc.done == nil {
		sc.done = map[passKey]*evaluated{}
	}
	clear(sc.done)
	sc.used = 0
	return &pass{t: t, spec: spec, model: model, now: now, done: sc.done, sc: sc}
}

// window returns the window (end − length, end], evaluated with the
// ledger's joints over the same scrapes, with the quantiles when asked; warm
// leaves the warm-up after each restart out (when the target has one).
func (p *pass) window(end time.Time, length time.Duration, warm, quantiles bool) *evaluated {
	return p.windowOf(passKey{end: end, length: length, warm: warm && p.t.spec.Warmup > 0}, quantiles)
}

func (p *pass) windowOf(k passKey, quantiles bool) *evaluated {
	e := p.done[k]
	if e == nil {
		e = p.sc.next()
		if e.edges, e.ok = p.t.store.WindowEdges(p.model, k.end, k.length); e.ok {
			e.w, e.ok = p.t.store.Counts(p.model, e.edges, k.warm)
		}
		p.done[k] = e
	} else if !e.ok || e.quantiles || !quantiles {
		return e
	}
	if !e.ok {
		return e
	}
	opts := slo.Options{}
	if quantiles {
		opts.Quantiles = p.spec.Quantiles
	}
	joints := p.t.store.Joints(p.model, e.edges, p.spec.SLOs, k.histograms, p.spec.Traces != nil, &p.sc.joints)
	e.rep = slo.Evaluate(e.w, p.spec.SLOs, joints, opts)
	e.quantiles = quantiles
	return e
}

// result is the named SLO's result over a window, false when the window
// holds no finished request.
func (e *evaluated) result(name string) (slo.SLOResult, bool) {
	i := slices.IndexFunc(e.rep.SLOs, func(r slo.SLOResult) bool { return r.Name == name })
	if !e.ok || i < 0 {
		return slo.SLOResult{}, false
	}
	return e.rep.SLOs[i], true
}

// evaluateModel is one pass over model at now in sc's memory (nil: its
// own).
func (t *target) evaluateModel(spec Spec, model string, now time.Time, sc *passScratch) ModelReport {
	p := t.newPass(spec, model, now, sc)
	mr := ModelReport{Name: model}
	for _, length := range spec.Windows {
		wr, exact, ok := p.regular(length)
		if !ok {
			continue
		}
		if exact != nil {
			mr.Traces = append(mr.Traces, *exact)
		}
		wr.Price(t.spec.HourlyCost)
		if mr.Windows == nil { // room for all at once: a report is large
			mr.Windows = make([]slo.WindowReport, 0, len(spec.Windows))
		}
		mr.Windows = append(mr.Windows, wr)
	}
	if len(spec.SLOs) > 0 {
		mr.Budgets = make([]Budget, 0, len(spec.SLOs))
	}
	for _, s := range spec.SLOs {
		mr.Budgets = append(mr.Budgets, p.budget(s))
	}
	for _, a := range spec.Alerts {
		mr.Burns = append(mr.Burns, p.burnCheck(a))
	}
	mr.GoodRequests = t.store.GoodTotals(model)
	return mr
}

// maxGapHalfIntervals is how many half scrape intervals apart two scrapes
// may be for a window's start to be taken across them: one failed scrape
// is tolerated even when the scrapes around it were each taken up to a
// quarter interval off their nominal time (a scraper's jitter: up to two
// and a half intervals apart, where two intervals would split such a gap
// and drop it from the window while the rules, which read the latest
// sample within lookback, count it), and a longer outage (two failed
// scrapes: three intervals, no less than two and a half under that
// jitter) or a clock jump makes the window start after it (see
// store.Store.WindowEdges; the good-request totals do not care: their
// increase over a gap is still exact).
const maxGapHalfIntervals = 5

// budget is SLO s's error budget over its period, warm-ups left out.
func (p *pass) budget(s slo.SLO) Budget {
	b := Budget{SLO: s.Name}
	e := p.window(p.now, s.Period, true, false)
	b.End = e.w.End
	r, ok := e.result(s.Name)
	if !ok {
		return b
	}
	all, ok := r.Objectives[slo.AllKey]
	if !ok {
		return b
	}
	b.Remaining = slo.ErrorBudgetRemaining(all, s.Goal)
	b.Covered = e.w.End.Sub(e.w.Start)
	b.Known = true
	b.Coverage, _ = e.w.Coverage()
	if i := slices.IndexFunc(p.spec.SLOs, func(d slo.SLO) bool { return d.Name == s.Name }); p.spec.Traces != nil {
		b.TracesCoverage, b.HasTracesCoverage = p.t.store.SpansCoverage(p.model, i, e.edges)
	}
	return b
}

// burnCheck evaluates one burn-rate alert's two windows for a model. An
// alert whose SLO the spec does not define is not evaluated against an
// empty SLO: it stays unknown (never active) and its Reason says why.
func (p *pass) burnCheck(a BurnAlert) BurnCheck {
	c := BurnCheck{Alert: a}
	i := slices.IndexFunc(p.spec.SLOs, func(s slo.SLO) bool { return s.Name == a.SLO })
	if i < 0 {
		c.Reason = fmt.Sprintf("the spec defines no SLO %q", a.SLO)
		return c
	}
	s := p.spec.SLOs[i]
	burn := func(length time.Duration) (slo.Bounded, slo.Evidence, bool) {
		e := p.window(p.now, length, true, false)
		r, ok := e.result(s.Name)
		if !ok || !r.HasBurnRate {
			return slo.Bounded{}, slo.Evidence{}, false
		}
		return r.BurnRate, slo.EvidenceOf(r, s, e.w), true
	}
	var okLong, okShort bool
	c.Long, c.LongEvidence, okLong = burn(a.Long)
	c.Short, c.ShortEvidence, okShort = burn(a.Short)
	c.Known = okLong && okShort
	if !c.Known {
		c.Reason = "the long or the short window holds no finished request"
	}
	return c
}
