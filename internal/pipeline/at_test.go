package pipeline

import (
	"reflect"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// adoptTightened checks that every ledger number of got lies within want's
// bounds (and has bounds no wider), then copies want's into got, so that the
// rest can be compared exactly.
func adoptTightened(t *testing.T, got *ModelReport, want ModelReport) {
	t.Helper()
	within := func(what string, g *slo.Bounded, w slo.Bounded) {
		t.Helper()
		if g.Lower < w.Lower-1e-9 || g.Upper > w.Upper+1e-9 {
			t.Errorf("%s: later [%v, %v] not within the past [%v, %v]", what, g.Lower, g.Upper, w.Lower, w.Upper)
		}
		*g = w
	}
	if len(got.Windows) != len(want.Windows) || len(got.Budgets) != len(want.Budgets) || len(got.Burns) != len(want.Burns) {
		return // DeepEqual reports it
	}
	for i := range got.Windows {
		gs, ws := got.Windows[i].SLOs, want.Windows[i].SLOs
		for k := range gs {
			if k >= len(ws) {
				break
			}
			g, w := &gs[k], ws[k]
			if a, ok := g.Objectives[slo.AllKey]; ok {
				within("all", &a, w.Objectives[slo.AllKey])
				g.Objectives[slo.AllKey] = a
			}
			if a, ok := g.GoodRequests[slo.AllKey]; ok {
				within("good", &a, w.GoodRequests[slo.AllKey])
				g.GoodRequests[slo.AllKey] = a
			}
			within("goodput requests", &g.GoodputRequestsPerSecond, w.GoodputRequestsPerSecond)
			within("goodput tokens", &g.GoodputTokensPerSecond, w.GoodputTokensPerSecond)
			within("abandoned", &g.Abandoned, w.Abandoned)
			within("burn", &g.BurnRate, w.BurnRate)
		}
	}
	for i := range got.Budgets {
		within("budget", &got.Budgets[i].Remaining, want.Budgets[i].Remaining)
	}
	for i := range got.Burns {
		within("long burn", &got.Burns[i].Long, want.Burns[i].Long)
		within("short burn", &got.Burns[i].Short, want.Burns[i].Short)
		within("long evidence's abandoned", &got.Burns[i].LongEvidence.Ledger, want.Burns[i].LongEvidence.Ledger)
		within("short evidence's abandoned", &got.Burns[i].ShortEvidence.Ledger, want.Burns[i].ShortEvidence.Ledger)
	}
}

// TestEvaluateModelAtMatchesPastEvaluate: a model evaluated at a past time
// from a longer history equals what Evaluate said at that time from the
// history it had then, except for the running good-request totals and the
// ledger's joint numbers, whose bounds later scrapes may only tighten (a
// request in flight at a past scrape is seen finishing later).
func TestEvaluateModelAtMatchesPastEvaluate(t *testing.T) {
	phases := []sim.Phase{
		{Duration: 12 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate},
		{Kind: sim.Poisson, Rate: 4 * sim.DemoRate},
	}
	long, short := New(testSpec(t)), New(testSpec(t))
	sLong, sShort := phased(t, phases...), phased(t, phases...)
	step := 15 * time.Second
	past := start.Add(14 * time.Minute)
	for at := start.Add(step); !at.After(start.Add(20 * time.Minute)); at = at.Add(step) {
		scrapeInto(t, long, sLong, at)
		if !at.After(past) {
			scrapeInto(t, short, sShort, at)
		}
	}
	// Between scrapes: the window ends at the last scrape before.
	want := short.Evaluate(past.Add(7 * time.Second)).Targets[0].Models[0]
	want.GoodRequests = nil
	got, err := long.EvaluateModelAt("gpu0", want.Name, past.Add(7*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	adoptTightened(t, &got, want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EvaluateModelAt differs from the past Evaluate:\n got %+v\nwant %+v", got, want)
	}
	if len(got.Windows) != len(testSpec(t).Windows) || !got.Budgets[0].Known || !got.Burns[0].Known {
		t.Errorf("a past point 14 minutes in lacks windows, budget or burns: %+v", got)
	}
	if c := got.Budgets[0].Covered; c != 14*time.Minute-step {
		t.Errorf("budget covers %v, want the history's %v", c, 14*time.Minute-step)
	}
	one, err := long.EvaluateModelAt("gpu0", want.Name, past.Add(7*time.Second), 5*time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Windows) == 1 {
		one.Windows = append([]slo.WindowReport{got.Windows[0]}, one.Windows...)
		adoptTightened(t, &one, want)
		one.Windows = one.Windows[1:]
	}
	if len(one.Windows) != 1 || !reflect.DeepEqual(one.Windows[0], want.Windows[1]) || !reflect.DeepEqual(one.Budgets, want.Budgets) {
		t.Errorf("asking for the 5m window (and an unconfigured 1h) gave %d windows, or other numbers", len(one.Windows))
	}
	oldest, newest, err := long.Span("gpu0")
	if err != nil || !oldest.Equal(start.Add(step)) || !newest.Equal(start.Add(20*time.Minute)) {
		t.Errorf("Span = %v, %v, %v", oldest, newest, err)
	}
}

// TestEvaluateModelAtUnknown: unknown targets and models are errors that name
// them; a time before the history gives a report without windows.
func TestEvaluateModelAtUnknown(t *testing.T) {
	p := New(testSpec(t))
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
	for i := 1; i <= 3; i++ {
		scrapeInto(t, p, s, start.Add(time.Duration(i)*15*time.Second))
	}
	if _, err := p.EvaluateModelAt("nope", "m", start); err == nil {
		t.Error("unknown target: no error")
	}
	if _, err := p.EvaluateModelAt("gpu0", "nope", start); err == nil {
		t.Error("unknown model: no error")
	}
	model := p.Evaluate(start.Add(time.Minute)).Targets[0].Models[0].Name
	mr, err := p.EvaluateModelAt("gpu0", model, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Windows) != 0 || mr.Budgets[0].Known {
		t.Errorf("before the history: %+v", mr)
	}
	if got := p.Spec(); len(got.SLOs) != 1 || got.SLOs[0].Name != "interactive" {
		t.Errorf("Spec = %+v", got)
	}
}
