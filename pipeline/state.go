package pipeline

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/ledger"
)

// stateVersion is the version of the state format MarshalState writes;
// UnmarshalState refuses others, so an old file starts the daemon fresh
// instead of being misread.
const stateVersion = 1

type pipelineState struct {
	Version int
	Targets []targetState
	// Retired holds the retired targets kept for revival (see retired.go),
	// the most recently retired first; absent in states written before it
	// existed.
	Retired []targetState
}

type targetState struct {
	Name, URL, Profile string
	History            []byte
	Good               map[string]map[string]map[string]float64
	// Ledgers holds each model's per-interval ledger; absent in states
	// written before it existed (the ledger then starts afresh).
	Ledgers map[string]ledger.State
}

// MarshalState encodes every target's history, ledgers and good-request
// totals, so that a restart of the daemon keeps its windows and error
// budgets; the retired targets kept for revival are saved too.
func (p *Pipeline) MarshalState() ([]byte, error) {
	p.mu.RLock()
	targets := make([]*target, 0, len(p.targets))
	for _, ts := range p.spec.Targets {
		targets = append(targets, p.targets[ts.Name])
	}
	retired := slices.Clone(p.retired)
	p.mu.RUnlock()
	st := pipelineState{Version: stateVersion}
	for _, t := range targets {
		ts, err := t.state()
		if err != nil {
			return nil, fmt.Errorf("state of target %q: %w", ts.Name, err)
		}
		st.Targets = append(st.Targets, ts)
	}
	for _, t := range retired {
		ts, err := t.state()
		if err != nil {
			return nil, fmt.Errorf("state of retired target %q: %w", ts.Name, err)
		}
		st.Retired = append(st.Retired, ts)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return buf.Bytes(), nil
}

// state copies what survives a restart, under the target's lock.
func (t *target) state() (targetState, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := targetState{Name: t.spec.Name, URL: t.spec.URL, Profile: t.spec.Profile.Name, Good: map[string]map[string]map[string]float64{}}
	for model, bySLO := range t.good {
		ts.Good[model] = map[string]map[string]float64{}
		for s, byObj := range bySLO {
			ts.Good[model][s] = maps.Clone(byObj)
		}
	}
	ts.Ledgers = map[string]ledger.State{}
	for model, l := range t.ledgers {
		ts.Ledgers[model] = l.State()
	}
	h, err := t.hist.MarshalBinary()
	ts.History = h
	return ts, err
}

// UnmarshalState restores the targets of a state that are still configured
// with the same URL and profile, from the saved targets or the saved retired
// ones; it returns how many. The saved targets the configuration lacks (or
// configures with another URL or profile) are kept as retired, for revival
// by a later reload (see retired.go), the most recent first, up to
// maxRetiredTargets. A corrupt, partly corrupt or foreign state is an error
// and changes nothing.
func (p *Pipeline) UnmarshalState(data []byte) (restored int, err error) {
	defer func() {
		// gob guards itself, but a state file is outside input: never panic.
		if r := recover(); r != nil {
			restored, err = 0, fmt.Errorf("decode state: %v", r)
		}
	}()
	var st pipelineState
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&st); err != nil {
		return 0, fmt.Errorf("decode state: %w", err)
	}
	if st.Version != stateVersion {
		return 0, fmt.Errorf("decode state: format version %d, want %d", st.Version, stateVersion)
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
		id := stateIdentity(ts.Name, ts.URL, ts.Profile)
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
		r.t.hist = r.hist
		if r.good != nil {
			r.t.good = r.good
		}
		r.t.ledgers = r.ledgers
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

// decodeTarget decodes the saved state ts of t at t's retention; p.mu must
// be held.
func (p *Pipeline) decodeTarget(t *target, ts targetState) (restore, error) {
	t.mu.Lock()
	retention := t.hist.Retention()
	t.mu.Unlock()
	h := history.New(retention)
	if err := h.UnmarshalBinary(ts.History); err != nil {
		return restore{}, err
	}
	ledgers := map[string]*ledger.Ledger{}
	for model, ls := range ts.Ledgers {
		// A ledger kept for other SLOs starts afresh.
		if l, err := ledger.Restore(ls, p.spec.SLOs); err == nil {
			ledgers[model] = l
		}
	}
	return restore{t: t, hist: h, good: ts.Good, ledgers: ledgers}, nil
}
