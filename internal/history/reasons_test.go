package history

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestWaitingByReasonAndPreemptions: the newest servers' waiting-by-reason
// gauges give the window their time-weighted means and maxima like the
// other gauges and stay out of the in-flight count at a restart (they split
// the waiting requests, which it already counts); the per-request
// preemption histogram reaches the window; a server without them leaves
// them unknown. A state file does not keep the reason gauges (its format
// is unchanged): a restored window reads them as unknown, the rest alike.
func TestWaitingByReasonAndPreemptions(t *testing.T) {
	pre := []float64{1, 2, 3, 4, 5, 10, 20, inf}
	// capacity, deferred and the preemption histogram per scrape; waiting is their sum.
	type scrapeAt struct {
		sec                float64
		capacity, deferred float64
		preCounts          []float64
		preSum             float64
		req                float64
	}
	scrapes := []scrapeAt{
		{0, 2, 1, []float64{0, 0, 0, 0, 0, 0, 0, 0}, 0, 0},
		{15, 4, 0, []float64{3, 4, 4, 4, 4, 4, 4, 4}, 3, 10},
		{30, 0, 3, []float64{5, 6, 7, 7, 7, 7, 7, 7}, 8, 20},
		// a restart: every cumulative value counts from zero again
		{45, 1, 1, []float64{1, 1, 1, 1, 1, 1, 1, 1}, 1, 1},
	}
	h := New(keepAll)
	for _, sc := range scrapes {
		ms := sample{gen: sc.req, prompt: sc.req, req: sc.req, running: 1, waiting: sc.capacity + sc.deferred}.model()
		ms.Gauges[scrape.WaitingCapacity], ms.Gauges[scrape.WaitingDeferred] = sc.capacity, sc.deferred
		ms.Histograms[scrape.PreemptionsHist] = hist(pre, sc.preSum, sc.preCounts...)
		if err := h.Append(&scrape.Snapshot{Time: at(sc.sec), Models: map[string]*scrape.ModelSample{"m": ms}}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, h *History) {
		t.Helper()
		w, ok := h.Window("m", at(45), 45*time.Second, Options{})
		if !ok {
			t.Fatal("no window")
		}
		// Held values: capacity 2, 4, 0 for 15 s each; deferred 1, 0, 3.
		wantCap := slo.Gauge{Known: true, AtStart: 2, AtEnd: 1, Mean: 2, Max: 4}
		wantDef := slo.Gauge{Known: true, AtStart: 1, AtEnd: 1, Mean: 4.0 / 3, Max: 3}
		if w.WaitingCapacity != wantCap || w.WaitingDeferred != wantDef {
			t.Errorf("capacity %+v deferred %+v, want %+v and %+v", w.WaitingCapacity, w.WaitingDeferred, wantCap, wantDef)
		}
		// In flight at the restart: the last scrape before it, running 1 + waiting 3.
		if w.InFlightAtRestarts != 4 {
			t.Errorf("in flight at restarts %v, want 4 (running + waiting, not the reasons again)", w.InFlightAtRestarts)
		}
		want := hist(pre, 9, 6, 7, 8, 8, 8, 8, 8, 8) // 0..30 s, then the new process's first scrape
		if got := w.PreemptionsPerRequest; !slicesEqual(got.Counts, want.Counts) || got.Sum != want.Sum {
			t.Errorf("preemptions per request %+v, want %+v", got, want)
		}
	}
	check(t, h)
	data, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := New(keepAll)
	if err := restored.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	w, _ := restored.Window("m", at(45), 45*time.Second, Options{})
	if w.WaitingCapacity.Known || w.WaitingDeferred.Known || w.InFlightAtRestarts != 4 || w.PreemptionsPerRequest.Sum != 9 {
		t.Errorf("restored: capacity %+v deferred %+v (want unknown), in flight at restarts %v, preemption sum %v", w.WaitingCapacity, w.WaitingDeferred, w.InFlightAtRestarts, w.PreemptionsPerRequest.Sum)
	}

	// A server without them: unknown, not zero.
	old := New(keepAll)
	for _, sec := range []float64{0, 15} {
		if err := old.Append(snap(at(sec), "m", sample{running: 1, waiting: 2})); err != nil {
			t.Fatal(err)
		}
	}
	w, _ = old.Window("m", at(15), 15*time.Second, Options{})
	if w.WaitingCapacity.Known || w.WaitingDeferred.Known || w.PreemptionsPerRequest.Valid() {
		t.Errorf("a server without the families: capacity %+v deferred %+v preemptions %+v", w.WaitingCapacity, w.WaitingDeferred, w.PreemptionsPerRequest)
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}
