package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestQueueEstimate checks where the estimate of the requests past their
// first token in flight at a scrape comes from: the running gauge at that
// scrape (waiting left out), and the decode stage's mean occupancy only
// without the gauge.
func TestQueueEstimate(t *testing.T) {
	decode := slo.Histogram{Edges: []float64{1, 10, math.Inf(1)}, Counts: []float64{2, 4, 4}, Sum: 30}
	w := slo.Window{
		Start: start, End: start.Add(15 * time.Second),
		Latency: map[slo.Metric]slo.Histogram{slo.Decode: decode},
		Running: slo.Gauge{Known: true, AtStart: 7, AtEnd: 12},
		Waiting: slo.Gauge{Known: true, AtStart: 40, AtEnd: 50},
	}
	if got := queueEstimate(w, false); got != 12 {
		t.Errorf("end: %v, want running at the end, 12", got)
	}
	if got := queueEstimate(w, true); got != 7 {
		t.Errorf("start: %v, want running at the start, 7", got)
	}
	w.Running = slo.Gauge{}
	if got := queueEstimate(w, false); got != 2 {
		t.Errorf("no running gauge: %v, want the decode time over the interval, 30/15 = 2", got)
	}
	w.Latency = nil
	if got := queueEstimate(w, false); got != 0 {
		t.Errorf("nothing known: %v, want 0 (the bounds then decide)", got)
	}
}
