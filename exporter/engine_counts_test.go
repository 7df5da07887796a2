package exporter

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestRejectedRequestsSeries serves the admission preset through the
// pipeline and renders it: vllm_slo_rejected_requests{window} equals the
// simulator's requests turned away in that window, and the demo server
// without admission control has no such series.
func TestRejectedRequestsSeries(t *testing.T) {
	for _, preset := range []string{"admission", "steady"} {
		cfg, err := sim.Preset(preset, 3, start)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DiscardTokenTimes = true
		s, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := pipeline.New(pipeline.Spec{
			Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://x/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
			SLOs:      []slo.SLO{{Name: "interactive", Goal: 0.99, Period: time.Hour, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}}},
			Windows:   []time.Duration{time.Minute},
			Quantiles: []float64{0.5},
			Retention: history.NewRetention(time.Minute, time.Hour),
		})
		var rep *pipeline.Report
		at := start
		for range 40 { // 10 minutes: the overload starts at 5
			at = at.Add(15 * time.Second)
			s.AdvanceTo(at)
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
		mf := gather(t, rep)["vllm_slo_rejected_requests"]
		if preset == "steady" {
			if mf != nil {
				t.Errorf("steady: vllm_slo_rejected_requests on a server without admission control")
			}
			continue
		}
		w := rep.Targets[0].Models[0].Windows[0].Window
		want := float64(len(simtruth.RejectedIn(s.Truth(), w.Start, w.End)))
		if mf == nil || len(mf.GetMetric()) != 1 || value(mf.GetMetric()[0]) != want || want == 0 {
			t.Errorf("admission: vllm_slo_rejected_requests %v, truth %v rejected in the window", mf, want)
		}
	}
}
