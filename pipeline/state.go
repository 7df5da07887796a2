package pipeline

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"

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
// budgets.
func (p *Pipeline) MarshalState() ([]byte, error) {
	p.mu.RLock()
	targets := make([]*target, 0, len(p.targets))
	for _, ts := range p.spec.Targets {
		targets = append(targets, p.targets[ts.Name])
	}
	p.mu.RUnlock()
	st := pipelineState{Version: stateVersion}
	for _, t := range targets {
		ts, err := t.state()
		if err != nil {
			return nil, fmt.Errorf("state of target %q: %w", ts.Name, err)
		}
		st.Targets = append(st.Targets, ts)
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
// with the same URL and profile; the others start fresh. A corrupt, partly
// corrupt or foreign state is an error and changes nothing.
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
	p.mu.RLock()
	defer p.mu.RUnlock()
	// Decode every history first; swap them in only if all decode, so a
	// partly corrupt state changes nothing.
	type restore struct {
		t       *target
		hist    *history.History
		good    map[string]map[string]map[string]float64
		ledgers map[string]*ledger.Ledger
	}
	var todo []restore
	for _, ts := range st.Targets {
		t, ok := p.targets[ts.Name]
		if !ok {
			continue
		}
		t.mu.Lock()
		same := t.spec.URL == ts.URL && t.spec.Profile.Name == ts.Profile
		retention := t.hist.Retention()
		t.mu.Unlock()
		if !same {
			continue
		}
		h := history.New(retention)
		if err := h.UnmarshalBinary(ts.History); err != nil {
			return 0, fmt.Errorf("decode state of target %q: %w", ts.Name, err)
		}
		ledgers := map[string]*ledger.Ledger{}
		for model, ls := range ts.Ledgers {
			// A ledger kept for other SLOs starts afresh.
			if l, err := ledger.Restore(ls, p.spec.SLOs); err == nil {
				ledgers[model] = l
			}
		}
		todo = append(todo, restore{t: t, hist: h, good: ts.Good, ledgers: ledgers})
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
	return len(todo), nil
}
