package console

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestSeriesTimesInExactMode: in exact mode, where a window the spans
// covered ends a trace delay before the evaluation, the series' times are
// the scrapes the evaluations read, strictly increasing on a grid finer
// than the scrape interval, and the newest budget point is the live one.
func TestSeriesTimesInExactMode(t *testing.T) {
	cfg := sim.DemoConfig(3, start)
	cfg.Models[0].Name = "m"
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	spec := testSpec()
	spec.Traces = traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, MaxModels: 8, MaxAdapters: 8,
		Now: func() time.Time { return at }})
	spec.TraceDelay = 10 * time.Second
	p := pipeline.New(spec)
	sent := map[int64]bool{}
	var rep *pipeline.Report
	for i := 1; i <= 40; i++ {
		at = start.Add(time.Duration(i) * 15 * time.Second)
		s.AdvanceTo(at)
		var spans []traces.Span
		for _, r := range s.Truth() {
			if r.Finished() && !sent[r.ID] {
				sent[r.ID] = true
				spans = append(spans, traces.Span{Target: "gpu0", Model: r.Model, RequestID: fmt.Sprint(r.ID), End: r.Finish,
					TTFT: r.TTFT(), E2E: r.E2E(), Queue: r.QueueTime(), Prefill: r.PrefillTime(), Decode: r.DecodeTime(),
					Inference: r.InferenceTime(), PromptTokens: r.PromptTokens, CompletionTokens: r.OutputTokens})
			}
		}
		spec.Traces.Add(spans)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		rep = p.Evaluate(at)
	}
	covered := false
	for _, tr := range rep.Targets[0].Models[0].Traces {
		covered = covered || tr.Covered
	}
	if !covered {
		t.Fatal("no window was covered by the spans: the test does not test exact mode")
	}
	c := New(Options{Report: func() *pipeline.Report { return rep }, History: p})
	got := series(t, c, "/api/series?target=gpu0&model=m&slo=interactive&range=10m&window=1m&points=600")
	for i, x := range got.Times {
		if i > 0 && !(x > got.Times[i-1]) {
			t.Fatalf("times go backwards at %d: %v after %v", i, x, got.Times[i-1])
		}
		if math.Mod(x-float64(start.Unix()), 15) != 0 {
			t.Errorf("time %v is not a scrape", x)
		}
	}
	last := len(got.Times) - 1
	if got.Times[last] != float64(at.Unix()) {
		t.Errorf("the newest point is at %v, the newest scrape at %v", got.Times[last], at.Unix())
	}
	live := rep.Targets[0].Models[0].Budgets[0].Remaining
	if float64(got.Budget.Estimate[last]) != live.Estimate {
		t.Errorf("the newest budget point is %v, the live budget %v", got.Budget.Estimate[last], live.Estimate)
	}
}
