package online

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// stateVersion is the version of the format MarshalBinary writes;
// UnmarshalBinary refuses others.
const stateVersion = 1

type learnersState struct {
	Version int
	Entries []entryState
}

// entryState is one learner with what it last published, so that a
// restored daemon publishes the same estimate until its next fit, and the
// SLO it learns for (Def, and Goal to configure it).
type entryState struct {
	Target, Model, SLO, Def string
	Goal                    float64
	Labels                  map[string]string
	Learner                 capacity.LearnerState
	Windows                 int
	Newest                  time.Time // zero in a file written before it was kept: the next evaluation updates
	Fitted                  bool
	Estimate                capacity.Estimate
	FittedAt                time.Time
	FitReason               string
}

// MarshalBinary encodes every learner and its latest estimate: the state
// file's capacity section.
func (ls *Learners) MarshalBinary() ([]byte, error) {
	ls.mu.Lock()
	keys := make([]key, 0, len(ls.entries))
	for k := range ls.entries {
		keys = append(keys, k)
	}
	entries := make([]*entry, len(keys))
	for j, k := range keys {
		entries[j] = ls.entries[k]
	}
	ls.mu.Unlock()
	st := learnersState{Version: stateVersion, Entries: make([]entryState, 0, len(keys))}
	for j, e := range entries {
		k := keys[j]
		e.mu.Lock()
		st.Entries = append(st.Entries, entryState{
			Target: k.target, Model: k.model, SLO: k.slo, Def: e.def, Goal: e.goal, Labels: e.labels,
			Learner: e.learner.State(), Windows: e.windows, Newest: e.newest, Fitted: e.fitted, Estimate: e.est,
			FittedAt: e.fittedAt, FitReason: e.fitReason,
		})
		e.mu.Unlock()
	}
	slices.SortFunc(st.Entries, func(a, b entryState) int {
		return compareKeys(key{a.Target, a.Model, a.SLO}, key{b.Target, b.Model, b.SLO})
	})
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, fmt.Errorf("encode capacity learners: %w", err)
	}
	return buf.Bytes(), nil
}

// UnmarshalBinary replaces every learner with those of data. Data that
// does not decode, is of another version or holds a learner that
// capacity.RestoreLearner refuses (or an estimate of an unknown kind, or
// one key twice) is an error naming the fault, and changes nothing. A
// learner restored for an SLO whose definition changed since starts over
// at its next interval, as a reload would make it.
func (ls *Learners) UnmarshalBinary(data []byte) (err error) {
	defer func() {
		// gob guards itself, but the state file is outside input: never panic.
		if r := recover(); r != nil {
			err = fmt.Errorf("decode capacity learners: %v", r)
		}
	}()
	var st learnersState
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&st); err != nil {
		return fmt.Errorf("decode capacity learners: %w", err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("decode capacity learners: format version %d, want %d", st.Version, stateVersion)
	}
	entries := make(map[key]*entry, len(st.Entries))
	defs := map[string]string{}
	for _, es := range st.Entries {
		k := key{es.Target, es.Model, es.SLO}
		if _, dup := entries[k]; dup {
			return fmt.Errorf("decode capacity learners: target %q, model %q, SLO %q saved twice", k.target, k.model, k.slo)
		}
		e, err := ls.restoreEntry(es)
		if err != nil {
			return fmt.Errorf("decode capacity learners: target %q, model %q, SLO %q: %w", k.target, k.model, k.slo, err)
		}
		entries[k] = e
		defs[k.slo] = es.Def
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.entries, ls.defs = entries, defs
	return nil
}

// restoreEntry rebuilds one saved learner and its estimate.
func (ls *Learners) restoreEntry(es entryState) (*entry, error) {
	if !(es.Goal > 0 && es.Goal < 1) {
		return nil, fmt.Errorf("goal %v outside (0, 1)", es.Goal)
	}
	if es.Def == "" {
		return nil, fmt.Errorf("no SLO definition")
	}
	switch es.Estimate.Kind {
	case capacity.Bounded, capacity.LowerOnly, capacity.Unknown:
	case "":
		if es.Fitted {
			return nil, fmt.Errorf("a fitted estimate without a kind")
		}
	default:
		return nil, fmt.Errorf("estimate of unknown kind %q", es.Estimate.Kind)
	}
	l, err := capacity.RestoreLearner(ls.config(es.Goal), es.Learner)
	if err != nil {
		return nil, err
	}
	return &entry{learner: l, def: es.Def, goal: es.Goal, labels: es.Labels, windows: es.Windows, newest: es.Newest, fitted: es.Fitted, est: es.Estimate,
		fittedAt: es.FittedAt, fitReason: es.FitReason}, nil
}
