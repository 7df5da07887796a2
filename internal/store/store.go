package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Config is what a store needs to know of its target's configuration.
type Config struct {
	// SLOs judge every closed scrape interval, in this order.
	SLOs []slo.SLO
	// Retention is the history's, its memory limit included.
	Retention history.Retention
	// Warmup keeps the first Warmup after each (re)start out of the warm
	// windows and out of the objectives' running totals.
	Warmup time.Duration
	// MaxGap is the longest gap between two scrapes a window's start may
	// be taken across (history.Options.MaxGap; 0: any).
	MaxGap time.Duration
	// MaxModels caps the distinct model names kept; 0 means no cap.
	MaxModels int
	// Spans is set when spans will settle the intervals (exact mode): the
	// ledgers keep the counted intervals waiting for them, and their
	// good requests join the totals when they settle (SpanLedgers,
	// AddSettled).
	Spans bool
}

// Store is the recorded past of one target (see the package comment).
type Store struct {
	cfg  Config
	hist *history.History
	// ledgers holds each model's per-interval record, which "all",
	// goodput, abandoned requests, burn rates and budgets are computed
	// from.
	ledgers map[string]*ledger.Ledger
	// scrapes is what the target's scrapes say about it.
	scrapes Scrapes
	// good[model][slo][objective] accumulates estimated good requests;
	// sloDefs is sloDefinitions of the SLOs they were counted under.
	good    Totals
	sloDefs map[string]string
	// judged counts the intervals judged (judge).
	judged int64
}

// New returns an empty store.
func New(cfg Config) *Store {
	return &Store{
		cfg:     cfg,
		hist:    history.New(cfg.Retention),
		ledgers: map[string]*ledger.Ledger{},
		scrapes: Scrapes{Failures: map[string]float64{}, Found: map[string]string{}},
		good:    Totals{},
		sloDefs: sloDefinitions(cfg.SLOs),
	}
}

// Reconfigure moves the store to another configuration: its history moves
// to the new retention (a longer window or period refills from now on; the
// windows say how far back they reach), and the totals, ledgers and edge
// warnings of SLOs that are gone or changed are dropped, so that no
// counter changes its meaning under the same labels. A history that cannot
// move stays as it is, and the error says why; the rest of the
// configuration applies all the same.
func (s *Store) Reconfigure(cfg Config) error {
	s.hist.SetMaxBytes(cfg.Retention.MaxBytes)
	var err error
	if !slices.Equal(s.hist.Retention().Tiers, cfg.Retention.Tiers) {
		err = s.migrate(cfg.Retention)
	}
	defs := sloDefinitions(cfg.SLOs)
	for _, bySLO := range s.good {
		for name := range bySLO {
			if defs[name] != s.sloDefs[name] {
				delete(bySLO, name)
			}
		}
	}
	for model, l := range s.ledgers {
		if !l.Reconfigure(cfg.SLOs) {
			delete(s.ledgers, model) // its sums are of another SLO list
		}
	}
	s.sloDefs = defs
	s.scrapes.ForgetEdges()
	s.cfg = cfg
	return err
}

