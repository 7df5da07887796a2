package online

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

const scrapeStep = 15 * time.Second

var interactive = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}},
	Goal:       0.99,
	Period:     24 * time.Hour,
}

// perToken is judged per token only: it has no `all` to learn from.
var perToken = slo.SLO{Name: "streaming", Objectives: []slo.Objective{{Metric: slo.ITL, Threshold: 0.05}}, Goal: 0.99, Period: 24 * time.Hour}

func meets(r sim.Request) bool { return r.TTFT() <= 0.5+1e-9 && r.TPOT() <= 0.05+1e-9 }

func testSpec(obs pipeline.IntervalObserver) pipeline.Spec {
	return pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: scrapeStep, Labels: map[string]string{"zone": "a"}}},
		SLOs:      []slo.SLO{interactive, perToken},
		Windows:   []time.Duration{time.Minute},
		Quantiles: []float64{0.5},
		MaxModels: 10,
		Retention: history.NewRetention(10*time.Minute, 24*time.Hour),
		Intervals: obs,
	}
}

// steady is the demo's model at a constant Poisson rate.
func steady(t testing.TB, rate float64, seed uint64) *sim.Sim {
	t.Helper()
	cfg := sim.DemoConfig(seed, start)
	cfg.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: rate}}
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scrapeInto(t testing.TB, p *pipeline.Pipeline, s *sim.Sim, at time.Time) {
	t.Helper()
	s.AdvanceTo(at)
	body, ct := s.Exposition()
	snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
	if err != nil {
		t.Fatalf("parse at %v: %v", at, err)
	}
	if err := p.Ingest("gpu0", snap, 0); err != nil {
		t.Fatalf("ingest at %v: %v", at, err)
	}
}

// recorder keeps every interval the pipeline hands over.
type recorder struct{ ivs []pipeline.ClosedInterval }

func (r *recorder) ObserveIntervals(_ pipeline.TargetSpec, _ []slo.SLO, ivs []pipeline.ClosedInterval) {
	r.ivs = append(r.ivs, ivs...)
}

// TestIntervalsMatchTheTruth checks what the pipeline hands over at ingest,
// as Interval reads it, against the simulator: one interval per scrape
// after the first, none lost, each one's finished requests exactly, its
// good ones inside the ledger's bounds, and arrivals (first tokens plus
// the queue's growth) within a step's admissions of the truth per interval
// and over the run. The per-token SLO has no ledger record to learn from.
func TestIntervalsMatchTheTruth(t *testing.T) {
	s := steady(t, 3, 7)
	rec := &recorder{}
	p := pipeline.New(testSpec(rec))
	scrapes := 0
	for at := start.Add(scrapeStep); !at.After(start.Add(10 * time.Minute)); at = at.Add(scrapeStep) {
		scrapeInto(t, p, s, at)
		scrapes++
	}
	if len(rec.ivs) != scrapes-1 {
		t.Fatalf("%d intervals handed over for %d scrapes, want one per scrape after the first", len(rec.ivs), scrapes)
	}
	truth := s.Truth()
	var arrivals, arrivedAll float64
	for k, civ := range rec.ivs {
		if k > 0 && !civ.Window.Start.Equal(rec.ivs[k-1].Window.End) {
			t.Fatalf("interval %d starts at %v, the previous ended at %v", k, civ.Window.Start, rec.ivs[k-1].Window.End)
		}
		iv := Interval(civ, 0)
		fin := simtruth.FinishedIn(truth, iv.Start, iv.End)
		good := 0.0
		for _, r := range fin {
			if meets(r) {
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
}

// TestLearnersFollowTheSpec learns a steady, low load (a one-sided
// answer) for the SLO with a per-request objective only, then checks that
// a changed SLO starts learning over and says so, and that a target the
// pipeline no longer holds is forgotten.
func TestLearnersFollowTheSpec(t *testing.T) {
	s := steady(t, 2, 7)
	c := New(nil)
	spec := testSpec(c)
	p := pipeline.New(spec)
	at := start
	run := func(d time.Duration) {
		for end := at.Add(d); at.Before(end); {
			at = at.Add(scrapeStep)
			scrapeInto(t, p, s, at)
			if at.Sub(start)%(5*time.Minute) == 0 {
				c.Refit(p.Evaluate(at))
			}
		}
	}
	run(35 * time.Minute)
	reps := c.Reports()
	if len(reps) != 1 || reps[0].Target != "gpu0" || reps[0].Model != sim.DemoModel || reps[0].SLO != "interactive" || reps[0].Labels["zone"] != "a" {
		t.Fatalf("reports %+v, want one for gpu0 (zone a), the demo model and interactive", reps)
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
	gone := changed
	gone.Targets = nil
	if err := p.Reconfigure(gone); err != nil {
		t.Fatal(err)
	}
	c.Refit(p.Evaluate(at))
	if reps := c.Reports(); len(reps) != 0 {
		t.Fatalf("after the target left the configuration: %+v, want nothing", reps)
	}
}
