package traces

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BenchmarkEvaluateWindow measures one exact evaluation of a window holding
// 100,000 requests (an hour at 28 requests/s): select, seven sorts, one SLO
// with three objectives, four quantiles, two adapters.
func BenchmarkEvaluateWindow(b *testing.B) {
	const n = 100000
	s := NewStore(Limits{Retain: 2 * time.Hour})
	spans := make([]Span, n)
	for i := range spans {
		spans[i] = span(fmt.Sprint(i), time.Duration(i+1)*36*time.Millisecond, 0.5+float64(i%97)/50)
		spans[i].Adapter = []string{"", "lora"}[i%2]
	}
	s.Add(spans)
	w := slo.Window{Start: t0, End: t0.Add(time.Hour), Nominal: time.Hour, RequestSuccess: n, HasRequestSuccess: true}
	s3 := slo.SLO{Name: "s", Goal: 0.99, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}, {Metric: slo.E2E, Threshold: 2}}}
	for b.Loop() {
		sel := s.Select("gpu0", "m", false, w.Start, w.End)
		res := Evaluate(sel, w, slo.WindowReport{}, []slo.SLO{s3}, []float64{0.5, 0.9, 0.95, 0.99})
		if !res.Covered {
			b.Fatal("not covered")
		}
	}
}
