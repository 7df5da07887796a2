package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
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
