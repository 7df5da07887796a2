package pipeline

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// FuzzUnmarshalState feeds the state loader bytes derived from a real state
// (a daemon's state file is outside input): whatever it accepts, evaluating
// every window afterwards must not panic, and a state it refuses must leave
// the pipeline as it was.
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
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte{})
	end := start.Add(8 * time.Minute)
	f.Fuzz(func(t *testing.T, b []byte) {
		q := New(spec)
		if _, err := q.UnmarshalState(b); err != nil {
			if len(q.Evaluate(end).Targets) != 0 && q.Evaluate(end).Targets[0].Models != nil {
				t.Errorf("a refused state left models behind")
			}
			return
		}
		q.Evaluate(end)
	})
}
