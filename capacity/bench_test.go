package capacity

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// BenchmarkFit is one estimate over a day of two-minute windows (720, the
// default History), bootstrap included: the cost of a refit, which is
// needed once per closed window.
func BenchmarkFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	loads := append(ramp(1, 7, 360), ramp(7, 1, 360)...)
	ws := day(loads, 5, rng)
	cfg := DefaultConfig(0.95)
	now := ws[len(ws)-1].End
	b.ReportAllocs()
	for b.Loop() {
		Fit(ws, cfg, now, "")
	}
	b.ReportMetric(float64(unsafe.Sizeof(Window{})), "B/window")
}
