package traces

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BenchmarkEvaluateWindow measures one exact evaluation of a window holding
// 100,000 requests (an hour at 28 requests/s): select, seven quantile
// selections per population, one SLO with three objectives, four
// quantiles, two adapters.
func BenchmarkEvaluateWindow(b *testing.B) { benchmarkEvaluateWindow(b, []string{"", "lora"}) }

// BenchmarkEvaluateWindowBaseModel is BenchmarkEvaluateWindow without LoRA
// adapters: every request is the base model's.
func BenchmarkEvaluateWindowBaseModel(b *testing.B) { benchmarkEvaluateWindow(b, []string{""}) }

func benchmarkEvaluateWindow(b *testing.B, adapters []string) {
	const n = 100000
	s := NewStore(Limits{Retain: 2 * time.Hour, Now: at(time.Hour)})
	spans := make([]Span, n)
	for i := range spans {
		spans[i] = span(fmt.Sprint(i), time.Duration(i+1)*36*time.Millisecond, 0.5+float64(i%97)/50)
		spans[i].Adapter = adapters[i%len(adapters)]
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

// BenchmarkOutOfOrder measures 3,000 spans arriving newest first, in six
// batches of 500, into a series that already holds 400,000 records (an hour
// at 111 requests/s), ending in its middle, and a Select of the series (of
// its newest second, so that the figure is the cost of placing the spans,
// not of evaluating them). The spans are dated from the real clock, so that the benchmark runs
// unchanged against stores with or without an injected one.
func BenchmarkOutOfOrder(b *testing.B) {
	const kept, late, batch = 400000, 3000, 500
	now := time.Now()
	base := make([]Span, kept)
	for i := range base {
		base[i] = span(fmt.Sprint(i), 0, 1)
		base[i].End = now.Add(-time.Hour + time.Duration(i)*9*time.Millisecond)
	}
	reverse := make([]Span, late)
	for i := range reverse {
		reverse[i] = span(fmt.Sprint("late-", i), 0, 1)
		reverse[i].End = now.Add(-30*time.Minute - time.Duration(i)*time.Millisecond)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := NewStore(Limits{Retain: 2 * time.Hour})
		s.Add(base)
		b.StartTimer()
		for j := 0; j < late; j += batch {
			s.Add(reverse[j : j+batch])
		}
		s.Select("gpu0", "m", false, now.Add(-time.Second), now)
		b.StopTimer()
		if n, _ := s.Retained(); n != kept+late {
			b.Fatalf("%d records kept", n)
		}
		b.StartTimer()
	}
}
