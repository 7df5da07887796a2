package slo

import "testing"

// TestFinishersCountedByE2EOnly: the finished requests are e2e's count
// alone. A window without e2e, whatever else it holds (prefill and TTFT
// scraped before e2e exists, as llm-d-inference-sim exposes them; decode,
// TPOT and the finished-request counter), has an unknown count, no lag
// and no SLO judged; a window its caller marked unknown is the same with
// e2e present. The request rate still falls back to the counter.
func TestFinishersCountedByE2EOnly(t *testing.T) {
	w := busyWindow()
	w.Latency[Decode] = hist(120, []float64{1, 5, 10, inf}, 30, 90, 95, 95)
	if fin := FinishersOf(w); !fin.Known || fin.N != 95 || fin.Lag.Total() != 95 || fin.LagUpperOnly {
		t.Errorf("with e2e and decode: %+v, want 95 known, decode as the lag", fin)
	}
	noE2E := busyWindow()
	delete(noE2E.Latency, E2E)
	noE2E.Latency[Prefill] = hist(3, []float64{0.1, 1, inf}, 1, 1, 1)
	noE2E.Latency[Decode] = hist(120, []float64{1, 5, 10, inf}, 30, 90, 95, 95)
	marked := busyWindow()
	marked.FinishCountUnknown = true
	for name, w := range map[string]Window{"no e2e": noE2E, "marked unknown": marked} {
		if fin := FinishersOf(w); fin.Known || fin.N != 0 || fin.Lag.Valid() || fin.LagUpperOnly {
			t.Errorf("%s: %+v, want an unknown count and lag", name, fin)
		}
		rep := EvaluateWindow(w, []SLO{interactive}, Options{})
		if len(rep.SLOs) != 0 {
			t.Errorf("%s: SLOs judged over finishers nothing counts: %+v", name, rep.SLOs)
		}
		if !rep.HasRequestRate || rep.RequestsPerSecond != 95.0/60 {
			t.Errorf("%s: request rate %v (present %v), want the counter's 95/60", name, rep.RequestsPerSecond, rep.HasRequestRate)
		}
	}
}
