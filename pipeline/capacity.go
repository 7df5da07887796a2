package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// CapacityIntervals returns the scrape intervals of a target's model that
// end after since, oldest first, as the capacity estimate reads them: the
// ledger's bounds on each interval's good requests for SLO sloIndex and
// the history's load, mix and mean-latency figures over the same scrapes.
// Only intervals whose both scrapes are still kept at full resolution are
// returned (the ledger keeps an hour of intervals), so a caller reads
// every few minutes and keeps what it learned.
func (p *Pipeline) CapacityIntervals(target, model string, sloIndex int, since time.Time) ([]capacity.Interval, error) {
	t, spec, err := p.target(target)
	if err != nil {
		return nil, err
	}
	if sloIndex < 0 || sloIndex >= len(spec.SLOs) {
		return nil, fmt.Errorf("target %q: SLO index %d out of range [0, %d)", target, sloIndex, len(spec.SLOs))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.ledgers[model]
	if l == nil {
		return nil, nil
	}
	var out []capacity.Interval
	for _, iv := range l.Intervals(sloIndex, since) {
		w, ok := t.hist.Window(model, iv.End, iv.End.Sub(iv.Start), history.Options{})
		if !ok || !w.Start.Equal(iv.Start) {
			continue
		}
		ci := capacityInterval(w)
		ci.Restarted, ci.Finished, ci.GoodKnown, ci.Good = iv.Restarted, iv.Finished, iv.GoodKnown, iv.Good
		out = append(out, ci)
	}
	return out, nil
}

// capacityInterval reads one interval's load, mix and means from the
// history's window over it.
func capacityInterval(w slo.Window) capacity.Interval {
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
	return ci
}

// CapacityLearners keeps a capacity.Learner for every target, model and SLO
// of a pipeline whose `all` the ledger judges (an SLO of ITL objectives
// only is judged per token and has none), fed from the ledger's intervals,
// and the latest estimate of each for the exporter. An SLO whose objectives or goal change starts
// learning over, and says so; a target or model the pipeline no longer
// holds is forgotten (a new model is a new server to learn).
type CapacityLearners struct {
	// updating serialises Update, the only writer of the learners; mu
	// guards the map and the published estimates and labels.
	updating sync.Mutex
	mu       sync.Mutex
	entries  map[capacityKey]*capacityEntry
}

type capacityKey struct{ target, model, slo string }

type capacityEntry struct {
	learner *capacity.Learner
	def     string    // the SLO's objectives and goal when learning began
	read    time.Time // end of the last interval read
	labels  map[string]string
	windows int // closed windows at the last fit
	est     capacity.Estimate
}

// NewCapacityLearners returns learners with nothing learned.
func NewCapacityLearners() *CapacityLearners {
	return &CapacityLearners{entries: map[capacityKey]*capacityEntry{}}
}

// CapacityReport is one target's, model's and SLO's capacity estimate.
type CapacityReport struct {
	Target, Model, SLO string
	// Labels are the target's extra labels.
	Labels   map[string]string
	Estimate capacity.Estimate
}

// Update reads what each model's ledger added since the last update (call
// it at least every half hour: the ledger keeps an hour) and refits the
// estimates whose learner closed a window.
func (c *CapacityLearners) Update(p *Pipeline, now time.Time) {
	c.updating.Lock()
	defer c.updating.Unlock()
	p.mu.RLock()
	spec := p.spec
	names := make([]string, 0, len(p.targets))
	for name := range p.targets {
		names = append(names, name)
	}
	p.mu.RUnlock()
	sort.Strings(names)
	seen := map[capacityKey]bool{}
	for _, name := range names {
		t, _, err := p.target(name)
		if err != nil {
			continue
		}
		t.mu.Lock()
		labels := t.spec.Labels
		models := make([]string, 0, len(t.ledgers))
		for m := range t.ledgers {
			models = append(models, m)
		}
		t.mu.Unlock()
		sort.Strings(models)
		for _, model := range models {
			for i, s := range spec.SLOs {
				if !slo.HasPerRequestObjective(s) {
					continue // ITL objectives only: judged per token, not per request
				}
				k := capacityKey{name, model, s.Name}
				seen[k] = true
				c.update(p, k, i, s, labels, now)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if !seen[k] {
			delete(c.entries, k)
		}
	}
}

// update feeds one learner and refits it when a window closed.
func (c *CapacityLearners) update(p *Pipeline, k capacityKey, i int, s slo.SLO, labels map[string]string, now time.Time) {
	def := fmt.Sprint(s.Objectives, s.Goal)
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		e = &capacityEntry{learner: capacity.NewLearner(capacity.DefaultConfig(s.Goal)), def: def}
		c.entries[k] = e
	}
	c.mu.Unlock()
	if e.def != def {
		// Intervals before now were judged under the old SLO.
		e.learner, e.def, e.read, e.windows = capacity.NewLearner(capacity.DefaultConfig(s.Goal)), def, now, -1
		e.learner.Reset(now, "the SLO changed: learning started over")
	}
	ivs, err := p.CapacityIntervals(k.target, k.model, i, e.read)
	if err != nil {
		return // the target went away between the listing and now
	}
	for _, iv := range ivs {
		e.learner.Add(iv)
		e.read = iv.End
	}
	if n := len(e.learner.Windows()); n != e.windows || e.est.Kind == "" {
		e.windows = n
		est := e.learner.Estimate(now)
		c.mu.Lock()
		e.est = est
		c.mu.Unlock()
	}
	c.mu.Lock()
	e.labels = labels
	c.mu.Unlock()
}

// Reports returns the latest estimates, ordered by target, model and SLO.
func (c *CapacityLearners) Reports() []CapacityReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]CapacityReport, 0, len(c.entries))
	for k, e := range c.entries {
		out = append(out, CapacityReport{Target: k.target, Model: k.model, SLO: k.slo, Labels: e.labels, Estimate: e.est})
	}
	slices.SortFunc(out, func(a, b CapacityReport) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Model, b.Model), cmp.Compare(a.SLO, b.SLO))
	})
	return out
}
