// Package pipeline is the one path every mode shares: snapshots from package
// scrape go into a per-target history, which hands the intervals each
// append closes to the models' ledgers (package ledger); at evaluation each
// window is read from the history once, its joints from the ledger over the
// same scrapes, and package slo evaluates it once (see pass). The result is
// an immutable Report holding every number package exporter renders. The
// daemon, replay and report differ only in where snapshots and time come
// from (package replay feeds recordings). Around that path it keeps each
// target's scrape health (package health), its good-request totals and the
// retired targets kept for revival, and saves them all (package statefile
// is the format).
//
// It does no network I/O and reads no clock: time arrives with the snapshots
// and with each Evaluate call.
package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/health"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
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
	// window they fully cover is published exactly (see traces.Store.EvaluateWindow).
	Traces *traces.Store
	// TraceDelay is how long spans may take to arrive after the request
	// finished (the sender batches them): exact windows end at the newest
	// scrape at least TraceDelay old; a scrape interval waits TraceLateness
	// more for its spans (see settleSpans).
	TraceDelay, TraceLateness time.Duration
	// Intervals, when set, is told every scrape interval an ingest closes
	// (see IntervalObserver).
	Intervals IntervalObserver
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

	// scrapes is what the target's scrapes say about it.
	scrapes health.Scrapes
	// sloDefs is sloDefinitions of the spec the totals were counted under.
	sloDefs map[string]string
	// good[model][slo][objective] accumulates estimated good requests.
	good map[string]map[string]map[string]float64
	// ledgers holds each model's per-interval record, which "all", goodput,
	// abandoned requests, burn rates and budgets are computed from.
	ledgers map[string]*ledger.Ledger
	// calibration sums exact mode's calibration over the evaluations.
	calibration traces.Tally
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
		if !l.Reconfigure(spec.SLOs) {
			delete(t.ledgers, model) // its sums are of another SLO list
		}
	}
	t.sloDefs = defs
	t.scrapes.ForgetEdges()
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
		spec:    ts,
		sloDefs: sloDefinitions(spec.SLOs),
		hist:    history.New(spec.retention()),
		scrapes: health.Scrapes{Failures: map[string]float64{}, Found: map[string]string{}},
		good:    map[string]map[string]map[string]float64{},
		ledgers: map[string]*ledger.Ledger{},
	}
}

// ErrUnknownTarget is returned for a target name the spec does not hold,
// such as a recorded scrape of a target the configuration does not name.
var ErrUnknownTarget = errors.New("unknown target")

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
	if spec.MaxModels > 0 {
		snap = t.scrapes.Cap(snap, t.hist.Models(), spec.MaxModels)
	}
	before := t.latestSamples(snap)
	intervals, err := t.hist.AppendIntervals(snap, t.spec.Warmup)
	if err != nil {
		reason := "invalid_value"
		if errors.Is(err, history.ErrOutOfOrder) {
			reason = "out_of_order"
		}
		// A refused snapshot leaves the time of the last scrape as it was.
		t.scrapes.Failed(reason, err, t.scrapes.LastScrape, duration)
		return fmt.Errorf("target %q: %w", name, err)
	}
	t.scrapes.Succeeded(snap, duration)
	markFinishCounts(intervals, before, snap)
	t.feedLedgers(spec.SLOs, intervals, spec.Traces != nil)
	t.observe(spec, intervals)
	t.accumulateGood(spec.SLOs, intervals, spec.Traces != nil)
	if spec.Traces != nil {
		t.settleSpans(spec, snap.Time)
	}
	t.scrapes.CheckEdges(spec.SLOs, snap)
	return nil
}

