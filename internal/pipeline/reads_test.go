package pipeline

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// defaultLikeSpec is the spec the default configuration gives one target
// and one SLO: windows 1m, 5m, 30m and 1h, a 30-day period and the three
// burn-rate alerts of the default policy (1h/5m, 6h/30m, 3d/6h).
func defaultLikeSpec(t testing.TB) Spec {
	spec := testSpec(t)
	s := interactive
	s.Period = 30 * 24 * time.Hour
	spec.SLOs = []slo.SLO{s}
	spec.Windows = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}
	spec.Alerts = []BurnAlert{
		{SLO: s.Name, Severity: "page", Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4},
		{SLO: s.Name, Severity: "page", Long: 6 * time.Hour, Short: 30 * time.Minute, Factor: 6},
		{SLO: s.Name, Severity: "ticket", Long: 72 * time.Hour, Short: 6 * time.Hour, Factor: 1},
	}
	spec.Retention = history.NewRetention(time.Hour, s.Period)
	return spec
}

// TestWindowReadsPerEvaluation counts the history windows one scrape and
// one evaluation read per model under the default windows and alerts.
// TestWindowReadsPerEvaluation counts the history windows one scrape and
// one evaluation read per model under the default windows and alerts: none
// at ingestion (the ledger and the good-request totals are fed the
// intervals the append closed), and one per distinct window at evaluation:
// 1m, 5m, 30m, 1h, the budget's 30d, 6h and 3d (the alerts' 1h, 5m, 30m
// and 6h are shared). With a warm-up the SLOs of the four regular windows
// and all the budget's and alerts' windows leave it out, which makes seven
// more windows than the four plain ones. (Before the one-pass evaluation:
// 2 and 11 per model, 3 and 15 with a warm-up.)
func TestWindowReadsPerEvaluation(t *testing.T) {
	for _, tc := range []struct {
		warmup           time.Duration
		ingest, evaluate int64
	}{
		{0, 0, 7},
		{time.Minute, 0, 11},
	} {
		spec := defaultLikeSpec(t)
		spec.Targets[0].Warmup = tc.warmup
		p := New(spec)
		s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
		at := start
		for ; !at.After(start.Add(3 * time.Minute)); at = at.Add(15 * time.Second) {
			scrapeInto(t, p, s, at)
		}
		before, _ := p.WindowReads("gpu0")
		scrapeInto(t, p, s, at)
		afterIngest, _ := p.WindowReads("gpu0")
		rep := p.Evaluate(at)
		afterEval, _ := p.WindowReads("gpu0")
		if n := len(rep.Targets[0].Models); n != 1 {
			t.Fatalf("%d models, want 1", n)
		}
		if got := afterIngest - before; got != tc.ingest {
			t.Errorf("warm-up %v: a scrape read %d history windows, want %d", tc.warmup, got, tc.ingest)
		}
		if got := afterEval - afterIngest; got != tc.evaluate {
			t.Errorf("warm-up %v: an evaluation read %d history windows, want %d", tc.warmup, got, tc.evaluate)
		}
	}
}

// intervalCount counts the intervals an observer is told of.
type intervalCount struct{ n int }

func (c *intervalCount) ObserveIntervals(_ TargetSpec, _ []slo.SLO, intervals []ClosedInterval) {
	c.n += len(intervals)
}

// TestIngestJudgesEachIntervalOnce: under the default windows and alerts,
// with a warm-up, every scrape interval an ingest closes is judged once by
// the target's store, the judgement feeding its ledger, its totals and the
// observer alike, and an evaluation judges none (package store's
// TestEachIntervalJudgedOnce checks the judgements themselves).
func TestIngestJudgesEachIntervalOnce(t *testing.T) {
	spec := defaultLikeSpec(t)
	spec.Targets[0].Warmup = time.Minute
	observed := &intervalCount{}
	spec.Intervals = observed
	p := New(spec)
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
	scrapes := 0
	for at := start; !at.After(start.Add(5 * time.Minute)); at = at.Add(15 * time.Second) {
		scrapeInto(t, p, s, at)
		scrapes++
		p.Evaluate(at)
	}
	judged := p.targets["gpu0"].store.Judgements()
	if judged != int64(observed.n) || observed.n != scrapes-1 {
		t.Fatalf("%d scrapes of one model closed %d intervals, judged %d times", scrapes, observed.n, judged)
	}
}
