package pipeline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestCapacityIntervalsMatchTheTruth checks what CapacityIntervals reads
// against the simulator: every interval's finished requests exactly, its
// good ones inside the ledger's bounds, and arrivals (first tokens plus
// the queue's growth) within a step's admissions of the truth per interval
// and over the run.
func TestCapacityIntervalsMatchTheTruth(t *testing.T) {
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: 3})
	p := New(testSpec(t))
	for at := start.Add(scrapeStep); !at.After(start.Add(10 * time.Minute)); at = at.Add(scrapeStep) {
		scrapeInto(t, p, s, at)
	}
	ivs, err := p.CapacityIntervals("gpu0", sim.DemoModel, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) < 35 {
		t.Fatalf("%d intervals over 10 minutes of 15 s scrapes, want about 39", len(ivs))
	}
	truth := s.Truth()
	var arrivals, arrivedAll float64
	for _, iv := range ivs {
		fin := truth.FinishedIn(iv.Start, iv.End)
		good := 0.0
		for _, r := range fin {
			if meetsInteractive(r) {
				good++
			}
		}
		if iv.Finished != float64(len(fin)) || !iv.GoodKnown || good < iv.Good.Lower-1e-9 || good > iv.Good.Upper+1e-9 {
			t.Fatalf("interval %v: finished %v (truth %d), good %+v (truth %v)", iv.End, iv.Finished, len(fin), iv.Good, good)
		}
		arrived := 0
		for _, r := range truth {
			if r.Arrival.After(iv.Start) && !r.Arrival.After(iv.End) {
				arrived++
			}
		}
		if math.Abs(iv.Arrivals()-float64(arrived)) > 3 {
			t.Fatalf("interval %v: %v arrivals, truth %d", iv.End, iv.Arrivals(), arrived)
		}
		arrivals, arrivedAll = arrivals+iv.Arrivals(), arrivedAll+float64(arrived)
	}
	if math.Abs(arrivals-arrivedAll) > 3 {
		t.Fatalf("%v arrivals over the run, truth %v", arrivals, arrivedAll)
	}
	if later, _ := p.CapacityIntervals("gpu0", sim.DemoModel, 0, ivs[len(ivs)-1].End); len(later) != 0 {
		t.Fatalf("%d intervals after the last one read, want none", len(later))
	}
	if _, err := p.CapacityIntervals("gpu0", sim.DemoModel, 3, time.Time{}); err == nil {
		t.Fatal("an SLO index out of range gives no error")
	}
}

// TestCapacityLearnersFollowTheSpec learns a steady, low load (a one-sided
// answer), then checks that a changed SLO starts learning over and says so.
func TestCapacityLearnersFollowTheSpec(t *testing.T) {
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: 2})
	spec := testSpec(t)
	p := New(spec)
	c := NewCapacityLearners()
	at := start
	run := func(d time.Duration) {
		for end := at.Add(d); at.Before(end); {
			at = at.Add(scrapeStep)
			scrapeInto(t, p, s, at)
			if at.Sub(start)%(5*time.Minute) == 0 {
				c.Update(p, at)
			}
		}
	}
	run(35 * time.Minute)
	reps := c.Reports()
	if len(reps) != 1 || reps[0].Target != "gpu0" || reps[0].Model != sim.DemoModel || reps[0].SLO != "interactive" {
		t.Fatalf("reports %+v, want one for gpu0, the demo model and interactive", reps)
	}
	e := reps[0].Estimate
	if e.Kind != capacity.LowerOnly || !(e.Requests.Lower > 1.5 && e.Requests.Lower < 3) || !math.IsInf(e.Requests.Upper, 1) || math.Abs(e.Load-2) > 0.5 {
		t.Fatalf("after 35 minutes at 2 req/s: %s %+v load %v, want lower_only near 2 req/s", e.Kind, e.Requests, e.Load)
	}
	changed := spec
	changed.SLOs = []slo.SLO{interactive}
	changed.SLOs[0].Goal = 0.9
	if err := p.Reconfigure(changed); err != nil {
		t.Fatal(err)
	}
	run(5 * time.Minute)
	e = c.Reports()[0].Estimate
	if e.Kind != capacity.Unknown || !strings.Contains(e.Reason, "the SLO changed") || e.Windows > 3 {
		t.Fatalf("after the SLO changed: %s %q with %d windows, want unknown, saying the SLO changed", e.Kind, e.Reason, e.Windows)
	}
}