// accumulateGood adds the estimated good requests of the intervals that just
// closed to the running totals: each objective's from the interval's
// warm-up-free increase, "all" of an SLO with a per-request objective from
// its ledger (with spans, once the interval settles: settleSpans). Each
// interval's estimate is non-negative, so the totals only grow.
func (t *target) accumulateGood(slos []slo.SLO, intervals []history.Interval, spans bool) {
	if len(slos) == 0 {
		return
	}
	noJoints := make([]*slo.Joint, len(slos)) // per objective, without the whole window's "all"
	for _, iv := range intervals {
		rep := slo.Evaluate(iv.Warm, slos, noJoints, slo.Options{})
		for k, r := range rep.SLOs {
			for obj, good := range r.GoodRequests {
				if obj != string(slo.ITL) && settlesObjectives(spans, slos[k], iv) {
					continue // added when the interval settles
				}
				t.addGood(iv.Model, r.Name, obj, good.Estimate)
			}
		}
		l := t.ledgers[iv.Model]
		if l == nil || spans {
			continue
		}
		for i, s := range slos {
			if !slo.HasPerRequestObjective(s) {
				continue
			}
			if good, ok := l.LastGood(i, iv.Window.End); ok {
				t.addGood(iv.Model, s.Name, slo.AllKey, good)
			}
		}
	}
}

// feedLedgers records the intervals that just closed in their models'
// ledgers, and drops the ledgers of models the history no longer holds. An
// interval inside a warm-up (its warm-up-free increase has other finishers)
// is recorded but not counted.
func (t *target) feedLedgers(slos []slo.SLO, intervals []history.Interval, spans bool) {
	if len(slos) == 0 {
		return
	}
	for _, iv := range intervals {
		l := t.ledgers[iv.Model]
		if l == nil {
			l = ledger.New(slos)
			t.ledgers[iv.Model] = l
		}
		if spans {
			l.ExpectSpans()
		}
		model := iv.Model
		l.Append(iv.Window, sameFinishers(iv), func() []int64 { return t.hist.PointTimes(model) })
	}
	held := t.hist.Models()
	for model := range t.ledgers {
		if !slices.Contains(held, model) {
			delete(t.ledgers, model)
		}
	}
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
	t.scrapes.Failed(reason, err, at, duration)
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
	if len(targets) > 0 {
		rep.Targets = make([]TargetReport, len(targets))
	}
	evaluateAll(targets, func(i int, sc *passScratch) { rep.Targets[i] = targets[i].evaluate(spec, now, sc) })
	p.alertMu.Lock()
	p.alerts.decide(rep, spec)
	p.alertMu.Unlock()
	return rep
}

// evaluateAll runs evaluate(i) for every target index on up to GOMAXPROCS
// goroutines, as Prometheus evaluates its rule groups side by side: each
// target has its own lock and evaluates only its own history and ledgers,
// and each call writes only its own slot, so the report is the same as
// in order, sooner on a machine with cores to spare. It returns when every
// call has. Each goroutine passes its calls one passScratch, the memory of
// their passes, so that an evaluation allocates it once per goroutine
// rather than once per window (no two calls share one at once).
func evaluateAll(targets []*target, evaluate func(i int, sc *passScratch)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(targets)) {
		wg.Go(func() {
			var sc passScratch
			for i := int(next.Add(1) - 1); i < len(targets); i = int(next.Add(1) - 1) {
				evaluate(i, &sc)
			}
		})
	}
	wg.Wait()
}

func (t *target) evaluate(spec Spec, now time.Time, sc *passScratch) TargetReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.scrapes.Clone()
	tr := TargetReport{Name: t.spec.Name, Labels: t.spec.Labels,
		Tried: h.Tried, Up: h.Up, LastScrape: h.LastScrape, LastError: h.LastError, ScrapeDuration: h.Duration,
		Failures: h.Failures, Rejections: h.Rejections, Missing: h.Missing, Found: h.Found,
		Resets: float64(t.hist.Resets()), ModelsDropped: h.ModelsDropped, History: t.hist.Usage(), HourlyCost: t.spec.HourlyCost,
	}
	tr.Warnings = h.Warnings(t.spec.Profile.Name)
	for _, model := range t.hist.Models() {
		mr := t.evaluateModel(spec, model, now, sc)
		mr.Calibration = t.calibration.Add(model, mr.Traces, t.hist.Models())
		tr.Models = append(tr.Models, mr)
	}
	return tr
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

// WindowReads is how many history windows the target's evaluations and
// ingestion have read since its history was created (see
// history.History.WindowReads): what one pass costs.
func (p *Pipeline) WindowReads(name string) (int64, error) {
	t, _, err := p.target(name)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hist.WindowReads(), nil
}
