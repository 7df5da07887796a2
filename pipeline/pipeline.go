// Package pipeline is the one path every mode shares: snapshots from package
// scrape go into a per-target history, windows of that history are evaluated
// by package slo, and the result is an immutable Report that package exporter
// renders. The daemon, replay and report differ only in where snapshots and
// time come from.
//
// It does no network I/O and reads no clock: time arrives with the snapshots
// and with each Evaluate call.
package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/traces"
)

// TargetSpec is what the pipeline needs to know of one configured target.
type TargetSpec struct {
	Name    string
	URL     string
	Profile scrape.Profile
	Labels  map[string]string
	// Warmup keeps the first Warmup after each vLLM (re)start out of SLO windows.
	Warmup time.Duration
	// HourlyCost is the GPU cost per hour; 0 disables cost series.
	HourlyCost float64
	// Interval is the scrape interval; target alerts hold for three of them.
	Interval time.Duration
}

// Spec is the evaluation configuration.
type Spec struct {
	Targets   []TargetSpec
	SLOs      []slo.SLO
	Windows   []time.Duration
	Quantiles []float64
	Currency  string
	// MaxModels caps the distinct model_name values kept per target; 0 means no cap.
	MaxModels int
	Retention history.Retention
	// HistoryLimit caps the memory of one target's history (0: none), and
	// HistoryTotalLimit that of all targets together (0: none): each target
	// then gets an equal share. See history.Retention.MaxBytes.
	HistoryLimit, HistoryTotalLimit int64
	// Alerts are the burn-rate alerts of the SLOs.
	Alerts []BurnAlert
	// Traces, when set, holds per-request records from vLLM's spans: each
	// window they fully cover is published exactly (see traces.Evaluate).
	Traces *traces.Store
	// TraceDelay is how long spans may take to arrive after the request
	// finished (the sender batches them): exact windows end at the newest
	// scrape at least TraceDelay old.
	TraceDelay time.Duration
}

// Pipeline holds the histories of all targets. It is safe for concurrent use:
// each target has its own lock, so a slow evaluation of one target never
// blocks the ingestion of another.
type Pipeline struct {
	mu      sync.RWMutex
	spec    Spec
	targets map[string]*target
	// retired are targets a reload removed or re-pointed, kept for revival
	// (see retired.go).
	retired []*target

	alertMu sync.Mutex
	alerts  alertBook
}

type target struct {
	mu   sync.Mutex
	spec TargetSpec
	hist *history.History

	tried, up      bool
	lastScrape     time.Time
	lastError      string
	scrapeDuration float64
	failures       map[string]float64
	rejections     map[FamilyRejection]float64
	missing        []string
	found          map[string]string
	modelsDropped  float64
	// offEdge holds a warning per SLO objective whose threshold is not an
	// edge of the scraped buckets (its attainment is bracketed, not exact).
	offEdge map[string]string
	// sloDefs is sloDefinitions of the spec the totals were counted under.
	sloDefs map[string]string
	// good[model][slo][objective] accumulates estimated good requests.
	good map[string]map[string]map[string]float64
	// ledgers holds each model's per-interval record, which "all", goodput,
	// abandoned requests, burn rates and budgets are computed from.
	ledgers map[string]*ledger
}

// New builds a pipeline for a spec.
func New(spec Spec) *Pipeline {
	p := &Pipeline{targets: map[string]*target{}}
	_ = p.Reconfigure(spec) // no target to carry over, so nothing can fail
	return p
}

// Reconfigure swaps in a new spec. A target whose name, URL and profile did
// not change keeps its history and counters; others start fresh (or revive a
// recently retired target of the same name, URL and profile), and targets no
// longer configured or re-pointed are retired. The new spec always applies;
// the error names the kept targets whose history could not move to the new
// retention (they keep it at the old one until the next reconfiguration).
func (p *Pipeline) Reconfigure(spec Spec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[string]*target, len(spec.Targets))
	var errs []error
	for _, ts := range spec.Targets {
		if old, ok := p.targets[ts.Name]; ok && old.spec.URL == ts.URL && old.spec.Profile.Name == ts.Profile.Name {
			old.mu.Lock()
			old.spec = ts
			if err := old.reconfigure(spec); err != nil {
				errs = append(errs, fmt.Errorf("target %q: history kept at its old retention: %w", ts.Name, err))
			}
			old.mu.Unlock()
			next[ts.Name] = old
			continue
		}
		next[ts.Name] = p.reviveOrNew(ts, spec)
	}
	p.retire(next)
	p.spec = spec
	p.targets = next
	return errors.Join(errs...)
}

