package history

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestWindowRequestAborted checks the window increase of the engine's
// aborted-request counter: like the finished-request counter's, reset-aware
// across restarts, counted from zero when the series appears mid-run (vLLM
// V0 and SGLang create it at the first abort), and absent when no scrape of
// the window has it.
func TestWindowRequestAborted(t *testing.T) {
	absent := math.NaN()
	cases := []struct {
		name    string
		aborted []float64 // at 0, 15, 30, 45 s; NaN: no series
		req     []float64 // the finished-request counter beside it
		start   float64   // window start (s); the window ends at 45
		want    float64
		wantHas bool
		resets  int
	}{
		{"grows", []float64{1, 3, 3, 6}, []float64{10, 20, 30, 40}, 0, 5, true, 0},
		{"shorter window", []float64{1, 3, 3, 6}, []float64{10, 20, 30, 40}, 15, 3, true, 0},
		{"restart by the aborted counter alone", []float64{1, 3, 1, 4}, []float64{10, 20, 30, 40}, 0, 2 + 4, true, 1},
		{"restart by the other counters", []float64{1, 3, 5, 8}, []float64{10, 20, 2, 5}, 0, 2 + 8, true, 1},
		{"appears mid-run", []float64{absent, absent, 2, 5}, []float64{10, 20, 30, 40}, 0, 5, true, 0},
		{"never present", []float64{absent, absent, absent, absent}, []float64{10, 20, 30, 40}, 0, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := New(keepAll)
			for i, v := range tc.aborted {
				ms := sample{gen: 10 * float64(i), prompt: 10 * float64(i), req: tc.req[i], running: 1, waiting: 0}.model()
				if !math.IsNaN(v) {
					ms.Counters[scrape.RequestAborted] = v
				}
				s := &scrape.Snapshot{Time: at(15 * float64(i)), Models: map[string]*scrape.ModelSample{"m": ms}}
				if err := h.Append(s); err != nil {
					t.Fatal(err)
				}
			}
			w, ok := h.Window("m", at(45), time.Duration(45-tc.start)*time.Second, Options{})
			if !ok {
				t.Fatal("no window")
			}
			if w.RequestAborted != tc.want || w.HasRequestAborted != tc.wantHas {
				t.Errorf("aborted = %v (has %v), want %v (has %v)", w.RequestAborted, w.HasRequestAborted, tc.want, tc.wantHas)
			}
			if h.Resets() != tc.resets {
				t.Errorf("resets = %d, want %d", h.Resets(), tc.resets)
			}
		})
	}
}
