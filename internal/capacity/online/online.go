// Package online keeps a capacity.Learner for every target, model and SLO
// of a pipeline and publishes their estimates. The pipeline hands it each
// scrape interval as an ingest closes it (pipeline.IntervalObserver): the
// history's increase over the interval (load, mix, mean latencies) and the
// ledger's bounds on its good requests, so nothing is read back and every
// interval closed is learned from exactly once. The fit, the costly part,
// runs at evaluation (Refit) and only for learners that closed a window.
//
// It computes no SLO number: the ledger judged the intervals; package
// capacity fits them. It must never block an ingest for longer than adding
// an interval to a learner takes.
package online

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Learners learns the capacity of every target, model and SLO whose `all`
// the ledger judges (an SLO of ITL objectives only is judged per token and
// has none). An SLO whose objectives or goal change starts learning over,
// and says so; a target or model the pipeline no longer reports, or an SLO
// the spec no longer has, is forgotten (a new model is a new server to
// learn). It is safe for concurrent use.
type Learners struct {
	config func(goal float64) capacity.Config

	// mu guards entries and defs; each entry's own lock guards its learner,
	// so a fit of one never blocks the ingest of another target.
	mu      sync.Mutex
	entries map[key]*entry
	// defs maps each SLO name of the spec last observed to its
	// objectives and goal.
	defs map[string]string
}

type key struct{ target, model, slo string }

// compareKeys orders keys by target, model and SLO.
func compareKeys(a, b key) int {
	return cmp.Or(cmp.Compare(a.target, b.target), cmp.Compare(a.model, b.model), cmp.Compare(a.slo, b.slo))
}

type entry struct {
	mu      sync.Mutex
	learner *capacity.Learner
	def     string  // the SLO's objectives and goal when learning began
	goal    float64 // the SLO's goal, which configured the learner
	labels  map[string]string
	// windows and newest are the learner's closed windows at the last fit
	// or refresh, and the end of the newest of them: once the learner
	// holds a full History each window that closes pushes the oldest out,
	// so the count alone stays put while the windows move on.
	windows int
	newest  time.Time
	fitted  bool // est holds a fit
	est     capacity.Estimate
	// fittedAt is when est was last fitted afresh (not refreshed), and
	// fitReason the learner's reason then.
	fittedAt  time.Time
	fitReason string
}

// New returns learners with nothing learned, each configured by
// config(goal) (capacity.DefaultConfig when nil).
func New(config func(goal float64) capacity.Config) *Learners {
	if config == nil {
		config = capacity.DefaultConfig
	}
	return &Learners{config: config, entries: map[key]*entry{}, defs: map[string]string{}}
}

// definition is the text of an SLO's objectives and goal: when it changes,
// what was learned was judged under another SLO.
func definition(s slo.SLO) string { return fmt.Sprint(s.Objectives, s.Goal) }

// ObserveIntervals adds the intervals an ingest of target closed to the
// learners of their models, for every SLO with a per-request objective.
// An interval the ledger did not record for an SLO is skipped.
func (ls *Learners) ObserveIntervals(target pipeline.TargetSpec, slos []slo.SLO, ivs []pipeline.ClosedInterval) {
	ls.mu.Lock()
	clear(ls.defs)
	for _, s := range slos {
		ls.defs[s.Name] = definition(s)
	}
	ls.mu.Unlock()
	for _, iv := range ivs {
		for i, s := range slos {
			if i >= len(iv.Good) || !slo.HasPerRequestObjective(s) || !iv.Good[i].End.Equal(iv.Window.End) {
				continue
			}
			e := ls.entry(key{target.Name, iv.Model, s.Name}, s, iv.Window.Start)
			e.mu.Lock()
			e.labels = target.Labels
			e.learner.Add(Interval(iv, i))
			e.mu.Unlock()
		}
	}
}

// entry returns the learner of k, new when there is none, started over at
// at when the SLO's definition changed since it began learning.
func (ls *Learners) entry(k key, s slo.SLO, at time.Time) *entry {
	def := definition(s)
	ls.mu.Lock()
	e := ls.entries[k]
	if e == nil {
		e = &entry{learner: capacity.NewLearner(ls.config(s.Goal)), def: def, goal: s.Goal}
		ls.entries[k] = e
	}
	ls.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.def != def {
		// Intervals before at were judged under the old SLO.
		e.learner, e.def, e.goal, e.fitted = capacity.NewLearner(ls.config(s.Goal)), def, s.Goal, false
		e.learner.Reset(at, "the SLO changed: learning started over")
	}
	return e
}

