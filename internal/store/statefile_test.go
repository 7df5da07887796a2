package store

import (
	"bytes"
	"encoding/gob"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestRoundTrip: a saved target decodes to the same identity, totals and
// history, its totals are a copy the store's later counts leave alone, and
// a ledger kept for other SLOs is left out of the restore.
func TestRoundTrip(t *testing.T) {
	r := history.NewRetention(time.Hour, 24*time.Hour)
	slos := []slo.SLO{{Name: "s", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}, Goal: 0.99, Period: time.Hour}}
	st := New(Config{SLOs: slos, Retention: r})
	st.good = Totals{"m": {"s": {"ttft": 3}}}
	st.ledgers = map[string]*ledger.Ledger{"m": ledger.New(slos)}
	saved, err := st.Save("gpu0", "http://gpu0/metrics", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	st.good["m"]["s"]["ttft"] = 4
	data, err := Encode(State{Targets: []Target{saved}, Retired: []Target{{Name: "old", URL: "u", Profile: "vllm", History: saved.History}}})
	if err != nil {
		t.Fatal(err)
	}
	state, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Targets) != 1 || len(state.Retired) != 1 || state.Targets[0].Identity() != Identity("gpu0", "http://gpu0/metrics", "vllm") {
		t.Fatalf("decoded %+v", state)
	}
	if got := state.Targets[0].Good["m"]["s"]["ttft"]; got != 3 {
		t.Errorf("saved total %v, want the 3 counted when saved", got)
	}
	loaded, err := New(Config{SLOs: slos, Retention: r}).Load(state.Targets[0])
	if err != nil || loaded.hist == nil || len(loaded.ledgers) != 1 {
		t.Errorf("restore: history %v, ledgers %v, err %v", loaded.hist, loaded.ledgers, err)
	}
	other := []slo.SLO{{Name: "s", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 1}}, Goal: 0.99, Period: time.Hour}}
	if loaded, err := New(Config{SLOs: other, Retention: r}).Load(state.Targets[0]); err != nil || len(loaded.ledgers) != 0 {
		t.Errorf("a ledger of other SLOs restored: %v, %v", loaded.ledgers, err)
	}
	if _, err := New(Config{SLOs: slos, Retention: r}).Load(Target{History: []byte("not a history")}); err == nil {
		t.Error("a corrupt history restored")
	}
}

// TestDecodeRefuses: bytes that are no state, a truncated state and a state
// of another format version are errors, never a panic.
func TestDecodeRefuses(t *testing.T) {
	good, err := Encode(State{Targets: []Target{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	var other bytes.Buffer
	if err := gob.NewEncoder(&other).Encode(file{Version: version + 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "decode state"},
		{"garbage", []byte("{\"targets\": []}"), "decode state"},
		{"truncated", good[:len(good)/2], "decode state"},
		{"other version", other.Bytes(), "format version 2, want 1"},
	} {
		if _, err := Decode(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
