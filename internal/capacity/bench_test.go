package capacity

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkFit is one estimate over a day of two-minute windows (720, the
// default History), bootstrap included: the cost of a refit, which is
// needed once per closed window, with the Gumbel shape off, on without
// its floor of misses (one curve per replicate) and at its default (two).
func BenchmarkFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	loads := append(ramp(1, 7, 360), ramp(7, 1, 360)...)
	ws := day(loads, 5, rng)
	now := ws[len(ws)-1].End
	def := DefaultConfig(0.95)
	for _, c := range []struct {
		from  float64
		floor bool
	}{{0, false}, {def.ShapeFrom, false}, {def.ShapeFrom, def.ShapeFloor}} {
		b.Run(fmt.Sprintf("shape_from=%g,floor=%v", c.from, c.floor), func(b *testing.B) {
			cfg := DefaultConfig(0.95)
			cfg.ShapeFrom, cfg.ShapeFloor = c.from, c.floor
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				Fit(ws, cfg, now, "")
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(unsafe.Sizeof(Window{})), "B/window")
		})
	}
}

// cpuTime is the process's user + system time so far: under a shared
// machine's load, CPU per fit says more than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkModelNeeds is the replica signal of a fleet of 100 targets
// serving one model under two SLOs, bounded answers: what the capacity
// stage adds to each evaluation (ModelNeeds, once per evaluation).
func BenchmarkModelNeeds(b *testing.B) {
	r := Range{Estimate: 6, Lower: 5.5, Upper: 6.5}
	e := Estimate{Kind: Bounded, Goal: 0.99, Load: 3, Trend: 1e-4, Requests: r}
	var reps []Report
	for i := range 100 {
		for _, s := range []string{"interactive", "batch"} {
			reps = append(reps, Report{Target: fmt.Sprintf("gpu%04d", i), Model: "m", SLO: s, Estimate: e})
		}
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		ModelNeeds(reps, nil, DefaultReplicaPolicy())
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}
