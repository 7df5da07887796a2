package traces

import (
	"math"
	"testing"
	"time"
)

// TestTallySumsCalibrationOverEvaluations: windows whose spans numbered the
// finished requests are counted (covered or inconsistent), the held ones
// apart, and every finite attainment error's absolute value summed; an
// uncovered window counts nothing; a model no longer served loses its
// totals.
func TestTallySumsCalibrationOverEvaluations(t *testing.T) {
	held := Result{Nominal: time.Minute, Covered: true, Calibration: Calibration{
		AttainmentErrors: []AttainmentError{{Error: -0.02}, {Error: 0.01}, {Error: math.NaN()}}}}
	failed := Result{Nominal: 5 * time.Minute, Inconsistent: true, Calibration: Calibration{
		Failures: []string{"x"}, AttainmentErrors: []AttainmentError{{Error: 0.5}}}}
	uncovered := Result{Nominal: time.Minute}
	var tally Tally
	tally.Add("m", []Result{held, failed, uncovered}, []string{"m", "n"})
	tally.Add("n", []Result{held}, []string{"m", "n"})
	got := tally.Add("m", []Result{held, uncovered}, []string{"m", "n"})
	want := []CalibrationTotal{
		{Nominal: time.Minute, Windows: 2, Held: 2, AbsErrorSum: 0.06, Errors: 4},
		{Nominal: 5 * time.Minute, Windows: 1, Held: 0, AbsErrorSum: 0.5, Errors: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("totals %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Nominal != w.Nominal || g.Windows != w.Windows || g.Held != w.Held || g.Errors != w.Errors || math.Abs(g.AbsErrorSum-w.AbsErrorSum) > 1e-15 {
			t.Errorf("window %v: %+v, want %+v", w.Nominal, g, w)
		}
	}
	if got[0].HeldShare() != 1 || got[1].HeldShare() != 0 || math.Abs(got[0].MeanAbsError()-0.015) > 1e-15 {
		t.Errorf("held share %v, %v; mean abs error %v", got[0].HeldShare(), got[1].HeldShare(), got[0].MeanAbsError())
	}
	if !math.IsNaN((CalibrationTotal{}).HeldShare()) || !math.IsNaN((CalibrationTotal{}).MeanAbsError()) {
		t.Error("an empty total has a share or a mean")
	}
	tally.Add("m", nil, []string{"m"})
	if got := tally.Add("n", nil, []string{"m"}); len(got) != 0 {
		t.Errorf("model n no longer served keeps %+v", got)
	}
}
