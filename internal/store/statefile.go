// The state file: what of the stores survives a restart, so that the
// windows and error budgets of a restarted daemon go on where they
// stopped. For each target it keeps the target's identity (name, URL,
// profile), its history, its models' ledgers and its good-request totals;
// the retired targets kept for revival are kept the same way.
//
// Encode and Decode only encode and decode: they never read or write a file
// (package daemon does, atomically) and never decide which saved target
// goes where (package pipeline matches them to the configuration). A state
// file is outside input: Decode refuses a corrupt or foreign one with an
// error and never panics, and Load refuses a saved target whose history
// does not decode.

package store

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
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

// Totals holds the running totals of estimated good requests by model, SLO
// and objective.
type Totals = map[string]map[string]map[string]float64

// Target is what of one target survives a restart. Its field names are the
// format (gob), so they never change.
type Target struct {
	Name, URL, Profile string
	History            []byte
	Good               Totals
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

// Save copies what of the store survives a restart, under the target's
// name, URL and profile: its history encoded, its good-request totals and
// its ledgers' states, all of them copies that later appends leave alone;
// on an error, the names are set.
func (s *Store) Save(name, url, profile string) (Target, error) {
	t := Target{Name: name, URL: url, Profile: profile, Good: Totals{}, Ledgers: map[string]ledger.State{}}
	for model, bySLO := range s.good {
		t.Good[model] = map[string]map[string]float64{}
		for name, byObj := range bySLO {
			t.Good[model][name] = maps.Clone(byObj)
		}
	}
	for model, l := range s.ledgers {
		t.Ledgers[model] = l.State()
	}
	data, err := s.hist.MarshalBinary()
	if err != nil {
		return t, fmt.Errorf("encode history: %w", err)
	}
	t.History = data
	return t, nil
}

// Loaded is a saved target decoded for a store, waiting to replace its
// past (Restore).
type Loaded struct {
	hist    *history.History
	ledgers map[string]*ledger.Ledger
	good    Totals
}

// Load decodes the saved target t at the store's retention, with the
// ledgers kept for the store's SLO list (a ledger kept for other SLOs
// starts afresh: it is left out, as its sums are of other objectives). It
// changes nothing: Restore swaps the result in, so that a caller restoring
// several stores can refuse them all when one does not decode. A history
// that does not decode is an error.
func (s *Store) Load(t Target) (Loaded, error) {
	h := history.New(s.hist.Retention())
	if err := h.UnmarshalBinary(t.History); err != nil {
		return Loaded{}, err
	}
	ledgers := map[string]*ledger.Ledger{}
	for model, ls := range t.Ledgers {
		if l, err := ledger.Restore(ls, s.cfg.SLOs); err == nil {
			ledgers[model] = l
		}
	}
	return Loaded{hist: h, ledgers: ledgers, good: t.Good}, nil
}

// Restore replaces the store's history and ledgers with loaded ones, and
// its totals too when the saved target had any. Its scrape health stays.
func (s *Store) Restore(l Loaded) {
	s.hist, s.ledgers = l.hist, l.ledgers
	if l.good != nil {
		s.good = l.good
	}
}

// Encode writes a state in the current format.
func Encode(st State) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(file{Version: version, Targets: st.Targets, Retired: st.Retired}); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads a state Encode wrote. Bytes that are not such a state, or
// one of another format version, are an error; the histories and ledgers it
// holds are decoded later, by Store.Load.
func Decode(data []byte) (st State, err error) {
	defer func() {
		// gob guards itself, but a state file is outside input: never panic.
		if r := recover(); r != nil {
			st, err = State{}, fmt.Errorf("decode state: %v", r)
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
