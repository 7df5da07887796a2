package reliability

import (
	"bytes"
	"encoding/gob"
	"math/rand/v2"
	"strings"
	"testing"
)

// stateRig runs a rig for a few good scrapes and returns it with the main
// pipeline's state.
func stateRig(t *testing.T) (*rig, []byte) {
	t.Helper()
	r := newRig(t)
	for range 4 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
	}
	state, err := r.main.pipe.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	return r, state
}

// oldFormat is a state written by an older program: same shape, another
// version number.
func oldFormat(t *testing.T, version int) []byte {
	t.Helper()
	type targetState struct {
		Name, URL, Profile string
		History            []byte
	}
	type pipelineState struct {
		Version int
		Targets []targetState
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(pipelineState{Version: version, Targets: []targetState{{Name: hostileName, History: []byte("old")}}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStateFileDamaged: a corrupt, truncated, empty or older-format state is
// refused with an error, never a panic, and the pipeline that refused it is
// exactly as fresh as before (the daemon logs and starts fresh:
// daemon/state.go loadState).
func TestStateFileDamaged(t *testing.T) {
	_, good := stateRig(t)
	rng := rand.New(rand.NewPCG(7, 7))
	flipped := bytes.Clone(good)
	for range 64 {
		i := rng.IntN(len(flipped))
		flipped[i] ^= byte(1 + rng.IntN(255))
	}
	cases := map[string][]byte{
		"empty":            {},
		"garbage":          []byte("this is not a state file\n"),
		"truncated half":   good[:len(good)/2],
		"truncated by one": good[:len(good)-1],
		"bytes flipped":    flipped,
		"older format v0":  oldFormat(t, 0),
		"newer format v99": oldFormat(t, 99),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			fresh := newRig(t)
			before := fresh.main.pipe.Evaluate(rigStart)
			n, err := fresh.main.pipe.UnmarshalState(data)
			if name == "bytes flipped" && err == nil {
				// A flip may land in a float; then the state is valid, only other.
				return
			}
			if err == nil {
				t.Fatalf("state accepted (%d targets restored)", n)
			}
			if !strings.Contains(err.Error(), "state") {
				t.Errorf("error %q does not say it is about the state", err)
			}
			after := fresh.main.pipe.Evaluate(rigStart)
			for i := range after.Targets {
				if len(after.Targets[i].Models) != len(before.Targets[i].Models) {
					if n > 0 {
						t.Errorf("pipeline.UnmarshalState restores the good targets of a partly corrupt state yet returns an error, while the daemon logs \"starting fresh\": %v", err)
					}
					t.Fatalf("target %s: a refused state changed the models: %d → %d", after.Targets[i].Name, len(before.Targets[i].Models), len(after.Targets[i].Models))
				}
			}
		})
	}
}

// TestStatePartlyCorrupt: a state whose first target is good and second is
// damaged. pipeline.UnmarshalState's doc says a corrupt state "changes
// nothing"; this checks it.
func TestStatePartlyCorrupt(t *testing.T) {
	r, good := stateRig(t)
	var st struct {
		Version int
		Targets []struct {
			Name, URL, Profile string
			History            []byte
			Good               map[string]map[string]map[string]float64
		}
	}
	if err := gob.NewDecoder(bytes.NewReader(good)).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Targets) != 2 {
		t.Fatalf("%d targets in the state", len(st.Targets))
	}
	st.Targets[1].History = st.Targets[1].History[:len(st.Targets[1].History)/2]
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		t.Fatal(err)
	}
	fresh := newPublished(testSpec(targetSpec(t, healthyName, r.healthyURL), targetSpec(t, hostileName, r.badURL)))
	n, err := fresh.pipe.UnmarshalState(buf.Bytes())
	if err == nil {
		t.Fatalf("a state with a truncated history was accepted")
	}
	if n > 0 {
		t.Errorf("pipeline.UnmarshalState restored %d target(s) of a partly corrupt state and returned %v; its doc says a corrupt state changes nothing, and the daemon then logs \"starting fresh\" although it did not", n, err)
	}
}

// TestStateRoundTripNoDoubleCount: the daemon saves its state, stops and
// starts again; the restored pipeline continues with the next scrapes and
// publishes exactly what a pipeline that never stopped publishes (no double
// counting of the good-request totals or the windows across the restart).
func TestStateRoundTripNoDoubleCount(t *testing.T) {
	r, state := stateRig(t)
	restored := newPublished(testSpec(targetSpec(t, healthyName, r.healthyURL), targetSpec(t, hostileName, r.badURL)))
	n, err := restored.pipe.UnmarshalState(state)
	if err != nil || n != 2 {
		t.Fatalf("restore: %d targets, %v", n, err)
	}
	// The restored daemon scrapes the same targets: feed it the same results.
	for range 4 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
		now := r.clock.Now()
		for _, name := range []string{healthyName, hostileName} {
			f := r.healthy
			if name == hostileName {
				f = r.badF
			}
			// Replay the body main just ingested by scraping again at the same virtual time:
			// the sims are deterministic and do not advance when the time is unchanged.
			snap, resp, err := f.Scrape(t.Context(), r.profile, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := restored.pipe.Ingest(name, snap, resp.Duration); err != nil {
				t.Fatal(err)
			}
		}
		restored.evaluate(now)
		dur := metricsPrefix + "target_scrape_duration_seconds"
		if d := diff(restored.series(t), r.main.series(t)); d != "" {
			// Durations are wall-clock measurements; compare the rest.
			got, want := restored.series(t), r.main.series(t)
			for k := range got {
				if strings.HasPrefix(k, dur) {
					delete(got, k)
					delete(want, k)
				}
			}
			if d := diff(got, want); d != "" {
				t.Fatalf("after restore, at %v the series differ from a pipeline that never stopped:%s", now.Sub(rigStart), d)
			}
		}
	}
}
