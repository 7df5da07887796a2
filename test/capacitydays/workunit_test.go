package days

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// TestInWorkUnitsRescalesToTheFinalMix: intervals of 1000-token prompts
// then 1500-token ones, weighted by prompt tokens only, count the first
// mix's arrivals and queue at 1000/1500 of a final-mix request, and the
// final mix's unchanged; an interval with nothing finished in its span
// keeps its counts.
func TestInWorkUnitsRescalesToTheFinalMix(t *testing.T) {
	var ivs []capacity.Interval
	for k := range 8 {
		p := 1000.0
		if k >= 4 {
			p = 1500
		}
		at := Start.Add(time.Duration(k) * 15 * time.Second)
		ivs = append(ivs, capacity.Interval{Start: at, End: at.Add(15 * time.Second), FirstTokens: 30, WaitingStart: 3, WaitingEnd: 6,
			Finished: 20, PromptTokens: 20 * p, OutputTokens: 20 * 200, Mixed: true})
	}
	ivs[0].Finished, ivs[0].PromptTokens, ivs[0].OutputTokens = 0, 0, 0
	got := InWorkUnits(ivs, 1, 0, 1)
	for k, iv := range got {
		f := 1.0
		if k >= 1 && k < 4 {
			f = 1000.0 / 1500
		}
		if math.Abs(iv.FirstTokens-30*f) > 1e-9 || math.Abs(iv.WaitingStart-3*f) > 1e-9 || math.Abs(iv.WaitingEnd-6*f) > 1e-9 {
			t.Fatalf("interval %d: first tokens %v, queue %v -> %v; want %v, %v -> %v", k, iv.FirstTokens, iv.WaitingStart, iv.WaitingEnd, 30*f, 3*f, 6*f)
		}
		if iv.Finished != ivs[k].Finished || iv.Good != ivs[k].Good {
			t.Fatalf("interval %d: the judged requests changed", k)
		}
	}
}
