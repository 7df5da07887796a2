package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gumbel is the curve exp(−exp(a + b·x)), the shape fitGumbel assumes.
func gumbel(a, b, x float64) float64 { return math.Exp(-math.Exp(a + b*x)) }

// TestFitGumbelRecoversTheCurve fits bins whose good requests lie
// exactly on a known curve: the fit must return its parameters and its
// crossing of the goal, ignore the bins below from (given values off the
// curve on purpose), and converge from a warm start as from a cold one.
func TestFitGumbelRecoversTheCurve(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b, from float64
		loads      []float64
	}{
		{"steep, knee at 5", -2.97 - 2.7*5, 2.7, 3, ramp(3, 7, 12)},
		{"shallow", -6, 0.8, 0, ramp(1, 9, 9)},
		{"three bins", -4, 1, 2, []float64{1, 2, 3, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var bs []bin
			for _, x := range c.loads {
				n := 1000.0
				good := n * gumbel(c.a, c.b, x)
				if x < c.from {
					good = 0 // off the curve: must not count
				}
				bs = append(bs, bin{load: x, n: n, good: good})
			}
			l, ok := fitGumbel(bs, c.from, 0, gumbelCurve{})
			if !ok || math.Abs(l.a-c.a) > 1e-6*math.Abs(c.a) || math.Abs(l.b-c.b) > 1e-6*c.b {
				t.Fatalf("fit %+v ok %v, want a %v b %v", l, ok, c.a, c.b)
			}
			want := (math.Log(-math.Log(0.95)) - c.a) / c.b
			if x := l.crossing(0.95); math.Abs(x-want) > 1e-6*want || math.Abs(gumbel(c.a, c.b, x)-0.95) > 1e-9 {
				t.Fatalf("crossing %v, want %v", x, want)
			}
			warm, ok := fitGumbel(bs, c.from, 0, gumbelCurve{a: c.a * 1.1, b: c.b * 0.9})
			if !ok || math.Abs(warm.a-l.a) > 1e-6*math.Abs(c.a) || math.Abs(warm.b-l.b) > 1e-6*c.b {
				t.Fatalf("warm fit %+v, cold %+v", warm, l)
			}
		})
	}
}

// TestFitGumbelEdgeCases: too few bins or no spread of load gives no
// fit; bins met below a load and missed above it (perfect separation)
// give a finite crossing between the two; a curve that does not fall with
// load never crosses.
func TestFitGumbelEdgeCases(t *testing.T) {
	two := []bin{{load: 1, n: 100, good: 99}, {load: 2, n: 100, good: 50}, {load: 0.5, n: 100, good: 100}}
	if _, ok := fitGumbel(two, 0.9, 0, gumbelCurve{}); ok {
		t.Fatal("two bins above from gave a fit")
	}
	flat := []bin{{load: 2, n: 100, good: 99}, {load: 2, n: 50, good: 40}, {load: 2, n: 10, good: 9}}
	if _, ok := fitGumbel(flat, 0, 0, gumbelCurve{}); ok {
		t.Fatal("three bins at one load gave a fit")
	}
	sep := []bin{{load: 1, n: 100, good: 100}, {load: 2, n: 100, good: 100}, {load: 3, n: 100, good: 0}, {load: 4, n: 100, good: 0}}
	l, ok := fitGumbel(sep, 0, 0, gumbelCurve{})
	if x := l.crossing(0.95); !ok || !(x > 2 && x < 3) {
		t.Fatalf("separated bins: fit %+v ok %v crossing %v, want one between 2 and 3", l, ok, x)
	}
	for _, l := range []gumbelCurve{{a: -3, b: 0}, {a: -3, b: -1}} {
		if x := l.crossing(0.95); !math.IsInf(x, 1) {
			t.Fatalf("%+v crosses at %v, want +Inf", l, x)
		}
	}
}

