package exporter

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/traces"
)

// TestInconsistentSpansShowAsBoundsNotHeld: a window whose spans contradict
// the histograms is not exact (traces.Result.Inconsistent, not Covered), and
// its vllm_slo_calibration_bounds_held reads 0, so a dashboard sees it; its
// source stays the histograms.
func TestInconsistentSpansShowAsBoundsNotHeld(t *testing.T) {
	rep := simReport(t, "m")
	m := &rep.Targets[0].Models[0]
	m.Traces = []traces.Result{{Nominal: time.Minute, Inconsistent: true, Finished: 10, HasFinished: true, Spans: 10}}
	mfs := gather(t, rep)
	held := mfs["vllm_slo_calibration_bounds_held"]
	if held == nil || len(held.GetMetric()) != 1 || value(held.GetMetric()[0]) != 0 {
		t.Fatalf("bounds_held = %v, want one series at 0", held)
	}
	for _, s := range mfs["vllm_slo_window_source"].GetMetric() {
		if label(s, "source") != SourceHistograms {
			t.Errorf("inconsistent window's source %q", label(s, "source"))
		}
	}
}
