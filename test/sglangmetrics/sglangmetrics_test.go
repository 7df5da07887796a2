package sglangmetrics_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/sglangmetrics"
)

// TestFromVLLM renders the simulator as SGLang and reads it with
// the sglang profile: every family SGLang has must hold what the vllm
// profile reads from the vLLM exposition of the same instant, and the
// families SGLang lacks must be the only ones missing.
func TestFromVLLM(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	cfg := sim.DemoConfig(5, start)
	cfg.Models[0].Engines = 1
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := start.Add(3 * time.Minute)
	s.AdvanceTo(at)
	vbody, vct := s.ExpositionStyle(sim.Style{})
	sbody, sct, err := sglangmetrics.FromVLLM(vbody)
	if err != nil {
		t.Fatal(err)
	}
	v, err := scrape.Parse(vbody, vct, scrape.VLLM, at)
	if err != nil {
		t.Fatal(err)
	}
	g, err := scrape.Parse(sbody, sct, scrape.SGLang, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Missing) != 0 {
		t.Errorf("sglang profile misses %v", g.Missing)
	}
	for name, want := range v.Models {
		got := g.Models[name]
		if got == nil {
			t.Fatalf("model %q missing", name)
		}
		if want.Histograms[scrape.E2E].Total() == 0 {
			t.Fatalf("model %q finished no request: nothing to compare", name)
		}
		for f, h := range got.Histograms {
			w := want.Histograms[f]
			if !slices.Equal(h.Edges, w.Edges) || !slices.Equal(h.Counts, w.Counts) || h.Sum != w.Sum {
				t.Errorf("model %q %s: SGLang %+v, vLLM %+v", name, f, h, w)
			}
		}
		if len(got.Histograms) != 6 {
			t.Errorf("model %q: %d histograms, want SGLang's 6", name, len(got.Histograms))
		}
		if !maps.Equal(got.Counters, want.Counters) || !maps.Equal(got.Gauges, want.Gauges) {
			t.Errorf("model %q: SGLang counters %v gauges %v, vLLM %v %v", name, got.Counters, got.Gauges, want.Counters, want.Gauges)
		}
	}
	two := sim.DemoConfig(5, start)
	two.Models[0].Engines = 2
	s2, err := sim.New(two)
	if err != nil {
		t.Fatal(err)
	}
	body2, _ := s2.ExpositionStyle(sim.Style{})
	if _, _, err := sglangmetrics.FromVLLM(body2); err == nil {
		t.Error("no error for a model with two engines")
	}
}
