package capacity

import (
	"math"
	"math/rand/v2"
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

// TestRefreshFollowsTheLoad fits a day that crossed the knee, then has the
// load rise for ten more minutes: a refresh keeps the knee, its interval
// and the fitted curve, and its load, headroom, time to breach and
// operating point are those a full fit computes at the same time.
func TestRefreshFollowsTheLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	loads := append(append(ramp(1, 7, 120), ramp(7, 2, 60)...), ramp(2, 4, 5)...)
	ws := day(loads, 5, rng)
	cfg := DefaultConfig(0.95)
	l, err := RestoreLearner(cfg, LearnerState{Windows: ws[:180]})
	if err != nil {
		t.Fatal(err)
	}
	first := l.Estimate(ws[179].End)
	if first.Kind != Bounded {
		t.Fatalf("kind %s, want bounded", first.Kind)
	}
	later, err := RestoreLearner(cfg, LearnerState{Windows: ws})
	if err != nil {
		t.Fatal(err)
	}
	now := ws[len(ws)-1].End
	got, full := later.Refresh(first, now), later.Estimate(now)
	if got.Requests != first.Requests || len(got.Curve.Fit) != len(first.Curve.Fit) || got.Windows != first.Windows {
		t.Fatalf("refresh moved the knee: %+v, fitted %+v", got.Requests, first.Requests)
	}
	if got.Load != full.Load || got.Trend != full.Trend || got.Curve.Operating != full.Curve.Operating {
		t.Fatalf("refresh: load %v trend %v operating %+v; a fit: %v %v %+v", got.Load, got.Trend, got.Curve.Operating, full.Load, full.Trend, full.Curve.Operating)
	}
	if want := 1 - got.Load/first.Requests.Upper; got.Headroom.Upper != want || !(got.Trend > 0) || !got.HasBreach {
		t.Fatalf("refresh: headroom %+v (want upper %v), trend %v, breach %v", got.Headroom, want, got.Trend, got.HasBreach)
	}
	if want := seconds((first.Requests.Estimate - got.Load) / got.Trend); got.TimeToBreach != want {
		t.Fatalf("refresh: time to breach %v, want %v", got.TimeToBreach, want)
	}
}
