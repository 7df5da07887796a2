package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestRejectedRequestsCountByPolicy serves the admission preset (overload
// against vLLM's --max-num-queued-reqs, with clients that cancel streams
// and leave the queue, which some windows must hold) and checks every window against the truth under the
// four populations (abandoned and rejected each bad or excluded): the
// rejected count is exactly the requests turned away, and "all" and the
// burn rate hold the truth with no tolerance; under rejected: bad the
// published bound excludes, in some window, the attainment that ignores
// the rejections. The newest preset adds preemptions (requests past their
// first token waiting again) and deferred requests.
func TestRejectedRequestsCountByPolicy(t *testing.T) {
	var slos []slo.SLO
	for _, ab := range []slo.Population{slo.AbandonedBad, slo.AbandonedExcluded} {
		for _, rej := range []slo.Population{slo.RejectedBad, slo.RejectedExcluded} {
			s := interactive
			s.Name, s.Abandoned, s.Rejected = fmt.Sprintf("ab%d-rej%d", ab, rej), ab, rej
			slos = append(slos, s)
		}
	}
	for _, preset := range []string{"admission", "newest"} {
		t.Run(preset, func(t *testing.T) { checkRejectedByPolicy(t, preset, slos) })
	}
}

// checkRejectedByPolicy is TestRejectedRequestsCountByPolicy on one preset.
func checkRejectedByPolicy(t *testing.T, preset string, slos []slo.SLO) {
	run := newWorkload(t, preset, 11, slos, time.Minute, 5*time.Minute)
	checked, rejectedSeen, lowered, leftQueue := 0, 0.0, 0, 0
	for at := start.Add(scrapeStep); !at.After(start.Add(20 * time.Minute)); at = at.Add(scrapeStep) {
		scrapeInto(t, run.p, run.sim, at)
		if at.Sub(start) < 3*time.Minute || at.Sub(start)%time.Minute != 0 {
			continue
		}
		truth := run.sim.Truth()
		for _, w := range run.p.Evaluate(at).Targets[0].Models[0].Windows {
			where := fmt.Sprintf("at %v window %v", at.Sub(start), w.Window.Nominal)
			rejected := float64(len(simtruth.RejectedIn(truth, w.Window.Start, w.Window.End)))
			if !w.HasRejected || w.Rejected != rejected {
				t.Fatalf("%s: rejected %v (present %v), truth %v", where, w.Rejected, w.HasRejected, rejected)
			}
			rejectedSeen += rejected
			// Clients that left the queue before their first token: in no
			// family, so in no population (the truth's either).
			leftQueue += len(simtruth.CancelledIn(truth, w.Window.Start, w.Window.End)) - len(simtruth.AbandonedIn(truth, w.Window.Start, w.Window.End))
			finished := simtruth.FinishedIn(truth, w.Window.Start, w.Window.End)
			good := 0
			for _, r := range finished {
				if meetsInteractive(r) {
					good++
				}
			}
			abandoned := float64(len(simtruth.AbandonedIn(truth, w.Window.Start, w.Window.End)) + len(simtruth.LostIn(truth, w.Window.Start, w.Window.End)))
			for _, r := range w.SLOs {
				pop := float64(len(finished))
				s := slos[indexOf(slos, r.Name)]
				if s.Abandoned == slo.AbandonedBad {
					pop += abandoned
				}
				if s.Rejected == slo.RejectedBad {
					pop += rejected
				}
				all, ok := r.Objectives[slo.AllKey]
				truthAll := float64(good) / pop
				if !ok || truthAll < all.Lower || truthAll > all.Upper {
					t.Errorf("%s SLO %s: all %+v (present %v), truth %v", where, r.Name, all, ok, truthAll)
				}
				burn := (1 - truthAll) / (1 - s.Goal)
				// The same operations as slo.BurnRate on a truth in [0, 1], which
				// are monotone: no tolerance.
				if !r.HasBurnRate || burn < r.BurnRate.Lower || burn > r.BurnRate.Upper {
					t.Errorf("%s SLO %s: burn %+v, truth %v", where, r.Name, r.BurnRate, burn)
				}
				if s.Rejected == slo.RejectedBad && rejected > 0 && all.Upper < float64(good)/(pop-rejected) {
					lowered++ // the bound excludes the answer that ignores the rejections
				}
				checked++
			}
		}
	}
	if rejectedSeen == 0 || lowered == 0 || checked == 0 || leftQueue == 0 {
		t.Fatalf("%d results checked, %v rejections, %d lowered by them, %d clients left the queue: the overload shows nothing", checked, rejectedSeen, lowered, leftQueue)
	}
	t.Logf("%d SLO results checked; %v rejections and %d clients leaving the queue summed over the windows", checked, rejectedSeen, leftQueue)
}

func indexOf(slos []slo.SLO, name string) int {
	for i, s := range slos {
		if s.Name == name {
			return i
		}
	}
	return -1
}
