package capacity

import (
	"math"
	"testing"
)

// TestCurveOfFourWindows pins the curve of four windows, two bins apart:
// the windows sorted by load with the ledger's bounds as attainment, the
// fit pooling the violating pair (0.9 below 0.95 at a lower load), its
// ends the fits of the bounds, and the operating point the pooled
// attainment of the windows of the last ten minutes.
func TestCurveOfFourWindows(t *testing.T) {
	ws := []Window{
		window(0, 4, 1.00, 100, 0.02),
		window(1, 2, 0.90, 100, 0.02),
		window(2, 3, 0.95, 100, 0.02),
		window(3, 6, 0.50, 100, 0.02),
	}
	cfg := DefaultConfig(0.95)
	now := ws[3].End
	c := curveOf(ws, cfg, now, 5)
	wantLoads := []float64{2, 3, 4, 6}
	wantAtt := []float64{0.90, 0.95, 1.00, 0.50}
	if len(c.Windows) != 4 {
		t.Fatalf("%d windows, want 4", len(c.Windows))
	}
	for i, p := range c.Windows {
		if p.Load != wantLoads[i] || math.Abs(p.Attainment.Estimate-wantAtt[i]) > 1e-12 ||
			math.Abs(p.Attainment.Lower-(wantAtt[i]-0.01)) > 1e-12 || math.Abs(p.Attainment.Upper-math.Min(1, wantAtt[i]+0.01)) > 1e-12 {
			t.Fatalf("window %d: %+v, want load %v attainment %v ± 0.01", i, p, wantLoads[i], wantAtt[i])
		}
	}
	// PAV over 0.90, 0.95, 1.00, 0.50 (equal weights): 0.95 0.95 0.95 0.50.
	wantFit := []float64{0.95, 0.95, 0.95, 0.50}
	if len(c.Fit) != 4 {
		t.Fatalf("fit %+v, want 4 bins", c.Fit)
	}
	for i, p := range c.Fit {
		if p.Load != wantLoads[i] || math.Abs(p.Attainment.Estimate-wantFit[i]) > 1e-12 || !(p.Attainment.Lower <= p.Attainment.Estimate && p.Attainment.Estimate <= p.Attainment.Upper) {
			t.Fatalf("fit bin %d: %+v, want load %v attainment %v inside its ends", i, p, wantLoads[i], wantFit[i])
		}
	}
	// The last ten minutes hold windows 0 to 3 ending at 2, 4, 6 and 8
	// minutes: all of them, 100 + 90 + 95 + 50 = 335 good of 400.
	if !c.Known || c.Operating.Load != 5 || math.Abs(c.Operating.Attainment.Estimate-335.0/400) > 1e-12 {
		t.Fatalf("operating point %+v (known %v), want load 5 at 335/400", c.Operating, c.Known)
	}
	if e := Fit(ws, cfg, now, ""); len(e.Curve.Windows) != 4 || e.Curve.Operating.Load != e.Load {
		t.Fatalf("Fit's curve %+v, want the four windows at the estimate's load %v", e.Curve, e.Load)
	}
}
