package pipeline

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestRetiredTargetRevives changes a target's URL by mistake and restores it:
// the history comes back. A removed target that returns revives too, and
// only the last maxRetiredTargets retired targets are kept.
func TestRetiredTargetRevives(t *testing.T) {
	s := phased(t, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	spec := testSpec(t)
	p := New(spec)
	for i := 1; i <= 20; i++ {
		scrapeInto(t, p, s, start.Add(time.Duration(i)*15*time.Second))
	}
	end := start.Add(5 * time.Minute)
	requests := func() float64 {
		models := p.Evaluate(end).Targets[0].Models
		if len(models) == 0 {
			return 0
		}
		return models[0].Windows[1].Requests[slo.E2E]
	}
	before := requests()
	if before == 0 {
		t.Fatal("no requests before the reloads")
	}

	moved := spec
	moved.Targets = []TargetSpec{spec.Targets[0]}
	moved.Targets[0].URL = "http://127.0.0.1:9999/metrics"
	p.Reconfigure(moved)
	if got := requests(); got != 0 {
		t.Fatalf("a re-pointed target kept %v requests of the old server's history", got)
	}
	p.Reconfigure(spec)
	if got := requests(); got != before {
		t.Errorf("after restoring the URL: %v requests, want %v", got, before)
	}

	empty := spec
	empty.Targets = nil
	p.Reconfigure(empty)
	p.Reconfigure(spec)
	if got := requests(); got != before {
		t.Errorf("after removing and re-adding the target: %v requests, want %v", got, before)
	}

	// Retire the target, then push it out with more retirements than kept.
	p.Reconfigure(empty)
	for i := range maxRetiredTargets {
		other := spec
		other.Targets = []TargetSpec{spec.Targets[0]}
		other.Targets[0].Name = fmt.Sprint("other-", i)
		p.Reconfigure(other)
		p.Reconfigure(empty)
	}
	if n := len(p.retired); n != maxRetiredTargets {
		t.Errorf("%d retired targets kept, want %d", n, maxRetiredTargets)
	}
	p.Reconfigure(spec)
	if got := requests(); got != 0 {
		t.Errorf("a target retired longer ago than the last %d revived with %v requests", maxRetiredTargets, got)
	}
}

// TestRetiredTargetsSurviveRestart: a daemon started once with a
// configuration that lacks a target keeps that target's saved history as
// retired, saves it again, and a later start (or reload) that configures it
// again gets it back whole. ExpireRetired drops it once its newest point is
// older than the retention's longest keep.
func TestRetiredTargetsSurviveRestart(t *testing.T) {
	s := phased(t, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	spec := testSpec(t)
	first := New(spec)
	for i := 1; i <= 20; i++ {
		scrapeInto(t, first, s, start.Add(time.Duration(i)*15*time.Second))
	}
	end := start.Add(5 * time.Minute)
	requests := func(p *Pipeline) float64 {
		for _, tr := range p.Evaluate(end).Targets {
			if tr.Name == "gpu0" && len(tr.Models) > 0 {
				return tr.Models[0].Windows[1].Requests[slo.E2E]
			}
		}
		return 0
	}
	before := requests(first)
	if before == 0 {
		t.Fatal("no requests before the restart")
	}
	saved, err := first.MarshalState()
	if err != nil {
		t.Fatal(err)
	}

	// A start whose configuration lacks gpu0 (another target instead).
	without := spec
	without.Targets = []TargetSpec{{Name: "other", URL: "http://127.0.0.1:8001/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}}
	second := New(without)
	n, err := second.UnmarshalState(saved)
	if err != nil || n != 0 {
		t.Fatalf("UnmarshalState without gpu0: %d restored, %v; want 0, nil", n, err)
	}
	if got := second.Retired(); !slices.Equal(got, []string{"gpu0"}) {
		t.Fatalf("retired after the start without gpu0: %q, want [gpu0]", got)
	}
	resaved, err := second.MarshalState()
	if err != nil {
		t.Fatal(err)
	}

	// The next start configures it again: its history is back.
	third := New(spec)
	if n, err := third.UnmarshalState(resaved); err != nil || n != 1 {
		t.Fatalf("UnmarshalState with gpu0 again: %d restored, %v; want 1, nil", n, err)
	}
	if got := requests(third); got != before {
		t.Errorf("after the start without gpu0 and one with it: %v requests in 5m, want %v", got, before)
	}
	if got := third.Retired(); !slices.Equal(got, []string{"other"}) {
		t.Errorf("retired after gpu0 came back: %q, want [other] (configured in the saved state, not now)", got)
	}

	// A reload revives the restored retired target too.
	second.Reconfigure(spec)
	if got := requests(second); got != before {
		t.Errorf("after a reload that configures gpu0 again: %v requests, want %v", got, before)
	}

	// Expiry: kept up to the retention's longest keep after its newest point.
	fourth := New(without)
	if _, err := fourth.UnmarshalState(saved); err != nil {
		t.Fatal(err)
	}
	tiers := without.retention().Tiers
	keep := tiers[len(tiers)-1].Keep
	newest := start.Add(20 * 15 * time.Second)
	if gone := fourth.ExpireRetired(newest.Add(keep)); len(gone) != 0 {
		t.Errorf("expired at exactly the longest keep: %q", gone)
	}
	if gone := fourth.ExpireRetired(newest.Add(keep + time.Second)); !slices.Equal(gone, []string{"gpu0"}) {
		t.Errorf("expired past the longest keep: %q, want [gpu0]", gone)
	}
	if got := fourth.Retired(); len(got) != 0 {
		t.Errorf("retired after expiry: %q", got)
	}
}
