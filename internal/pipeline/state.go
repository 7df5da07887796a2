package pipeline

import (
	"fmt"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
)

// MarshalState encodes every target's history, ledgers and good-request
// totals (the store's State is the format), so that a restart of the daemon
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
	var st store.State
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
	return store.Encode(st)
}

// state copies what survives a restart, under the target's lock.
func (t *target) state() (store.Target, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.store.Save(t.spec.Name, t.spec.URL, t.spec.Profile.Name)
}

// UnmarshalState restores the targets of a state that are still configured
// with the same URL and profile, from the saved targets or the saved retired
// ones; it returns how many. The saved targets the configuration lacks (or
// configures with another URL or profile) are kept as retired, for revival
// by a later reload (see retired.go), the most recent first, up to
// maxRetiredTargets. A corrupt, partly corrupt or foreign state is an error
// and changes nothing.
func (p *Pipeline) UnmarshalState(data []byte) (restored int, err error) {
	st, err := store.Decode(data)
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
		r.t.store.Restore(r.loaded)
		r.t.mu.Unlock()
	}
	p.keepRetired(retired)
	return len(todo) - len(retired), nil
}

// restore is one target's decoded state, waiting to be swapped in.
type restore struct {
	t      *target
	loaded store.Loaded
}

// decodeTarget decodes the saved state ts for t's store (at its retention
// and for its SLOs, the spec's); p.mu must be held.
func (p *Pipeline) decodeTarget(t *target, ts store.Target) (restore, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	loaded, err := t.store.Load(ts)
	return restore{t: t, loaded: loaded}, err
}
