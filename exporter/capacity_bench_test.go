package exporter

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// BenchmarkCapacityCollect renders the capacity series of a fleet of
// targets (one model, two SLOs, bounded answers) and their replica signal,
// both computed once, as the evaluation does: the collector's cost per
// GET /metrics.
func BenchmarkCapacityCollect(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			rep := capacityReport(capacityFleet(n))
			reg := prometheus.NewRegistry()
			reg.MustRegister(NewCollector(func() *pipeline.Report { return rep }))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
		// The replica signal's share of the collector: its series alone.
		b.Run(fmt.Sprintf("targets=%d/replicas-only", n), func(b *testing.B) {
			needs := capacityReport(capacityFleet(n)).Replicas
			desc := replicasDesc()
			ch := make(chan prometheus.Metric, 16)
			go func() {
				for range ch {
				}
			}()
			defer close(ch)
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				renderReplicas(ch, desc, needs)
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// capacityFleet is n targets serving one model under two SLOs, each with a
// bounded capacity answer.
func capacityFleet(n int) []capacity.Report {
	var reps []capacity.Report
	r := capacity.Range{Estimate: 6, Lower: 5.5, Upper: 6.5}
	e := capacity.Estimate{Kind: capacity.Bounded, Method: capacity.Gumbel, Since: time.Unix(1_700_000_000, 0), Load: 3, Trend: 1e-4,
		Requests: r, Tokens: r, Concurrency: r, Headroom: capacity.Range{Estimate: 0.5, Lower: 0.45, Upper: 0.54}}
	for i := range n {
		for _, s := range []string{"interactive", "batch"} {
			reps = append(reps, capacity.Report{Target: fmt.Sprintf("gpu%04d", i), Model: "m", SLO: s, Labels: map[string]string{"zone": "a"}, Estimate: e})
		}
	}
	return reps
}

// cpuTime is the process's user + system time so far: on a shared machine
// the CPU per render says more than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
