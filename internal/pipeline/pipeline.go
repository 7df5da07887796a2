// Package pipeline is the one path every mode shares: snapshots from package
// scrape go into each target's store (package store), which owns the
// target's recorded past (history, ledgers, good-request totals, scrape
// health, state) and judges each scrape interval once as it closes; at
// evaluation each window's edges are decided once by the store, its
// increases and its ledger joints are read between them, and package slo
// evaluates it once (see pass). The result is an immutable Report holding
// every number package exporter renders. The daemon, replay and report
// differ only in where snapshots and time come from (package replay feeds
// recordings). Around that path it keeps the retired targets kept for
// revival and saves every store (see state.go).
//
// It does no network I/O and reads no clock: time arrives with the snapshots
// and with each Evaluate call.
package pipeline

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
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
	// store is the target's recorded past.
	store *store.Store
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

// reconfigure carries a kept target over to a new spec (see
// store.Store.Reconfigure). t.mu must be held.
func (t *target) reconfigure(spec Spec) error {
	return t.store.Reconfigure(spec.storeConfig(t.spec))
}

// storeConfig is the configuration of a target's store under this spec.
func (s Spec) storeConfig(ts TargetSpec) store.Config {
	return store.Config{
		SLOs:      s.SLOs,
		Retention: s.retention(),
		Warmup:    ts.Warmup,
		MaxGap:    maxGapHalfIntervals * ts.Interval / 2,
		MaxModels: s.MaxModels,
		Spans:     s.Traces != nil,
	}
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

func newTarget(ts TargetSpec, spec Spec) *target {
	return &target{spec: ts, store: store.New(spec.storeConfig(ts))}
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

// Ingest appends a successful scrape to the target's store, which judges
// every scrape interval it closes once; the intervals and their judgements
// go to the spec's observer, and in exact mode the intervals whose spans
// arrived settle. A snapshot older than the history's newest point (the
// clock stepped back) is refused with an error and changes nothing but the
// failure count.
func (p *Pipeline) Ingest(name string, snap *scrape.Snapshot, duration time.Duration) error {
	t, spec, err := p.target(name)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	closed, err := t.store.Append(snap, duration)
	if err != nil {
		return fmt.Errorf("target %q: %w", name, err)
	}
	t.observe(spec, closed)
	if spec.Traces != nil {
		t.settleSpans(spec, snap.Time)
	}
	return nil
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
	t.store.Failed(reason, err, at, duration)
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
	h := t.store.Health()
	tr := TargetReport{Name: t.spec.Name, Labels: t.spec.Labels,
		Tried: h.Tried, Up: h.Up, LastScrape: h.LastScrape, LastError: h.LastError, ScrapeDuration: h.Duration,
		Failures: h.Failures, Rejections: h.Rejections, Missing: h.Missing, Found: h.Found,
		Resets: float64(t.store.Resets()), ModelsDropped: h.ModelsDropped, History: t.store.Usage(), HourlyCost: t.spec.HourlyCost,
	}
	tr.Warnings = h.Warnings(t.spec.Profile.Name)
	models := t.store.Models()
	for _, model := range models {
		mr := t.evaluateModel(spec, model, now, sc)
		mr.Calibration = t.calibration.Add(model, mr.Traces, models)
		tr.Models = append(tr.Models, mr)
	}
	return tr
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
	return t.store.WindowReads(), nil
}
