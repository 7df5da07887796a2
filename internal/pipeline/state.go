package pipeline

import (
	"fmt"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/statefile"
)

// MarshalState encodes every target's history, ledgers and good-request
// totals (package statefile is the format), so that a restart of the daemon
// keeps its windows and error budgets; the retired targets kept for revival
// are saved too.
func (p *Pipeline) MarshalState() ([]byte, error) {
	p.mu.RLock()
	targets := make([]*target, 0, len(p.targets))
	for _, ts := range p.spec.Targets {
		targets = append(targets, p.targets[ts.Name])
	}
	retired := slices.Clone(p.retired)
	p.mu.RUnlock()
	var st statefile.State
	for i, t := range slices.Concat(targets, retired) {
		ts, err := t.state()
		if err != nil {
			what := "target"
			if i >= len(targets) {
				what = "retired target"
			}
			return nil, fmt.Errorf("state of %s %q: %w", what, ts.Name, err)
		}
		if i < len(targets) {
			st.Targets = append(st.Targets, ts)
		} else {
			st.Retired = append(st.Retired, ts)
		}
	}
	return statefile.Encode(st)
}

// state copies what survives a restart, under the target's lock.
func (t *target) state() (statefile.Target, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return statefile.Save(t.spec.Name, t.spec.URL, t.spec.Profile.Name, t.hist, t.good, t.ledgers)
}

// UnmarshalState restores the targets of a state that are still configured
// with the same URL and profile, from the saved targets or the saved retired
// ones; it returns how many. The saved targets the configuration lacks (or
// configures with another URL or profile) are kept as retired, for revival
// by a later reload (see retired.go), the most recent first, up to
// maxRetiredTargets. A corrupt, partly corrupt or foreign state is an error
// and changes nothing.
func (p *Pipeline) UnmarshalState(data []byte) (restored int, err error) {
	st, err := statefile.Decode(data)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	configured := make(map[string]*target, len(p.targets))
	for _, t := range p.targets {
		t.mu.Lock()
		configured[t.spec.identity()] = t
		t.mu.Unlock()
	}
	// Decode every history first; swap them in only if all decode, so a
	// partly corrupt state changes nothing.
	var todo []restore
	var retired []*target
	seen := map[string]bool{}
	for i, ts := range slices.Concat(st.Targets, st.Retired) {
		id := ts.Identity()
		t := configured[id]
		if seen[id] || (t == nil && len(retired) == maxRetiredTargets) {
			continue
		}
		seen[id] = true
		what := "target"
		if i >= len(st.Targets) {
			what = "retired target"
		}
		if t == nil {
			t = newTarget(retiredSpec(ts.Name, ts.URL, ts.Profile), p.spec)
			retired = append(retired, t)
		}
		r, err := p.decodeTarget(t, ts)
		if err != nil {
			return 0, fmt.Errorf("decode state of %s %q: %w", what, ts.Name, err)
		}
		todo = append(todo, r)
	}
	for _, r := range todo {
		r.t.mu.Lock()
		r.t.hist, r.t.ledgers = r.hist, r.ledgers
		if r.good != nil {
			r.t.good = r.good
		}
		r.t.mu.Unlock()
	}
	p.keepRetired(retired)
	return len(todo) - len(retired), nil
}

// restore is one target's decoded state, waiting to be swapped in.
type restore struct {
	t       *target
	hist    *history.History
	good    map[string]map[string]map[string]float64
	ledgers map[string]*ledger.Ledger
}

// decodeTarget decodes the saved state ts of t at t's retention and for the
// spec's SLOs; p.mu must be held.
func (p *Pipeline) decodeTarget(t *target, ts statefile.Target) (restore, error) {
	t.mu.Lock()
	retention := t.hist.Retention()
	t.mu.Unlock()
	h, ledgers, err := ts.Restore(retention, p.spec.SLOs)
	return restore{t: t, hist: h, good: ts.Good, ledgers: ledgers}, err
}