// gap returns windows with binomial noise on the gumbel curve whose
// crossing of 0.95 is at 5: a day up to 85% of it and a burst at 130%,
// with nothing between (where the isotonic fit can only span the gap).
func gap(rng *rand.Rand) []Window { return gapFloored(rng, 0) }

// gapFloored is gap on the curve exp(−floor − exp(a + b·x)), still
// crossing 0.95 at 5: a share floor of the requests missed at every load
// (the mix's) beside the queue's, the shape fitShapes' floored curve
// assumes.
func gapFloored(rng *rand.Rand, floor float64) []Window {
	const b = 2.7
	a := math.Log(-math.Log(0.95)-floor) - b*5
	loads := append(append(ramp(1, 4.25, 70), 6.5, 6.5, 6.5, 6.5, 6.5), ramp(4.25, 1, 70)...)
	ws := make([]Window, len(loads))
	for k, x := range loads {
		n := math.Round(x * 120)
		p := math.Exp(-floor) * gumbel(a, b, x)
		good := 0.0
		for range int(n) {
			if rng.Float64() < p {
				good++
			}
		}
		ws[k] = window(k, x, good/n, n, 0.01)
	}
	return ws
}

// TestShapeBridgesAGap: where the curve has the assumed shape and the day
// leaves a gap around the knee, the Gumbel shape answers, its interval
// narrower than the isotonic one on the same windows, and it holds the
// true knee in at least 90% of the days.
func TestShapeBridgesAGap(t *testing.T) {
	const runs, knee = 20, 5.0
	cfg := DefaultConfig(0.95)
	cfg.Resamples = 100
	iso := cfg
	iso.ShapeFrom = 0
	inside, shaped := 0, 0
	var wShape, wIso float64
	for r := range runs {
		ws := gap(rand.New(rand.NewPCG(uint64(r), 11)))
		e, e0 := Fit(ws, cfg, ws[len(ws)-1].End, ""), Fit(ws, iso, ws[len(ws)-1].End, "")
		if e0.Method != Isotonic {
			t.Fatalf("day %d: with the shape off the method is %q", r, e0.Method)
		}
		if e.Method == Gumbel {
			shaped++
		}
		if e.Requests.Lower <= knee && knee <= e.Requests.Upper {
			inside++
		}
		wShape += e.Requests.Upper - e.Requests.Lower
		wIso += e0.Requests.Upper - e0.Requests.Lower
	}
	t.Logf("shape answered %d of %d, held the knee in %d; mean width %.2f against the isotonic %.2f req/s", shaped, runs, inside, wShape/runs, wIso/runs)
	if shaped < runs*9/10 || inside < runs*9/10 || !(wShape < 0.8*wIso) {
		t.Fatalf("shape answered %d of %d days, held the knee in %d, mean width %.2f against %.2f: want 90%%, 90%% and a fifth narrower", shaped, runs, inside, wShape/runs, wIso/runs)
	}
}