// reconfigure carries a kept target over to a new spec: its history moves to
// the new retention (a longer window or period refills from now on; the
// windows say how far back they reach), and totals and warnings of SLOs that
// are gone or changed are dropped, so that no counter changes its meaning
// under the same labels. A history that cannot move stays as it is, and the
// error says why. t.mu must be held.
func (t *target) reconfigure(spec Spec) error {
	t.hist.SetMaxBytes(spec.historyLimitPerTarget())
	var err error
	if !slices.Equal(t.hist.Retention().Tiers, spec.Retention.Tiers) {
		err = t.migrate(spec.retention())
	}
	defs := sloDefinitions(spec.SLOs)
	for _, bySLO := range t.good {
		for name := range bySLO {
			if defs[name] != t.sloDefs[name] {
				delete(bySLO, name)
			}
		}
	}
	for model, l := range t.ledgers {
		if !slices.Equal(sloTexts(l.slos), sloTexts(spec.SLOs)) {
			delete(t.ledgers, model) // its sums are of another SLO list
		} else {
			l.slos = spec.SLOs
		}
	}
	t.sloDefs = defs
	clear(t.offEdge)
	return err
}

// migrate moves the history to another retention through its state
// encoding, the one path that already knows how to rebuild a history.
func (t *target) migrate(r history.Retention) error {
	data, err := t.hist.MarshalBinary()
	if err != nil {
		return err
	}
	h := history.New(r)
	if err := h.UnmarshalBinary(data); err != nil {
		return err
	}
	t.hist = h
	return nil
}

// historyLimitPerTarget is the memory cap of each target's history: the
// per-target limit, lowered to an equal share of the total limit.
func (s Spec) historyLimitPerTarget() int64 {
	limit := s.HistoryLimit
	if s.HistoryTotalLimit > 0 && len(s.Targets) > 0 {
		share := s.HistoryTotalLimit / int64(len(s.Targets))
		if limit <= 0 || share < limit {
			limit = share
		}
	}
	return limit
}

// retention is the retention of a target's history under this spec.
func (s Spec) retention() history.Retention {
	r := s.Retention
	r.MaxBytes = s.historyLimitPerTarget()
	return r
}

// sloDefinitions maps each SLO name to a text of its objectives and goal:
// when it changes, the SLO's good-request totals mean something else.
func sloDefinitions(slos []slo.SLO) map[string]string {
	defs := make(map[string]string, len(slos))
	for _, s := range slos {
		defs[s.Name] = fmt.Sprint(s.Objectives, s.Goal)
	}
	return defs
}

func newTarget(ts TargetSpec, spec Spec) *target {
	return &target{
		spec:     ts,
		sloDefs:  sloDefinitions(spec.SLOs),
		hist:     history.New(spec.retention()),
		failures: map[string]float64{},
		found:    map[string]string{},
		offEdge:  map[string]string{},
		good:     map[string]map[string]map[string]float64{},
		ledgers:  map[string]*ledger{},
	}
}

func (p *Pipeline) target(name string) (*target, Spec, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	t, ok := p.targets[name]
	if !ok {
		return nil, Spec{}, fmt.Errorf("%w %q", ErrUnknownTarget, name)
	}
	return t, p.spec, nil
}

