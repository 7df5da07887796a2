package online

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/alerting"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// TestHeadroomLow: only a bounded estimate whose headroom's upper end is
// below the margin raises the ticket; a one-sided or unknown answer never
// does, nor does a margin of 0.
func TestHeadroomLow(t *testing.T) {
	cases := []struct {
		name   string
		e      capacity.Estimate
		margin float64
		want   bool
	}{
		{"bounded, upper below", capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: 0.05, Lower: -0.1, Upper: 0.15}}, 0.2, true},
		{"bounded, upper at the margin", capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: 0.1, Lower: 0, Upper: 0.2}}, 0.2, false},
		{"bounded, only the lower end below", capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: 0.25, Lower: 0.1, Upper: 0.35}}, 0.2, false},
		{"lower_only, near the highest load seen", capacity.Estimate{Kind: capacity.LowerOnly, Headroom: capacity.Range{Estimate: 0.01, Lower: 0.01, Upper: 1}}, 0.2, false},
		{"unknown", capacity.Estimate{Kind: capacity.Unknown, Headroom: capacity.Range{Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}, 0.2, false},
		{"margin off", capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: -0.5, Lower: -0.6, Upper: -0.4}}, 0, false},
	}
	for _, tc := range cases {
		if got := capacity.HeadroomLow(tc.e, tc.margin); got != tc.want {
			t.Errorf("%s: HeadroomLow = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHeadroomTicketLifecycle walks one ticket through the one alert state
// machine (alerting.Book, as the pipeline runs it): pending when the
// headroom falls below the margin, firing after the hold, resolved when it
// recovers, kept while the notifier resends the resolve and then dropped; a
// pending ticket whose condition stops is dropped at once. Labels carry the
// target's, the model and the SLO.
func TestHeadroomTicketLifecycle(t *testing.T) {
	low := capacity.Report{Target: "gpu0", Model: "m", SLO: "interactive", Labels: map[string]string{"zone": "a"},
		Estimate: capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: 0.05, Lower: 0, Upper: 0.1}}}
	fine := low
	fine.Estimate.Headroom = capacity.Range{Estimate: 0.4, Lower: 0.3, Upper: 0.5}
	var book alerting.Book
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at    time.Duration
		rep   capacity.Report
		state pipeline.AlertState // "" for no alert
	}{
		{0, low, pipeline.StatePending},
		{2 * time.Minute, fine, ""}, // pending and gone: dropped
		{3 * time.Minute, low, pipeline.StatePending},
		{17 * time.Minute, low, pipeline.StatePending},
		{18 * time.Minute, low, pipeline.StateFiring},
		{30 * time.Minute, fine, pipeline.StateResolved},
		{45 * time.Minute, fine, pipeline.StateResolved},
		{46 * time.Minute, fine, ""},
	}
	for _, s := range steps {
		got := book.Update(t0.Add(s.at), HeadroomConditions([]capacity.Report{s.rep}, HeadroomPolicy{Margin: 0.2, Hold: 15 * time.Minute}))
		if s.state == "" {
			if len(got) != 0 {
				t.Fatalf("at %v: %+v, want no alert", s.at, got)
			}
			continue
		}
		if len(got) != 1 || got[0].State != s.state {
			t.Fatalf("at %v: %+v, want one %s alert", s.at, got, s.state)
		}
		a := got[0]
		want := map[string]string{"alertname": "VLLMSLOCapacityHeadroomLow", "severity": "ticket", "target": "gpu0", "model_name": "m", "slo": "interactive", "zone": "a"}
		if len(a.Labels) != len(want) || a.Target != "gpu0" || a.Annotations["summary"] == "" {
			t.Fatalf("at %v: alert %+v, want labels %v", s.at, a, want)
		}
		for k, v := range want {
			if a.Labels[k] != v {
				t.Fatalf("at %v: label %s = %q, want %q", s.at, k, a.Labels[k], v)
			}
		}
	}
	if low.Labels["alertname"] != "" {
		t.Fatalf("the estimate's labels were written into: %v", low.Labels)
	}
}

// TestHeadroomMarginOff: a margin of 0 raises no ticket, whatever the
// estimate.
func TestHeadroomMarginOff(t *testing.T) {
	r := capacity.Report{Target: "gpu0", Model: "m", SLO: "s",
		Estimate: capacity.Estimate{Kind: capacity.Bounded, Headroom: capacity.Range{Estimate: -0.5, Lower: -0.6, Upper: -0.4}}}
	if got := HeadroomConditions([]capacity.Report{r}, HeadroomPolicy{Hold: time.Minute}); len(got) != 0 {
		t.Fatalf("margin 0: %+v, want no ticket", got)
	}
}

// TestReplicaNeedsCountsTheServingTargets: the replica signal pools the
// model's estimates and counts as serving the targets whose last scrape
// succeeded with the model in it, an estimate or not.
func TestReplicaNeedsCountsTheServingTargets(t *testing.T) {
	lower := func(lo, load float64) capacity.Estimate {
		return capacity.Estimate{Kind: capacity.LowerOnly, Load: load, Requests: capacity.Range{Estimate: lo, Lower: lo, Upper: math.Inf(1)}}
	}
	m := []pipeline.ModelReport{{Name: "m"}}
	rep := &pipeline.Report{
		Targets: []pipeline.TargetReport{{Name: "a", Up: true, Models: m}, {Name: "b", Models: m}, {Name: "c", Up: true, Models: m}},
		Capacity: []capacity.Report{
			{Target: "a", Model: "m", SLO: "s", Estimate: lower(4, 3)},
			{Target: "b", Model: "m", SLO: "s", Estimate: lower(5, 3)},
		},
	}
	ns := ReplicaNeeds(rep, nil)
	if len(ns) != 1 || ns[0].Serving != 2 || ns[0].Of != 2 || ns[0].Replicas != 6.0/5 {
		t.Fatalf("needs %+v, want one for m: 2 serving, 2 estimates, 6/5 replicas", ns)
	}
}
