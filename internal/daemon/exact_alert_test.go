package daemon

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestExactAlertLabelsAreTheRules is the meeting point of the two alert
// paths in exact mode: the rules path cannot see spans, so its burn-rate
// alert rests on the histograms while the daemon's rests on exact counts,
// and Alertmanager merges the two only if their labels are the same. With
// every span delivered and an objective most requests miss (off the bucket
// edges, so the histograms alone only bracket it), the daemon pages
// from burn rates that are exact in both windows; its alert's label set
// equals the generated rule's (its labels, alertname and the model_name
// its series carry).
func TestExactAlertLabelsAreTheRules(t *testing.T) {
	cfg, err := config.Parse([]byte(`global:
  scrape_interval: 15s
  windows: [1m, 5m]
targets:
  - name: gpu0
    url: http://127.0.0.1:8000/metrics
slos:
  - name: interactive
    objectives: {ttft: 37ms}
    goal: 0.99
    period: 1h
    abandoned: excluded
    alerts:
      - {severity: page, long_window: 5m, short_window: 1m, budget_consumed: 0.02, for: 0s}
otlp:
  enabled: true
`), "exact.yml")
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock := begin
	store := traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, Now: func() time.Time { return clock }})
	simCfg, err := sim.Preset("steady", 11, begin)
	if err != nil {
		t.Fatal(err)
	}
	simCfg.OnDone = func(r sim.Request) {
		if r.Finished() {
			store.Add([]traces.Span{{Target: "gpu0", Model: r.Model, RequestID: fmt.Sprint(r.ID), End: r.Finish,
				TTFT: r.TTFT(), E2E: r.E2E(), Queue: r.QueueTime(), Prefill: r.PrefillTime(), Decode: r.DecodeTime(), Inference: r.InferenceTime(),
				PromptTokens: r.PromptTokens, CompletionTokens: r.OutputTokens}})
		}
	}
	s, err := sim.New(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := PipelineSpec(cfg)
	spec.Traces = store
	p := pipeline.New(spec)
	var fired map[string]string
	exact := false
	for at := begin.Add(15 * time.Second); !at.After(begin.Add(7*time.Minute)) && fired == nil; at = at.Add(15 * time.Second) {
		clock = at
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		rep := p.Evaluate(at)
		for _, a := range rep.Firing() {
			fired = a.Labels
			b := rep.Targets[0].Models[0].Burns[0]
			exact = b.Long.IsExact() && b.Short.IsExact()
		}
	}
	if fired == nil || !exact {
		t.Fatalf("fired %v, on exact burn rates %v: the test shows nothing", fired, exact)
	}
	rf, err := rules.DefaultOptions().Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == rules.AlertBurnRate {
				want = maps.Clone(r.Labels)
				want["alertname"], want["model_name"] = r.Alert, fired["model_name"]
			}
		}
	}
	if !maps.Equal(fired, want) {
		t.Errorf("the daemon's exact-mode alert has labels %v, the rules' alert %v", fired, want)
	}
	if fired["long_window"] != model.Duration(5*time.Minute).String() || fired["model_name"] == "" {
		t.Errorf("labels %v", fired)
	}
}