// Interval is what a closed interval says to SLO i's learner: load, mix
// and means from the history's increase, finished and good requests from
// the ledger.
func Interval(iv pipeline.ClosedInterval, i int) capacity.Interval {
	w := iv.Window
	ci := capacity.Interval{Start: w.Start, End: w.End}
	if h, ok := w.Latency[slo.TTFT]; ok && h.Valid() {
		ci.FirstTokens = h.Total()
		ci.TTFT = capacity.Mean{Sum: h.Sum, Count: h.Total()}
	}
	if h, ok := w.Latency[slo.TPOT]; ok && h.Valid() {
		ci.TPOT = capacity.Mean{Sum: h.Sum, Count: h.Total()}
	}
	if w.Waiting.Known {
		ci.WaitingStart, ci.WaitingEnd = math.Max(0, w.Waiting.AtStart), math.Max(0, w.Waiting.AtEnd)
	}
	if w.Running.Known {
		ci.RunningStart, ci.RunningEnd = math.Max(0, w.Running.AtStart), math.Max(0, w.Running.AtEnd)
	}
	ci.InFlightMean = math.Max(0, w.Running.Mean) + math.Max(0, w.Waiting.Mean)
	if w.HasTokenCounters {
		ci.GeneratedTokens = math.Max(0, w.GenerationTokensTotal)
	}
	if w.PromptTokens.Valid() && w.GenerationTokens.Valid() {
		ci.PromptTokens, ci.OutputTokens, ci.Mixed = math.Max(0, w.PromptTokens.Sum), math.Max(0, w.GenerationTokens.Sum), true
	}
	if i < len(iv.Good) {
		g := iv.Good[i]
		ci.Restarted, ci.Finished, ci.GoodKnown, ci.Good = g.Restarted, g.Finished, g.GoodKnown, g.Good
	}
	return ci
}

// Refit forgets the learners of targets and models rep does not hold and
// of SLOs the spec no longer has, and updates, at rep.Time, the estimates
// whose learner closed a window since: a bounded estimate fitted less than
// Config.RefitEvery ago, whose learner has not started over since, is
// refreshed (capacity.Learner.Refresh: its load, headroom and time to
// breach); any other is fitted afresh, which for an answer that is not
// bounded costs no bootstrap.
func (ls *Learners) Refit(rep *pipeline.Report) {
	held := map[[2]string]bool{}
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			held[[2]string{t.Name, m.Name}] = true
		}
	}
	ls.mu.Lock()
	todo := make([]*entry, 0, len(ls.entries))
	for k, e := range ls.entries {
		if !held[[2]string{k.target, k.model}] || ls.defs[k.slo] == "" {
			delete(ls.entries, k)
			continue
		}
		todo = append(todo, e)
	}
	ls.mu.Unlock()
	for _, e := range todo {
		e.update(rep.Time)
	}
}

// update refreshes or refits e's estimate at now when its learner closed
// a window since the last update. The fit runs on a copy, so that an
// ingest adding to the learner never waits for it.
func (e *entry) update(now time.Time) {
	e.mu.Lock()
	live := e.learner
	n, newest := len(live.Windows()), newestEnd(live.Windows())
	if e.fitted && n == e.windows && newest.Equal(e.newest) {
		e.mu.Unlock()
		return
	}
	if e.fitted && e.est.Kind == capacity.Bounded && live.Reason() == e.fitReason && now.Sub(e.fittedAt) < live.Config().RefitEvery {
		e.est, e.windows, e.newest = live.Refresh(e.est, now), n, newest
		e.mu.Unlock()
		return
	}
	frozen := live.Clone()
	e.mu.Unlock()
	est := frozen.Estimate(now)
	e.mu.Lock()
	if e.learner == live { // not replaced by a changed SLO meanwhile
		e.windows, e.newest, e.fitted, e.est, e.fittedAt, e.fitReason = n, newest, true, est, now, frozen.Reason()
	}
	e.mu.Unlock()
}

// newestEnd is the end of the newest of ws (oldest first), zero when empty.
func newestEnd(ws []capacity.Window) time.Time {
	if len(ws) == 0 {
		return time.Time{}
	}
	return ws[len(ws)-1].End
}

// Reports returns the latest estimates, ordered by target, model and SLO;
// a learner not fitted yet is left out.
func (ls *Learners) Reports() []capacity.Report {
	ls.mu.Lock()
	keys := make([]key, 0, len(ls.entries))
	entries := make([]*entry, 0, len(ls.entries))
	for k, e := range ls.entries {
		keys, entries = append(keys, k), append(entries, e)
	}
	ls.mu.Unlock()
	out := make([]capacity.Report, 0, len(keys))
	for j, e := range entries {
		e.mu.Lock()
		if e.fitted {
			k := keys[j]
			out = append(out, capacity.Report{Target: k.target, Model: k.model, SLO: k.slo, Labels: e.labels, Estimate: e.est})
		}
		e.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b capacity.Report) int {
		return compareKeys(key{a.Target, a.Model, a.SLO}, key{b.Target, b.Model, b.SLO})
	})
	return out
}

// Inspect calls f with the learner of a target's model and SLO, under its
// lock (f must not keep it), and reports whether there is one: what a
// harness reads windows and baselines from.
func (ls *Learners) Inspect(target, model, sloName string, f func(*capacity.Learner)) bool {
	ls.mu.Lock()
	e := ls.entries[key{target, model, sloName}]
	ls.mu.Unlock()
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e.learner)
	return true
}
