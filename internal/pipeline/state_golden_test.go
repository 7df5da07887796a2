package pipeline

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var updateState = flag.Bool("update", false, "rewrite testdata/state_v1.gob")

// goldenStateSpec and feedGoldenState are the target and the scrapes the
// state file under testdata was written from: four minutes of a Poisson
// load with a one-minute warm-up, judged by an SLO of per-request
// objectives and one of ITL alone.
func goldenStateSpec(t *testing.T) Spec {
	spec := testSpec(t)
	spec.SLOs = append(spec.SLOs, slo.SLO{Name: "smooth", Objectives: []slo.Objective{{Metric: slo.ITL, Threshold: 0.05}}, Goal: 0.95, Period: time.Hour})
	spec.Targets[0].Warmup = time.Minute
	return spec
}

func feedGoldenState(t *testing.T, p *Pipeline) time.Time {
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
	at := start
	for ; !at.After(start.Add(4 * time.Minute)); at = at.Add(15 * time.Second) {
		scrapeInto(t, p, s, at)
	}
	return at.Add(-15 * time.Second)
}

// TestStateFileOfBeforeTheStore: testdata/state_v1.gob was written by the
// pipeline before package store owned the format (its histories, ledgers
// and good-request totals of format version 1). It still loads, and the
// pipeline restored from it reports every window, budget, burn rate and
// good-request total exactly as one fed the same scrapes live.
func TestStateFileOfBeforeTheStore(t *testing.T) {
	live := New(goldenStateSpec(t))
	end := feedGoldenState(t, live)
	if *updateState {
		data, err := live.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/state_v1.gob", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("testdata/state_v1.gob")
	if err != nil {
		t.Fatal(err)
	}
	restored := New(goldenStateSpec(t))
	if n, err := restored.UnmarshalState(data); n != 1 || err != nil {
		t.Fatalf("restored %d targets, err %v", n, err)
	}
	want, got := live.Evaluate(end).Targets[0], restored.Evaluate(end).Targets[0]
	if len(want.Models) == 0 || len(want.Models[0].GoodRequests) == 0 {
		t.Fatalf("the live pipeline reports %+v: nothing to compare", want.Models)
	}
	if g, w := fmt.Sprintf("%+v %v %+v", got.Models, got.Resets, got.History), fmt.Sprintf("%+v %v %+v", want.Models, want.Resets, want.History); g != w {
		t.Fatalf("restored from the state file:\n%s\nfed live:\n%s", g, w)
	}
}