// Profile returns the profile of a configured target.
func (p *Pipeline) Profile(name string) (scrape.Profile, error) {
	t, _, err := p.target(name)
	if err != nil {
		return scrape.Profile{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.spec.Profile, nil
}

// Ingest appends a successful scrape to the target's history. A snapshot
// older than the history's newest point (the clock stepped back) is refused
// with an error and changes nothing but the failure count.
func (p *Pipeline) Ingest(name string, snap *scrape.Snapshot, duration time.Duration) error {
	t, spec, err := p.target(name)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried = true
	t.scrapeDuration = duration.Seconds()
	t.capModels(snap, spec.MaxModels)
	prev := t.hist.Newest()
	if err := t.hist.Append(snap); err != nil {
		t.up = false
		reason := "invalid_value"
		if errors.Is(err, history.ErrOutOfOrder) {
			reason = "out_of_order"
		}
		t.failures[reason]++
		t.lastError = err.Error()
		return fmt.Errorf("target %q: %w", name, err)
	}
	t.up = true
	t.lastScrape = snap.Time
	t.lastError = rejectedSummary(snap.Rejected)
	if len(snap.Rejected) > 0 && t.rejections == nil {
		t.rejections = map[FamilyRejection]float64{}
	}
	for _, r := range snap.Rejected {
		t.rejections[FamilyRejection{Family: string(r.Family), Reason: r.Err.Reason}]++
	}
	t.missing = t.missing[:0]
	for _, f := range snap.Missing {
		t.missing = append(t.missing, string(f))
	}
	clear(t.found)
	for f, n := range snap.Found {
		t.found[string(f)] = n
	}
	if !prev.IsZero() {
		t.feedLedgers(spec, snap, snap.Time.Sub(prev))
		t.accumulateGood(spec.SLOs, snap.Time, snap.Time.Sub(prev))
	}
	t.checkEdges(spec.SLOs, snap)
	return nil
}

// rejectedSummary is the last error of a good scrape that left models out
// (the first rejection), "" when it left none out.
func rejectedSummary(rs []scrape.Rejection) string {
	if len(rs) == 0 {
		return ""
	}
	msg := "model left out of the scrape: " + rs[0].Err.Error()
	if len(rs) > 1 {
		msg += fmt.Sprintf(" (and %d more rejected families)", len(rs)-1)
	}
	return msg
}

// profileMismatch is a warning when the target's last good scrape held none
// of the families its profile maps: the target answers, but it is not that
// engine's /metrics (another engine, Ray Serve's re-export, a wrong path).
// The text is the same at every scrape, so that it is logged once.
func (t *target) profileMismatch() string {
	if !t.up || len(t.found) > 0 || len(t.missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the target serves none of the families of profile %q: is the URL the engine's /metrics? "+
		"(vLLM under Ray Serve needs profile \"ray-vllm\", SGLang profile \"sglang\")", t.spec.Profile.Name)
}

// checkEdges notes every objective whose threshold is not one of the scraped
// bucket edges, so the operator learns why its attainment is not exact.
func (t *target) checkEdges(slos []slo.SLO, snap *scrape.Snapshot) {
	for _, model := range slices.Sorted(maps.Keys(snap.Models)) {
		ms := snap.Models[model]
		for _, s := range slos {
			for _, o := range s.Objectives {
				h, ok := ms.Histograms[scrape.Family(o.Metric)]
				if !ok || slo.OnEdge(o.Threshold, h.Edges) {
					continue
				}
				key := s.Name + "/" + string(o.Metric)
				if _, seen := t.offEdge[key]; seen {
					continue
				}
				lo, hi := 0.0, math.Inf(1)
				for _, e := range h.Edges {
					if e < o.Threshold {
						lo = e
					} else {
						hi = e
						break
					}
				}
				t.offEdge[key] = fmt.Sprintf("SLO %q objective %s <= %gs is not a bucket edge of model %q (nearest edges %g and %g): its attainment is bracketed, not exact; a threshold on an edge makes it exact",
					s.Name, o.Metric, o.Threshold, model, lo, hi)
			}
		}
	}
}

// capModels drops models beyond the cap that the history does not know yet,
// so a target that suddenly serves thousands of model names cannot exhaust
// memory; the models already kept stay.
func (t *target) capModels(snap *scrape.Snapshot, maxModels int) {
	if maxModels <= 0 || len(snap.Models) == 0 {
		return
	}
	known := map[string]bool{}
	for _, m := range t.hist.Models() {
		known[m] = true
	}
	kept := len(known)
	for _, name := range slices.Sorted(maps.Keys(snap.Models)) {
		if known[name] {
			continue
		}
		if kept >= maxModels {
			delete(snap.Models, name)
			t.modelsDropped++
			continue
		}
		kept++
	}
}

// accumulateGood adds the estimated good requests of the interval that just
// ended to the running totals; each interval's estimate is non-negative, so the
// totals only grow.
func (t *target) accumulateGood(slos []slo.SLO, end time.Time, length time.Duration) {
	if len(slos) == 0 {
		return
	}
	opts := history.Options{Warmup: t.spec.Warmup}
	for _, model := range t.hist.Models() {
		w, ok := t.hist.Window(model, end, length, opts)
		if !ok {
			continue
		}
		rep := slo.EvaluateWindow(w, slos, slo.Options{})
		for _, r := range rep.SLOs {
			for obj, good := range r.GoodRequests {
				if obj == slo.AllKey && judgedByLedger(slos, r.Name) {
					continue
				}
				t.addGood(model, r.Name, obj, good.Estimate)
			}
		}
		l := t.ledgers[model]
		if l == nil || len(l.points) < 2 {
			continue
		}
		a, b := l.points[len(l.points)-2], l.points[len(l.points)-1]
		if b.t != end.UnixNano() {
			continue
		}
		for i, s := range slos {
			if judgedByLedger(slos, s.Name) && b.sum(i).unknown == a.sum(i).unknown {
				t.addGood(model, s.Name, slo.AllKey, b.sum(i).est-a.sum(i).est)
			}
		}
	}
}

// feedLedgers records the interval that just ended in each model's ledger.
func (t *target) feedLedgers(spec Spec, snap *scrape.Snapshot, length time.Duration) {
	if len(spec.SLOs) == 0 {
		return
	}
	for model := range snap.Models {
		w, ok := t.hist.Window(model, snap.Time, length, history.Options{})
		if !ok {
			continue
		}
		counted := true
		if t.spec.Warmup > 0 {
			ww, ok := t.hist.Window(model, snap.Time, length, history.Options{Warmup: t.spec.Warmup})
			counted = ok && finishersOf(ww).N == finishersOf(w).N
		}
		l := t.ledgers[model]
		if l == nil {
			l = newLedger(spec.SLOs)
			t.ledgers[model] = l
		}
		l.append(w, counted, t.hist.Retention())
	}
	held := t.hist.Models()
	for model := range t.ledgers {
		if !slices.Contains(held, model) {
			delete(t.ledgers, model)
		}
	}
}

// judgedByLedger reports whether the named SLO has a per-request objective,
// so that the ledger judges its "all"; an SLO of ITL objectives only is
// judged over token gaps by EvaluateWindow.
func judgedByLedger(slos []slo.SLO, name string) bool {
	for _, s := range slos {
		if s.Name != name {
			continue
		}
		for _, o := range s.Objectives {
			if o.Metric != slo.ITL {
				return true
			}
		}
	}
	return false
}

// overlay replaces the window-wide "all", goodput and burn rate of SLO i in
// r by the ledger's interval-by-interval ones over the same span as the
// history window w (from its start scrape to its end scrape), and adds the
// abandoned requests.
func (t *target) overlay(spec Spec, model string, i int, r *slo.SLOResult, w slo.Window) {
	s := spec.SLOs[i]
	if !judgedByLedger(spec.SLOs, s.Name) {
		return
	}
	l := t.ledgers[model]
	var lw ledgerWindow
	ok := l != nil
	if ok {
		lw, ok = l.window(i, w.Start, w.End)
	}
	delete(r.GoodRequests, slo.AllKey)
	delete(r.Objectives, slo.AllKey)
	r.GoodputRequestsPerSecond, r.GoodputTokensPerSecond, r.BurnRate = slo.Bounded{}, slo.Bounded{}, slo.Bounded{}
	r.HasGoodputTokens, r.HasBurnRate, r.HasAbandoned = false, false, false
	if !ok {
		return
	}
	if len(lw.unknown) > 0 {
		r.Unknown = lw.unknown
		return
	}
	secs := lw.end.Sub(lw.start).Seconds()
	if !(secs > 0) {
		return
	}
	r.Requests = lw.finished
	r.Abandoned, r.HasAbandoned = lw.abandoned, true
	r.GoodRequests[slo.AllKey] = lw.good
	r.GoodputRequestsPerSecond = slo.Divide(lw.good, secs)
	if lw.hasTokens {
		tokens := lw.tokens
		// Only over the same finishers: a warm-up can leave the ledger and
		// the history window with different ones.
		if whole, ok := slo.GoodputTokens(lw.good, w.GenerationTokens); ok && w.GenerationTokens.Total() == lw.finished {
			tokens = intersect(tokens, whole)
		}
		r.GoodputTokensPerSecond, r.HasGoodputTokens = slo.Divide(tokens, secs), true
	}
	r.FinishedTokensPerSecond, r.HasFinishedTokens = lw.finishedTokens/secs, true
	all, ok := slo.AttainmentOver(lw.good, lw.finished, lw.abandoned, s.Abandoned)
	if !ok {
		return
	}
	r.Objectives[slo.AllKey] = all
	r.BurnRate, r.HasBurnRate = slo.BurnRate(all, s.Goal)
}

// intersect is the part two valid bounds of one quantity share: both hold
// the truth, so their intersection does. The per-interval goodput tokens are
// usually the tighter, but the whole window's (the window's joint bound over
// its token histogram) wins when the bad requests may be spread over many
// intervals. Disjoint bounds can only come from inconsistent inputs; a then
// keeps its own.
func intersect(a, b slo.Bounded) slo.Bounded {
	lo, hi := math.Max(a.Lower, b.Lower), math.Min(a.Upper, b.Upper)
	if lo > hi {
		return a
	}
	return slo.Bounded{Lower: lo, Upper: hi, Estimate: math.Min(math.Max(a.Estimate, lo), hi)}
}

func (t *target) addGood(model, sloName, objective string, v float64) {
	if !(v > 0) {
		return
	}
	bySLO, ok := t.good[model]
	if !ok {
		bySLO = map[string]map[string]float64{}
		t.good[model] = bySLO
	}
	byObj, ok := bySLO[sloName]
	if !ok {
		byObj = map[string]float64{}
		bySLO[sloName] = byObj
	}
	byObj[objective] += v
}

// RecordFailure notes a failed scrape of a target. The history is untouched:
// a failed scrape never becomes a made-up zero.
func (p *Pipeline) RecordFailure(name, reason string, err error, at time.Time, duration time.Duration) {
	t, _, lookupErr := p.target(name)
	if lookupErr != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried = true
	t.up = false
	t.lastScrape = at
	t.scrapeDuration = duration.Seconds()
	t.failures[reason]++
	if err != nil {
		t.lastError = err.Error()
	}
}

// Evaluate computes every window of every model of every target at time now.
func (p *Pipeline) Evaluate(now time.Time) *Report {
	p.mu.RLock()
	spec := p.spec
	targets := make([]*target, 0, len(spec.Targets))
	for _, ts := range spec.Targets {
		targets = append(targets, p.targets[ts.Name])
	}
	p.mu.RUnlock()

	rep := &Report{Time: now, Currency: spec.Currency}
	for _, t := range targets {
		rep.Targets = append(rep.Targets, t.evaluate(spec, now))
	}
	conds := alertConditions(rep, spec)
	p.alertMu.Lock()
	rep.Alerts = p.alerts.update(now, conds)
	p.alertMu.Unlock()
	return rep
}

func (t *target) evaluate(spec Spec, now time.Time) TargetReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := TargetReport{
		Name:           t.spec.Name,
		Labels:         t.spec.Labels,
		Tried:          t.tried,
		Up:             t.up,
		LastScrape:     t.lastScrape,
		LastError:      t.lastError,
		ScrapeDuration: t.scrapeDuration,
		Failures:       maps.Clone(t.failures),
		Rejections:     maps.Clone(t.rejections),
		Resets:         float64(t.hist.Resets()),
		Missing:        slices.Clone(t.missing),
		Found:          maps.Clone(t.found),
		ModelsDropped:  t.modelsDropped,
		History:        t.hist.Usage(),
		HourlyCost:     t.spec.HourlyCost,
	}
	if w := t.profileMismatch(); w != "" {
		tr.Warnings = append(tr.Warnings, w)
	}
	for _, k := range slices.Sorted(maps.Keys(t.offEdge)) {
		tr.Warnings = append(tr.Warnings, t.offEdge[k])
	}
	for _, model := range t.hist.Models() {
		tr.Models = append(tr.Models, t.evaluateModel(spec, model, now))
	}
	return tr
}

func (t *target) evaluateModel(spec Spec, model string, now time.Time) ModelReport {
	mr := ModelReport{Name: model}
	opts := slo.Options{Quantiles: spec.Quantiles}
	for _, length := range spec.Windows {
		wr, exact, ok := t.evaluateWindow(spec, model, now, length, opts)
		if !ok {
			continue
		}
		if exact != nil {
			mr.Traces = append(mr.Traces, *exact)
		}
		mr.Windows = append(mr.Windows, wr)
	}
	for _, s := range spec.SLOs {
		mr.Budgets = append(mr.Budgets, t.budget(spec, s, model, now))
	}
	for _, a := range spec.Alerts {
		mr.Burns = append(mr.Burns, t.burnCheck(spec, a, model, now))
	}
	mr.GoodRequests = t.goodTotals(model)
	return mr
}

// maxGapIntervals is how many scrape intervals apart two scrapes may be for a
// window's start to be taken across them: one failed scrape is tolerated, a
// longer outage (or a clock jump) makes the window start after it.
const maxGapIntervals = 2

// windowOptions are the history options of the target's evaluated windows;
// with warm set, the warm-up after each restart is left out. (The good-request
// totals use neither: their increase over a gap is still exact.)
func (t *target) windowOptions(warm bool) history.Options {
	o := history.Options{MaxGap: maxGapIntervals * t.spec.Interval}
	if warm {
		o.Warmup = t.spec.Warmup
	}
	return o
}

func (t *target) budget(spec Spec, s slo.SLO, model string, now time.Time) Budget {
	b := Budget{SLO: s.Name}
	w, ok := t.hist.Window(model, now, s.Period, t.windowOptions(true))
	if !ok {
		return b
	}
	b.End = w.End
	rep := slo.EvaluateWindow(w, []slo.SLO{s}, slo.Options{})
	if len(rep.SLOs) == 0 {
		return b
	}
	t.overlayAll(spec, model, rep.SLOs, w)
	all, ok := rep.SLOs[0].Objectives[slo.AllKey]
	if !ok {
		return b
	}
	b.Remaining = slo.ErrorBudgetRemaining(all, s.Goal)
	b.Covered = w.End.Sub(w.Start)
	b.Known = true
	b.Coverage = WindowCoverage(w, s.Period)
	return b
}

// burnCheck evaluates one burn-rate alert's two windows for a model. An
// alert whose SLO the spec does not define is not evaluated against an
// empty SLO: it stays unknown (never active) and its Reason says why.
func (t *target) burnCheck(spec Spec, a BurnAlert, model string, now time.Time) BurnCheck {
	c := BurnCheck{Alert: a}
	i := slices.IndexFunc(spec.SLOs, func(s slo.SLO) bool { return s.Name == a.SLO })
	if i < 0 {
		c.Reason = fmt.Sprintf("the spec defines no SLO %q", a.SLO)
		return c
	}
	s := spec.SLOs[i]
	burn := func(length time.Duration) (slo.Bounded, Evidence, bool) {
		w, ok := t.hist.Window(model, now, length, t.windowOptions(true))
		if !ok {
			return slo.Bounded{}, Evidence{}, false
		}
		rep := slo.EvaluateWindow(w, []slo.SLO{s}, slo.Options{})
		t.overlayAll(spec, model, rep.SLOs, w)
		if len(rep.SLOs) == 0 || !rep.SLOs[0].HasBurnRate {
			return slo.Bounded{}, Evidence{}, false
		}
		ev := objectiveEvidence(rep.SLOs[0], s)
		ev.Requests, ev.Coverage = rep.SLOs[0].Requests, WindowCoverage(w, length)
		return rep.SLOs[0].BurnRate, ev, true
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

func (t *target) goodTotals(model string) []GoodTotal {
	var out []GoodTotal
	bySLO := t.good[model]
	for _, s := range slices.Sorted(maps.Keys(bySLO)) {
		for _, obj := range slices.Sorted(maps.Keys(bySLO[s])) {
			out = append(out, GoodTotal{SLO: s, Objective: obj, Value: bySLO[s][obj]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SLO < out[j].SLO })
	return out
}

// WindowCoverage is the share of a window's nominal length that its scrapes
// span, in [0, 1]: less than 1 after a start, a restart's warm-up or a gap
// the window may not cross, when every number of the window rests on that
// shorter span.
func WindowCoverage(w slo.Window, length time.Duration) float64 {
	if length <= 0 {
		return 0
	}
	return min(1, max(0, float64(w.End.Sub(w.Start))/float64(length)))
}

// objectiveEvidence sums the bad shares of the objectives of the joint
// attainment (per-request ones, or ITL when it is the SLO's only kind of
// objective, as the joint counts them) into the observed burn rate.
func objectiveEvidence(r slo.SLOResult, s slo.SLO) Evidence {
	var joint []slo.Metric
	for _, o := range s.Objectives {
		if o.Metric != slo.ITL {
			joint = append(joint, o.Metric)
		}
	}
	if len(joint) == 0 {
		joint = []slo.Metric{slo.ITL}
	}
	var ev Evidence
	for _, m := range joint {
		if a, ok := r.Objectives[string(m)]; ok && s.Goal < 1 {
			ev.Observed += (1 - a.Lower) / (1 - s.Goal)
		}
	}
	return ev
}

// overlayAll applies overlay to each SLO result, found by name in the spec.
func (t *target) overlayAll(spec Spec, model string, results []slo.SLOResult, w slo.Window) {
	for k := range results {
		for i, s := range spec.SLOs {
			if s.Name == results[k].Name {
				t.overlay(spec, model, i, &results[k], w)
				break
			}
		}
	}
}