// TestStrataKeepTheBreachInEveryReplicate: on a day whose only windows
// past the knee are a burst of five, about one block resample of the
// whole day in seven draws none of them and finds the SLO met at every
// load; resampling each load stratum to its own count keeps the burst in
// every replicate, and the published interval still holds the true knee
// on at least 90% of the days while it narrows.
func TestStrataKeepTheBreachInEveryReplicate(t *testing.T) {
	const runs, knee = 20, 5.0
	cfg := DefaultConfig(0.95)
	cfg.Resamples = 100
	whole := cfg
	whole.Strata = nil
	inside, missedWhole := 0, 0
	var wStrata, wWhole float64
	for r := range runs {
		ws := gap(rand.New(rand.NewPCG(uint64(r), 11)))
		k := kneeOf(sortedPoints(ws, estimateOf), cfg.BinWidth, cfg.Goal)
		if k.below || k.above {
			t.Fatalf("day %d: the isotonic fit found no crossing (%+v)", r, k)
		}
		if rep := bootstrap(ws, cfg, shapeFit{}, strataCuts(cfg, k)); rep.above != 0 || len(rep.knees) != cfg.Resamples {
			t.Fatalf("day %d: %d of %d stratified replicates saw no breach, want none", r, rep.above, cfg.Resamples)
		}
		missedWhole += bootstrap(ws, whole, shapeFit{}, strataCuts(whole, k)).above
		e, e0 := Fit(ws, cfg, ws[len(ws)-1].End, ""), Fit(ws, whole, ws[len(ws)-1].End, "")
		if e.Requests.Lower <= knee && knee <= e.Requests.Upper {
			inside++
		}
		wStrata += e.Requests.Upper - e.Requests.Lower
		wWhole += e0.Requests.Upper - e0.Requests.Lower
	}
	t.Logf("whole-day replicates without a breach: %d of %d; stratified held the knee in %d of %d, mean width %.2f against %.2f req/s", missedWhole, runs*cfg.Resamples, inside, runs, wStrata/runs, wWhole/runs)
	if missedWhole == 0 {
		t.Fatalf("no whole-day replicate missed the burst: the day does not show what the strata are for")
	}
	if inside < runs*9/10 || !(wStrata < wWhole) {
		t.Fatalf("stratified intervals held the knee in %d of %d days, mean width %.2f against the whole day's %.2f: want 90%% and narrower", inside, runs, wStrata/runs, wWhole/runs)
	}
}

func TestStratifyPartitionsTheWindows(t *testing.T) {
	loads := []float64{5, 1, 3, 7, 2, 6}
	got := stratify(loads, []float64{2, 4, 10})
	want := [][]int{{1}, {2, 4}, {0, 3, 5}}
	if len(got) != len(want) {
		t.Fatalf("stratify = %v, want %v (the empty stratum past 10 left out)", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("stratify = %v, want %v", got, want)
		}
	}
	if got := stratify(loads, nil); len(got) != 1 || len(got[0]) != len(loads) {
		t.Fatalf("stratify without cuts = %v, want one stratum of every window", got)
	}
}

// TestFloorOfMisses: the floor is −log of the pooled attainment of the
// bins below from; none without such bins, and none when that share
// leaves no room above the goal.
func TestFloorOfMisses(t *testing.T) {
	bs := []bin{{load: 1, n: 100, good: 99}, {load: 2, n: 300, good: 297}, {load: 3, n: 100, good: 50}}
	if f, want := missFloor(bs, 2.5, 0.95), -math.Log(396.0/400); math.Abs(f-want) > 1e-15 {
		t.Fatalf("floor = %v, want %v (the two bins below 2.5 pooled)", f, want)
	}
	if f := missFloor(bs, 1, 0.95); f != 0 {
		t.Fatalf("floor with no bin below from = %v, want 0", f)
	}
	low := []bin{{load: 1, n: 100, good: 94}, {load: 3, n: 100, good: 50}}
	if f := missFloor(low, 2, 0.95); f != 0 {
		t.Fatalf("floor where the goal is missed below from = %v, want 0", f)
	}
}

// TestFitGumbelWithAFloor fits bins lying exactly on a floored curve: with
// the floor as an offset the fit returns the queue's parameters and the
// crossing, which the curve without it misses.
func TestFitGumbelWithAFloor(t *testing.T) {
	const floor, b = 0.01, 2.7
	a := math.Log(-math.Log(0.95)-floor) - b*5
	var bs []bin
	for _, x := range ramp(3.5, 7, 15) {
		bs = append(bs, bin{load: x, n: 1000, good: 1000 * math.Exp(-floor) * gumbel(a, b, x)})
	}
	l, ok := fitGumbel(bs, 0, floor, gumbelCurve{})
	if !ok || math.Abs(l.a-a) > 1e-6*math.Abs(a) || math.Abs(l.b-b) > 1e-6*b || l.floor != floor {
		t.Fatalf("fit %+v ok %v, want a %v b %v floor %v", l, ok, a, b, floor)
	}
	if x := l.crossing(0.95); math.Abs(x-5) > 1e-6 {
		t.Fatalf("crossing %v, want 5", x)
	}
	if p, ok := fitGumbel(bs, 0, 0, gumbelCurve{}); !ok || !(math.Abs(p.crossing(0.95)-5) > 0.01) {
		t.Fatalf("without the floor the fit %+v (ok %v) crosses at %v: the test does not tell the curves apart", p, ok, p.crossing(0.95))
	}
	if x := (gumbelCurve{a: a, b: b, floor: 0.06}).crossing(0.95); !math.IsInf(x, 1) {
		t.Fatalf("a floor above −log goal crosses at %v, want +Inf", x)
	}
}

