package pipeline

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// FuzzUnmarshalState feeds the state loader bytes derived from a real state
// (a daemon's state file is outside input), one with the target configured
// and one with it retired: whatever it accepts, evaluating every window
// afterwards must not panic, at most maxRetiredTargets are kept retired, a
// reload may revive them and the state saves again; a state it refuses
// must leave the pipeline as it was.
func FuzzUnmarshalState(f *testing.F) {
	s := phased(f, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	spec := testSpec(f)
	p := New(spec)
	for i := 1; i <= 30; i++ {
		scrapeInto(f, p, s, start.Add(time.Duration(i)*15*time.Second))
	}
	data, err := p.MarshalState()
	if err != nil {
		f.Fatal(err)
	}
	without := spec
	without.Targets = nil
	r := New(without)
	if _, err := r.UnmarshalState(data); err != nil {
		f.Fatal(err)
	}
	retired, err := r.MarshalState()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(retired)
	f.Add([]byte{})
	end := start.Add(8 * time.Minute)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, first := range []Spec{spec, without} {
			q := New(first)
			if _, err := q.UnmarshalState(b); err != nil {
				if len(q.Retired()) != 0 {
					t.Errorf("a refused state left retired targets behind: %q", q.Retired())
				}
				if len(q.Evaluate(end).Targets) != 0 && q.Evaluate(end).Targets[0].Models != nil {
					t.Errorf("a refused state left models behind")
				}
				return
			}
			if n := len(q.Retired()); n > maxRetiredTargets {
				t.Errorf("%d retired targets kept, at most %d", n, maxRetiredTargets)
			}
			q.Evaluate(end)
			q.Reconfigure(spec)
			q.Evaluate(end)
			if _, err := q.MarshalState(); err != nil {
				t.Errorf("an accepted state does not save again: %v", err)
			}
		}
	})
}
