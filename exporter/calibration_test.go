package exporter

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
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

// TestCalibrationTotalsAreCounters: the calibration's running totals render
// as counters per window, with the report's values.
func TestCalibrationTotalsAreCounters(t *testing.T) {
	rep := simReport(t, "m")
	m := &rep.Targets[0].Models[0]
	m.Calibration = []traces.CalibrationTotal{{Nominal: time.Hour, Windows: 40, Held: 39, AbsErrorSum: 0.25, Errors: 80}}
	mfs := gather(t, rep)
	for name, want := range map[string]float64{
		"vllm_slo_calibration_windows_total":            40,
		"vllm_slo_calibration_bounds_held_total":        39,
		"vllm_slo_calibration_attainment_abs_error_sum": 0.25,
		"vllm_slo_calibration_attainment_errors_total":  80,
	} {
		mf := mfs[name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: %v, want one series", name, mf)
			continue
		}
		s := mf.GetMetric()[0]
		if s.GetCounter() == nil || s.GetCounter().GetValue() != want || label(s, "window") != "1h" {
			t.Errorf("%s = %v, want a counter at %v for window 1h", name, s, want)
		}
	}
}