// TestFloorBridgesAGapOnAFlooredCurve: on days whose misses are a floor of
// 1% beside the queue's and which leave a gap around the knee, the
// curve without the floor crosses early (its line is pulled flat by the
// floor below the knee); with Config.ShapeFloor the likelier curve is the
// floored one, its estimate nearer the knee on average, and the
// interval, spanning both curves', holds the knee on at least 90% of the
// days.
func TestFloorBridgesAGapOnAFlooredCurve(t *testing.T) {
	const runs, knee = 20, 5.0
	cfg := DefaultConfig(0.95)
	cfg.Resamples = 100
	plain := cfg
	plain.ShapeFloor = false
	inside := 0
	var errFloor, errPlain float64
	for r := range runs {
		ws := gapFloored(rand.New(rand.NewPCG(uint64(r), 13)), 0.01)
		e, e0 := Fit(ws, cfg, ws[len(ws)-1].End, ""), Fit(ws, plain, ws[len(ws)-1].End, "")
		if e.Method != Gumbel || e0.Method != Gumbel {
			t.Fatalf("day %d: methods %q and %q, want the shape to answer with and without the floor", r, e.Method, e0.Method)
		}
		if e.Requests.Lower <= knee && knee <= e.Requests.Upper {
			inside++
		}
		errFloor += math.Abs(e.Requests.Estimate-knee) / knee
		errPlain += math.Abs(e0.Requests.Estimate-knee) / knee
	}
	t.Logf("mean error with the floor %.1f%%, without %.1f%%; the knee inside %d of %d", 100*errFloor/runs, 100*errPlain/runs, inside, runs)
	if !(errFloor < errPlain/2) || inside < runs*9/10 {
		t.Fatalf("mean error %.3f with the floor against %.3f without, knee inside %d of %d: want under half and 90%%", errFloor/runs, errPlain/runs, inside, runs)
	}
}

// TestShapeIntervalSpansBothCurves: the shape's interval runs from the
// lower of its curves' replicate quantiles to the higher, each widened by
// Transient, around the likelier curve's crossing.
func TestShapeIntervalSpansBothCurves(t *testing.T) {
	cfg := DefaultConfig(0.95)
	cfg.Level = 0.5 // quartiles of five replicates: the second and the fourth
	best := gumbelCurve{a: math.Log(-math.Log(0.95)) - 5, b: 1}
	sh := shapeFit{curves: []gumbelCurve{{b: 1}, best}, best: best}
	rep := replicates{shape: [][]float64{{4, 4.5, 4.8, 5, 6}, {4.6, 4.9, 5.1, 5.4, 5.6}}}
	r, ok := shapeInterval(cfg, sh, rep, Range{Estimate: 5, Lower: 0, Upper: 100})
	want := Range{Estimate: 5, Lower: 4.5 * (1 - cfg.Transient), Upper: 5.4 * (1 + cfg.Transient)}
	if !ok || math.Abs(r.Estimate-want.Estimate) > 1e-12 || r.Lower != want.Lower || r.Upper != want.Upper {
		t.Fatalf("interval %+v ok %v, want %+v", r, ok, want)
	}
}