// migrate moves the history to another retention through its state
// encoding, the one path that already knows how to rebuild a history.
func (s *Store) migrate(r history.Retention) error {
	data, err := s.hist.MarshalBinary()
	if err != nil {
		return err
	}
	h := history.New(r)
	if err := h.UnmarshalBinary(data); err != nil {
		return err
	}
	s.hist = h
	return nil
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

// Append records a successful scrape, which took took: the snapshot (its
// models capped at Config.MaxModels) joins the history, the scrape's health
// is noted, and every scrape interval it closed is judged once (judge) into
// its model's ledger and the running totals. It returns those intervals
// with their judgements, in model order. A snapshot older than the
// history's newest point (the clock stepped back) or holding an unusable
// value is refused with an error and changes nothing but the failure
// count.
func (s *Store) Append(snap *scrape.Snapshot, took time.Duration) ([]Closed, error) {
	if s.cfg.MaxModels > 0 {
		snap = s.scrapes.Cap(snap, s.hist.Models(), s.cfg.MaxModels)
	}
	before := s.latestSamples(snap)
	intervals, err := s.hist.AppendIntervals(snap, s.cfg.Warmup)
	if err != nil {
		reason := "invalid_value"
		if errors.Is(err, history.ErrOutOfOrder) {
			reason = "out_of_order"
		}
		// A refused snapshot leaves the time of the last scrape as it was.
		s.scrapes.Failed(reason, err, s.scrapes.LastScrape, took)
		return nil, err
	}
	s.scrapes.Succeeded(snap, took)
	markFinishCounts(intervals, before, snap)
	closed := make([]Closed, len(intervals))
	for k, iv := range intervals {
		closed[k] = s.judge(iv)
	}
	if len(s.cfg.SLOs) > 0 {
		held := s.hist.Models()
		for model := range s.ledgers {
			if !slices.Contains(held, model) {
				delete(s.ledgers, model)
			}
		}
	}
	s.scrapes.CheckEdges(s.cfg.SLOs, snap)
	return closed, nil
}

// Failed notes a failed scrape under reason, finished at at after took.
// The history is untouched: a failed scrape never becomes a made-up zero.
func (s *Store) Failed(reason string, err error, at time.Time, took time.Duration) {
	s.scrapes.Failed(reason, err, at, took)
}

// Settled is the good requests of an interval that its spans settled, of
// one SLO and objective key ("all" included).
type Settled struct {
	SLO, Objective string
	Good           float64
}

// SpanLedger is one model's ledger, whose counted intervals wait for
// their spans (exact mode).
type SpanLedger struct {
	Model string
	// Unnamed is true when the target serves this model alone, whose
	// spans need not name it.
	Unnamed bool
	Ledger  *ledger.Ledger
}

// SpanLedgers lists each model's ledger, in model order, for the spans to
// settle its waiting intervals (traces.Store.Settle does, through the
// ledger's Settle); AddSettled then adds the good requests of those
// settled to the running totals. The caller settles them between the two
// calls, so that the store calls nothing of its caller's.
func (s *Store) SpanLedgers() []SpanLedger {
	unnamed := len(s.hist.Models()) == 1
	out := make([]SpanLedger, 0, len(s.ledgers))
	for _, model := range slices.Sorted(maps.Keys(s.ledgers)) {
		out = append(out, SpanLedger{Model: model, Unnamed: unnamed, Ledger: s.ledgers[model]})
	}
	return out
}

// AddSettled adds to a model's running totals the good requests of the
// intervals its spans settled.
func (s *Store) AddSettled(model string, settled []Settled) {
	for _, g := range settled {
		s.addGood(model, g.SLO, g.Objective, g.Good)
	}
}

// addGood adds v, when positive, to a running total.
func (s *Store) addGood(model, sloName, objective string, v float64) {
	if !(v > 0) {
		return
	}
	bySLO, ok := s.good[model]
	if !ok {
		bySLO = map[string]map[string]float64{}
		s.good[model] = bySLO
	}
	byObj, ok := bySLO[sloName]
	if !ok {
		byObj = map[string]float64{}
		bySLO[sloName] = byObj
	}
	byObj[objective] += v
}

// GoodTotal is a running total of estimated good requests.
type GoodTotal struct {
	SLO, Objective string
	Value          float64
}

// GoodTotals lists a model's running totals of good requests, by SLO and
// objective.
func (s *Store) GoodTotals(model string) []GoodTotal {
	var out []GoodTotal
	bySLO := s.good[model]
	for _, name := range slices.Sorted(maps.Keys(bySLO)) {
		for _, obj := range slices.Sorted(maps.Keys(bySLO[name])) {
			out = append(out, GoodTotal{SLO: name, Objective: obj, Value: bySLO[name][obj]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SLO < out[j].SLO })
	return out
}

// Health is a copy of what the target's scrapes said, which later scrapes
// leave alone.
func (s *Store) Health() Scrapes { return s.scrapes.Clone() }

// Models returns the model names the history holds, sorted.
func (s *Store) Models() []string { return s.hist.Models() }

// Resets is the number of counter resets (restarts) the history has seen.
func (s *Store) Resets() int { return s.hist.Resets() }

// Usage is the memory the history holds against its limit.
func (s *Store) Usage() history.Usage { return s.hist.Usage() }

// Oldest is the time of the oldest point the history holds; zero when
// empty.
func (s *Store) Oldest() time.Time { return s.hist.Oldest() }

// Newest is the time of the newest scrape appended; zero before the first.
func (s *Store) Newest() time.Time { return s.hist.Newest() }

// WindowReads is how many history windows the store has read (see
// history.History.WindowReads): what evaluations cost, in history walks.
func (s *Store) WindowReads() int64 { return s.hist.WindowReads() }

// Judgements is how many scrape intervals the store has judged: exactly
// one per interval an append closed (each Closed returned).
func (s *Store) Judgements() int64 { return s.judged }

// History is the store's history, for checks of its windows against the
// truth: read it, never append to it. The store's own readers go through
// WindowEdges.
func (s *Store) History() *history.History { return s.hist }

// Ledger is the store's ledger of a model (nil: none), for checks of its
// bounds against the truth: read it, never append to it.
func (s *Store) Ledger(model string) *ledger.Ledger { return s.ledgers[model] }
