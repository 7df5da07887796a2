package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestReusedScratchIsFreshMemory compares the joints a ledger computes in
// one ledger.Scratch reused over every window of two ledgers (as an
// evaluation's goroutine reuses it over its targets) with those computed in
// fresh memory, field by field to the bit (%v prints a float's shortest
// exact form, −0 and NaN included): windows of 1 minute to 2 hours ending
// at every fifth scrape of 75 minutes of steady load, overload and a quiet
// tail, so that a window finds memory left by a longer and by a shorter
// one, with intervals before it and without.
func TestReusedScratchIsFreshMemory(t *testing.T) {
	strict := interactive
	strict.Name = "strict"
	strict.Objectives = []slo.Objective{{Metric: slo.TTFT, Threshold: 0.25}, {Metric: slo.E2E, Threshold: 8}}
	var ledgers []*ledger.Ledger
	for k, rate := range []float64{sim.DemoRate, 3 * sim.DemoRate} {
		spec := testSpec(t)
		spec.SLOs = []slo.SLO{interactive, strict}
		p := New(spec)
		s := phased(t,
			sim.Phase{Duration: 30 * time.Minute, Kind: sim.Poisson, Rate: rate},
			sim.Phase{Duration: 15 * time.Minute, Kind: sim.Poisson, Rate: 4 * rate},
			sim.Phase{Kind: sim.Poisson, Rate: rate / 4})
		for at := start; !at.After(start.Add(75 * time.Minute)); at = at.Add(15 * time.Second) {
			scrapeInto(t, p, s, at)
		}
		l := p.targets["gpu0"].store.Ledger(sim.DemoConfig(7, start).Models[0].Name)
		if l == nil {
			t.Fatalf("run %d: no ledger", k)
		}
		ledgers = append(ledgers, l)
	}
	var sc ledger.Scratch
	compared := 0
	for e := 5; e <= 300; e += 5 {
		end := start.Add(time.Duration(e) * 15 * time.Second)
		for _, length := range []time.Duration{time.Hour, time.Minute, 2 * time.Hour, 5 * time.Minute, 30 * time.Minute} {
			for k, l := range ledgers {
				for i := range 2 {
					for _, spans := range []bool{true, false} {
						got, okGot := l.WindowIn(i, end.Add(-length), end, spans, &sc)
						want, okWant := l.WindowOf(i, end.Add(-length), end, spans)
						if g, w := fmt.Sprintf("%v %+v", okGot, got), fmt.Sprintf("%v %+v", okWant, want); g != w {
							t.Fatalf("ledger %d, SLO %d, window %v to scrape %d: in reused memory\n%s\nin its own\n%s", k, i, length, e, g, w)
						}
						compared++
					}
				}
			}
		}
	}
	t.Logf("%d joints compared", compared)
}

// TestPassScratchIsFreshMemory compares an evaluation of three targets,
// whose goroutines reuse one pass scratch over their targets' passes (the
// evaluated windows, their index and the joints' memory), with each target
// evaluated alone in fresh memory: the reports print the same (%v prints
// a float's shortest exact form). The targets differ in load and warm-up, and the default windows, budget and alerts give each pass seven
// windows of different lengths.
func TestPassScratchIsFreshMemory(t *testing.T) {
	spec := defaultLikeSpec(t)
	base := spec.Targets[0]
	spec.Targets = nil
	for k := range 3 {
		ts := base
		ts.Name = fmt.Sprintf("gpu%d", k)
		ts.URL = fmt.Sprintf("http://127.0.0.1:%d/metrics", 8000+k)
		if k == 1 {
			ts.Warmup = time.Minute
		}
		spec.Targets = append(spec.Targets, ts)
	}
	p := New(spec)
	for k, ts := range spec.Targets {
		rate := float64(k+1) * sim.DemoRate
		s := phased(t, sim.Phase{Duration: 20 * time.Minute, Kind: sim.Poisson, Rate: rate}, sim.Phase{Kind: sim.Poisson, Rate: 3 * rate})
		for at := start; !at.After(start.Add(40 * time.Minute)); at = at.Add(15 * time.Second) {
			s.AdvanceTo(at)
			body, ct := s.Exposition()
			snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Ingest(ts.Name, snap, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := start.Add(40 * time.Minute)
	rep := p.Evaluate(now)
	if len(rep.Targets) != 3 {
		t.Fatalf("%d targets, want 3", len(rep.Targets))
	}
	for k, ts := range spec.Targets {
		alone := p.targets[ts.Name].evaluate(spec, now, nil)
		if len(alone.Models) == 0 || len(alone.Models[0].Windows) != 4 || len(alone.Models[0].Burns) != 3 {
			t.Fatalf("target %d: %d models, want one with 4 windows and 3 burn checks", k, len(alone.Models))
		}
		if got, want := fmt.Sprintf("%+v", rep.Targets[k]), fmt.Sprintf("%+v", alone); got != want {
			t.Fatalf("target %d: in reused memory\n%s\nin its own\n%s", k, got, want)
		}
	}
}
