package pipeline

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// abortedRun scrapes the cancel15 workload every 15 s for 20 minutes and
// calls check on every window evaluated at each whole minute from the fifth
// on, with the simulator's truth of that window: the requests its clients
// cancelled (before or after their first token, counted when they left)
// and those abandoned after their first token.
func abortedRun(t *testing.T, cfg sim.Config, check func(where string, aborted float64, hasAborted bool, bound slo.Bounded, cancelled, abandoned float64)) {
	t.Helper()
	run := newWorkloadOf(t, cfg, []slo.SLO{interactive}, time.Minute, 5*time.Minute)
	s, p, step := run.sim, run.p, scrapeStep
	for at := start.Add(step); !at.After(start.Add(20 * time.Minute)); at = at.Add(step) {
		scrapeInto(t, p, s, at)
		if at.Sub(start) < 5*time.Minute || at.Sub(start)%time.Minute != 0 {
			continue
		}
		truth := s.Truth()
		for _, w := range p.Evaluate(at).Targets[0].Models[0].Windows {
			if len(w.SLOs) != 1 || !w.SLOs[0].HasAbandoned {
				t.Fatalf("at %v window %v: no abandoned bound", at.Sub(start), w.Window.Nominal)
			}
			cancelled := len(simtruth.CancelledIn(truth, w.Window.Start, w.Window.End))
			abandoned := len(simtruth.AbandonedIn(truth, w.Window.Start, w.Window.End))
			where := (at.Sub(start)).String() + " window " + w.Window.Nominal.String()
			check(where, w.Aborted, w.HasAborted, w.SLOs[0].Abandoned, float64(cancelled), float64(abandoned))
		}
	}
}

// TestAbortedCountsWhatVLLMCounts serves the cancel15 workload with the
// simulator counting every client cancellation under finished_reason="abort"
// (as vLLM's proposed fixes would): the exported count is exactly the
// cancellations of each window. Served as released vLLM does (no count), it
// is 0 while the abandoned bound proves requests left: 0 is not "none".
func TestAbortedCountsWhatVLLMCounts(t *testing.T) {
	cfg, err := sim.Preset("cancel15", 11, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CountAborts = true
	total := 0.0
	abortedRun(t, cfg, func(where string, aborted float64, has bool, _ slo.Bounded, cancelled, _ float64) {
		if !has || aborted != cancelled {
			t.Errorf("%s: aborted %v (present %v), truth %v cancelled", where, aborted, has, cancelled)
		}
		total += cancelled
	})
	if total == 0 {
		t.Fatal("no cancellation in any window: the test is vacuous")
	}
	t.Logf("%v cancellations summed over the windows checked", total)

	cfg.CountAborts = false
	proven := 0
	abortedRun(t, cfg, func(where string, aborted float64, has bool, bound slo.Bounded, _, abandoned float64) {
		if !has || aborted != 0 {
			t.Errorf("%s: aborted %v (present %v), want a present 0 from released vLLM", where, aborted, has)
		}
		if bound.Lower > abandoned {
			t.Errorf("%s: abandoned lower bound %v above the truth %v", where, bound.Lower, abandoned)
		}
		if bound.Lower > 0 {
			proven++
		}
	})
	if proven == 0 {
		t.Error("no window where the abandoned bound proves that requests left: the test shows nothing")
	}
	t.Logf("%d windows where the abandoned bound proves requests left while the count says 0", proven)
}

// TestAbortedIsNotABound adds clients that give up before their first token
// to the cancel15 workload, counted by the simulator: vLLM's count then
// exceeds the upper bound of the requests abandoned after their first token
// in some windows, while that bound still holds the truth: the count is no
// lower bound of the abandoned requests (nor, released vLLM shows, an upper
// one), so it never narrows them.
func TestAbortedIsNotABound(t *testing.T) {
	cfg, err := sim.Preset("cancel15", 11, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CountAborts = true
	cfg.Models[0].Workload.Cancel.BeforeFirstToken = 0.2
	cfg.Models[0].Workload.Cancel.Patience = 300 * time.Millisecond
	above := 0
	abortedRun(t, cfg, func(where string, aborted float64, has bool, bound slo.Bounded, cancelled, abandoned float64) {
		if !has || aborted != cancelled {
			t.Errorf("%s: aborted %v (present %v), truth %v cancelled", where, aborted, has, cancelled)
		}
		if abandoned < bound.Lower || abandoned > bound.Upper {
			t.Errorf("%s: abandoned truth %v outside [%v, %v]", where, abandoned, bound.Lower, bound.Upper)
		}
		if aborted > bound.Upper {
			above++
		}
	})
	if above == 0 {
		t.Error("the count never exceeded the abandoned upper bound: the test shows nothing")
	}
	t.Logf("%d windows with the count above the abandoned upper bound", above)
}
