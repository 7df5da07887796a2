package traces

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BenchmarkEvaluateWindow measures one exact evaluation of a window holding
// 100,000 requests (an hour at 28 requests/s) whose 240 scrape intervals
// of 15 s the ledger has read (so they are sealed, as in the daemon):
// seven quantile selections per population, one SLO with three
// objectives, four quantiles, two adapters.
func BenchmarkEvaluateWindow(b *testing.B) { benchmarkEvaluateWindow(b, []string{"", "lora"}) }

// BenchmarkEvaluateWindowBaseModel is BenchmarkEvaluateWindow without LoRA
// adapters: every request is the base model's.
func BenchmarkEvaluateWindowBaseModel(b *testing.B) { benchmarkEvaluateWindow(b, []string{""}) }

// BenchmarkEvaluateWindowDistinct is BenchmarkEvaluateWindow with every
// latency distinct (the others' take 97 values, so their quantiles fall on
// runs of ties).
func BenchmarkEvaluateWindowDistinct(b *testing.B) {
	benchmarkEvaluateWindowOf(b, []string{"", "lora"}, func(i int) float64 { return 0.5 + float64((i*7919)%100003)/50000 })
}

// benchSLO is the benchmarks' SLO of three objectives.
var benchSLO = slo.SLO{Name: "s", Goal: 0.99, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}, {Metric: slo.E2E, Threshold: 2}}}

// benchStore holds n requests, one every 36 ms from t0, over adapters in
// turn, with every scrape interval of 15 s of the hour sealed.
func benchStore(b *testing.B, n int, adapters []string, e2e func(i int) float64) *Store {
	b.Helper()
	s := NewStore(Limits{Retain: 2 * time.Hour, Now: at(time.Hour)})
	spans := make([]Span, n)
	for i := range spans {
		spans[i] = span(fmt.Sprint(i), time.Duration(i+1)*36*time.Millisecond, e2e(i))
		spans[i].Adapter = adapters[i%len(adapters)]
	}
	s.Add(spans)
	const step = 15 * time.Second
	for from := t0; from.Before(t0.Add(time.Hour)); from = from.Add(step) {
		k := len(s.Select("gpu0", "m", false, from, from.Add(step)).All)
		if _, ok := s.Interval("gpu0", "m", false, from, from.Add(step), k, []slo.SLO{benchSLO}); !ok {
			b.Fatalf("interval at %v not read", from)
		}
	}
	return s
}

// tied is the benchmarks' e2e latency of request i: 97 values in turn.
func tied(i int) float64 { return 0.5 + float64(i%97)/50 }

func benchmarkEvaluateWindow(b *testing.B, adapters []string) {
	benchmarkEvaluateWindowOf(b, adapters, tied)
}

func benchmarkEvaluateWindowOf(b *testing.B, adapters []string, e2e func(i int) float64) {
	const n = 100000
	s := benchStore(b, n, adapters, e2e)
	w := slo.Window{Start: t0, End: t0.Add(time.Hour), Nominal: time.Hour, RequestSuccess: n, HasRequestSuccess: true}
	for b.Loop() {
		res := s.EvaluateWindow("gpu0", "m", false, w, slo.WindowReport{}, []slo.SLO{benchSLO}, []float64{0.5, 0.9, 0.95, 0.99})
		if !res.Covered {
			b.Fatal("not covered")
		}
	}
}

// BenchmarkSealedBytes reports the heap a store holds per request once
// every scrape interval of the hour is sealed (100,000 requests, two
// adapters), beside otlp's BenchmarkRetainedBytes for the records as
// rows.
func BenchmarkSealedBytes(b *testing.B) {
	const n = 100000
	var perRequest float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := benchStore(b, n, []string{"", "lora"}, tied)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perRequest = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perRequest, "B/request")
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
