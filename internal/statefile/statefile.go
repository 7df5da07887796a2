// Package statefile is the format of the daemon's state file: what of the
// pipeline survives a restart, so that the windows and error budgets of a
// restarted daemon go on where they stopped. For each target it keeps the
// target's identity (name, URL, profile), its history, its models' ledgers
// and its good-request totals; the retired targets kept for revival are kept
// the same way.
//
// It encodes and decodes, and nothing else: it never reads or writes a file
// (package daemon does, atomically) and never decides which saved target
// goes where (package pipeline matches them to the configuration). A state
// file is outside input: Decode refuses a corrupt or foreign one with an
// error and never panics.
package statefile

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// version is the version of the format Encode writes; Decode refuses
// others, so that an old file starts the daemon fresh instead of being
// misread.
const version = 1

// State is the content of a state file.
type State struct {
	Targets []Target
	// Retired holds the retired targets kept for revival, the most recently
	// retired first; absent in states written before it existed.
	Retired []Target
}

// file is State as gob writes it. Gob matches fields by name, so the names
// are the format and must not change.
type file struct {
	Version int
	Targets []Target
	Retired []Target
}

// Good holds the running totals of estimated good requests by model, SLO
// and objective.
type Good = map[string]map[string]map[string]float64

// Target is what of one target survives a restart.
type Target struct {
	Name, URL, Profile string
	History            []byte
	Good               Good
	// Ledgers holds each model's per-interval ledger; absent in states
	// written before it existed (the ledger then starts afresh).
	Ledgers map[string]ledger.State
}

// Identity is what must stay equal for a target to keep its history: its
// name, URL and profile.
func Identity(name, url, profile string) string {
	return name + "\x00" + url + "\x00" + profile
}

// Identity is the saved target's identity (see the function Identity).
func (t Target) Identity() string { return Identity(t.Name, t.URL, t.Profile) }

// Save copies what of a target survives a restart: its history encoded, its
// good-request totals and its ledgers' states, all of them copies that later
// changes of the target leave alone; on an error, the names are set. The
// caller holds the target's lock.
func Save(name, url, profile string, h *history.History, good Good, ledgers map[string]*ledger.Ledger) (Target, error) {
	t := Target{Name: name, URL: url, Profile: profile, Good: Good{}, Ledgers: map[string]ledger.State{}}
	for model, bySLO := range good {
		t.Good[model] = map[string]map[string]float64{}
		for s, byObj := range bySLO {
			t.Good[model][s] = maps.Clone(byObj)
		}
	}
	for model, l := range ledgers {
		t.Ledgers[model] = l.State()
	}
	data, err := h.MarshalBinary()
	if err != nil {
		return t, fmt.Errorf("encode history: %w", err)
	}
	t.History = data
	return t, nil
}

// Restore decodes the saved target's history at retention r, and the
// ledgers kept for the SLO list slos: a ledger kept for other SLOs starts
// afresh (it is left out), as its sums are of other objectives. A history
// that does not decode is an error.
func (t Target) Restore(r history.Retention, slos []slo.SLO) (*history.History, map[string]*ledger.Ledger, error) {
	h := history.New(r)
	if err := h.UnmarshalBinary(t.History); err != nil {
		return nil, nil, err
	}
	ledgers := map[string]*ledger.Ledger{}
	for model, ls := range t.Ledgers {
		if l, err := ledger.Restore(ls, slos); err == nil {
			ledgers[model] = l
		}
	}
	return h, ledgers, nil
}

// Encode writes a state in the current format.
func Encode(s State) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(file{Version: version, Targets: s.Targets, Retired: s.Retired}); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads a state Encode wrote. Bytes that are not such a state, or
// one of another format version, are an error; the histories and ledgers it
// holds are decoded later, by Target.Restore.
func Decode(data []byte) (s State, err error) {
	defer func() {
		// gob guards itself, but a state file is outside input: never panic.
		if r := recover(); r != nil {
			s, err = State{}, fmt.Errorf("decode state: %v", r)
		}
	}()
	var f file
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&f); err != nil {
		return State{}, fmt.Errorf("decode state: %w", err)
	}
	if f.Version != version {
		return State{}, fmt.Errorf("decode state: format version %d, want %d", f.Version, version)
	}
	return State{Targets: f.Targets, Retired: f.Retired}, nil
}
