package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestExactIntervalsSurviveRestart feeds two exporters the same scrapes of
// the cancel15 preset and the same spans, sent in batches 5 s after the
// requests finish (so intervals wait for them across the restart); one is
// restarted from its state file every few minutes. Every report of the
// restarted one equals the one of the exporter that never stopped: the
// exact intervals' sums and the intervals still waiting for spans are in
// the state file, and the budget, the burn rates and the good-request
// totals rest on them (checked to be exact somewhere, so the test fails if
// nothing was exact).
func TestExactIntervalsSurviveRestart(t *testing.T) {
	cfg, err := sim.Preset("cancel15", 11, start)
	if err != nil {
		t.Fatal(err)
	}
	clock := start
	// One store per exporter, fed the same spans: reading a scrape
	// interval's spans seals them in the store that exporter reads.
	newStore := func() *traces.Store {
		return traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, MaxModels: 10, MaxAdapters: 10,
			Now: func() time.Time { return clock }})
	}
	stores := [2]*traces.Store{newStore(), newStore()}
	var batch []traces.Span
	cfg.OnDone = func(r sim.Request) {
		if r.Finished() {
			batch = append(batch, spanOf(r))
		}
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	excl := interactive
	excl.Name, excl.Abandoned, excl.Period = "excl", slo.AbandonedExcluded, 10*time.Minute
	spec := testSpec(t)
	spec.SLOs, spec.TraceDelay, spec.TraceLateness = []slo.SLO{interactive, excl}, 10*time.Second, 30*time.Second
	spec.Alerts = append(spec.Alerts, BurnAlert{SLO: "excl", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 5, For: time.Minute})
	neverSpec, restartedSpec := spec, spec
	neverSpec.Traces, restartedSpec.Traces = stores[0], stores[1]
	never, restarted := New(neverSpec), New(restartedSpec)
	exact := 0
	for at := start.Add(scrapeStep); !at.After(start.Add(20 * time.Minute)); at = at.Add(scrapeStep) {
		clock = at
		s.AdvanceTo(at)
		var late []traces.Span
		var sent []traces.Span
		for _, sp := range batch {
			if sp.End.After(at.Add(-5 * time.Second)) {
				late = append(late, sp)
			} else {
				sent = append(sent, sp)
			}
		}
		stores[0].Add(sent)
		stores[1].Add(sent)
		batch = late
		scrapeInto(t, never, s, at)
		scrapeInto(t, restarted, s, at)
		if at.Sub(start)%(4*time.Minute+45*time.Second) == 0 {
			data, err := restarted.MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			restarted = New(restartedSpec)
			if _, err := restarted.UnmarshalState(data); err != nil {
				t.Fatal(err)
			}
		}
		a, b := never.Evaluate(at).Targets[0].Models[0], restarted.Evaluate(at).Targets[0].Models[0]
		// The calibration totals are counters since the start: a restart resets them.
		a.Calibration, b.Calibration = nil, nil
		if got, want := fmt.Sprintf("%+v", b), fmt.Sprintf("%+v", a); got != want {
			t.Fatalf("at %v the restored exporter reports\n%s\nwhere the one that never stopped reports\n%s", at.Sub(start), got, want)
		}
		for _, bu := range a.Budgets {
			if bu.SLO == "excl" && bu.Known && bu.Remaining.IsExact() {
				exact++
			}
		}
	}
	if exact == 0 {
		t.Fatal("no exact budget: the test shows nothing")
	}
	t.Logf("%d exact budgets, equal after every restart", exact)
}
