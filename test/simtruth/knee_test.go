package simtruth

import (
	"math"
	"testing"
)

// TestKnee: a rise in the measured curve is pooled with its neighbour
// before the crossing is interpolated; a curve below the goal from the
// first rate has no knee (NaN), one that never falls below has +Inf.
func TestKnee(t *testing.T) {
	rates := []float64{1, 2, 3, 4}
	// 0.97 then 0.99 pool to 0.98 at rates 2 and 3; the goal 0.95 is
	// crossed between 3 (0.98) and 4 (0.90), at 3 + 0.03/0.08.
	if k := Knee(rates, []float64{0.995, 0.97, 0.99, 0.90}, 0.95); math.Abs(k-(3+0.03/0.08)) > 1e-12 {
		t.Errorf("knee %v, want %v", k, 3+0.03/0.08)
	}
	if k := Knee(rates, []float64{0.9, 0.8, 0.7, 0.6}, 0.95); !math.IsNaN(k) {
		t.Errorf("knee %v of a curve below the goal, want NaN", k)
	}
	if k := Knee(rates, []float64{1, 1, 0.99, 0.99}, 0.95); !math.IsInf(k, 1) {
		t.Errorf("knee %v of a curve never below the goal, want +Inf", k)
	}
}
