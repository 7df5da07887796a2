package pipeline

import (
	"fmt"
	"slices"
	"time"
)

// Spec returns the evaluation configuration in force. The caller must treat
// it as read-only: it shares its slices with the pipeline.
func (p *Pipeline) Spec() Spec {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.spec
}

// Span returns the times of the oldest and newest scrapes a target's history
// holds; both are zero while it holds none.
func (p *Pipeline) Span(name string) (oldest, newest time.Time, err error) {
	t, _, err := p.target(name)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.store.Oldest(), t.store.Newest(), nil
}

// EvaluateModelAt evaluates one model of one target as Evaluate would have at
// time end, from the history kept now: every window, error budget and
// burn-rate check ends at the last scrape at or before end. It lets a caller
// draw the past without having stored past reports. Where the history has
// thinned old points, a past window snaps to the retained points (its Start
// and End say so). GoodRequests is left empty: the running totals are only
// known for the present. Given windows, only those of the configured windows
// are evaluated (a chart of one window need not pay for the others); budgets
// and burn-rate checks always are. It holds the target's lock for one model's
// evaluation, so ingestion of other targets is never blocked.
func (p *Pipeline) EvaluateModelAt(name, model string, end time.Time, windows ...time.Duration) (ModelReport, error) {
	t, spec, err := p.target(name)
	if err != nil {
		return ModelReport{}, err
	}
	if len(windows) > 0 {
		spec.Windows = slices.DeleteFunc(slices.Clone(spec.Windows), func(w time.Duration) bool {
			return !slices.Contains(windows, w)
		})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.store.Models(), model) {
		return ModelReport{}, fmt.Errorf("target %q: unknown model %q", name, model)
	}
	mr := t.evaluateModel(spec, model, end, nil)
	mr.GoodRequests = nil
	return mr, nil
}
