package daemon

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func TestMissedEvaluations(t *testing.T) {
	for _, tc := range []struct {
		elapsed, interval time.Duration
		want              int
	}{
		{time.Second, 15 * time.Second, 0},
		{15 * time.Second, 15 * time.Second, 0},  // the next one runs on time
		{29 * time.Second, 15 * time.Second, 0},  // the next one runs late
		{30 * time.Second, 15 * time.Second, 1},  // one slot passed unevaluated
		{100 * time.Second, 15 * time.Second, 5}, // 6 slots passed, the sixth runs late
		{100 * time.Second, 0, 0},                // no schedule, nothing missed
	} {
		if got := missedEvaluations(tc.elapsed, tc.interval); got != tc.want {
			t.Errorf("elapsed %v at interval %v: %d missed, want %d", tc.elapsed, tc.interval, got, tc.want)
		}
	}
}

// TestEvaluationDurationObserved: every evaluation is observed in the
// daemon's own registry, and none is counted as missed.
func TestEvaluationDurationObserved(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(testConfig([]string{"a http://127.0.0.1:1/metrics"}, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: file, Serve: func(*http.Server) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	d.evaluate()
	d.evaluate()
	mfs, err := d.self.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Metric{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0]
	}
	if h := got["vllm_slo_exporter_evaluation_duration_seconds"]; h == nil || h.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("evaluation duration: %v, want 2 observations", h)
	}
	if c := got["vllm_slo_exporter_evaluations_missed_total"]; c == nil || c.GetCounter().GetValue() != 0 {
		t.Errorf("evaluations missed: %v, want 0", c)
	}
}
