package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// window is a synthetic two-minute window k at load (req/s) whose n
// finished requests met the SLO at attainment att (bounds ±width/2).
func window(k int, load, att, n, width float64) Window {
	start := t0.Add(time.Duration(k) * 2 * time.Minute)
	good := att * n
	return Window{
		Start: start, End: start.Add(2 * time.Minute), Arrivals: load * 120, Recent: load,
		Finished: n, Known: true, Mixed: true, PromptTokens: 500 * n, OutputTokens: 200 * n,
		Good:     slo.Bounded{Estimate: good, Lower: math.Max(0, good-width*n/2), Upper: math.Min(n, good+width*n/2)},
		InFlight: load * 4 * 120,
	}
}

func TestMonotonePoolsViolators(t *testing.T) {
	got := monotone([]bin{{n: 1, good: 1}, {n: 1, good: 0.5}, {n: 1, good: 0.7}, {n: 2, good: 0}})
	want := []float64{1, 0.6, 0.6, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("monotone = %v, want %v", got, want)
		}
	}
}

func TestKneeInterpolatesBetweenBins(t *testing.T) {
	ps := []point{{load: 1, n: 100, good: 100}, {load: 2, n: 100, good: 90}}
	k := kneeOf(ps, 0.04, 0.95)
	if k.below || k.above || math.Abs(k.load-1.5) > 1e-12 || k.good != 1 || k.bad != 2 {
		t.Fatalf("knee = %+v, want 1.5 between bins at 1 and 2", k)
	}
	if k := kneeOf(ps[:1], 0.04, 0.95); !k.above || k.load != 1 {
		t.Fatalf("knee of a met curve = %+v, want above at 1", k)
	}
	if k := kneeOf(ps[1:], 0.04, 0.95); !k.below {
		t.Fatalf("knee of a missed curve = %+v, want below", k)
	}
}

func TestQuantileKeepsInfiniteEnds(t *testing.T) {
	xs := []float64{math.Inf(-1), 1, 2, 3, math.Inf(1)}
	if q := quantile(xs, 0.5); q != 2 {
		t.Fatalf("median = %v, want 2", q)
	}
	if q := quantile(xs, 0.9); !math.IsInf(q, 1) {
		t.Fatalf("0.9 quantile = %v, want +Inf (a replicate without a crossing widens the end)", q)
	}
	if q := quantile(xs, 0.1); !math.IsInf(q, -1) {
		t.Fatalf("0.1 quantile = %v, want -Inf", q)
	}
	if q := quantile(xs[1:4], 0.25); q != 1.5 {
		t.Fatalf("0.25 quantile = %v, want 1.5", q)
	}
}

// interval is a synthetic 15 s interval k.
func interval(k int, arrivals, finished, good float64) Interval {
	start := t0.Add(time.Duration(k) * 15 * time.Second)
	return Interval{Start: start, End: start.Add(15 * time.Second), FirstTokens: arrivals, Finished: finished,
		Good: slo.Bounded{Estimate: good, Lower: good - 1, Upper: good + 1}, GoodKnown: true,
		PromptTokens: 500 * finished, OutputTokens: 200 * finished, Mixed: true, InFlightMean: 10}
}

func TestLearnerPoolsIntervalsIntoWindows(t *testing.T) {
	l := NewLearner(DefaultConfig(0.95))
	for k := range 16 {
		l.Add(interval(k, 30, 30, 29))
	}
	ws := l.Windows()
	if len(ws) != 2 {
		t.Fatalf("%d windows from 16 intervals of 15 s, want 2", len(ws))
	}
	w := ws[0]
	if w.Arrivals != 240 || w.Finished != 240 || w.Good.Estimate != 232 || w.Good.Lower != 224 || w.Good.Upper != 240 || w.Seconds() != 120 {
		t.Fatalf("window = %+v, want 240 arrivals and finished, good 232 in [224, 240] over 120 s", w)
	}
	if w.Demand() != 2 || w.PromptMean() != 500 || w.OutputMean() != 200 || w.InFlight != 1200 {
		t.Fatalf("window demand %v, mix %v/%v, in flight %v", w.Demand(), w.PromptMean(), w.OutputMean(), w.InFlight)
	}
	// The second window's recent load decays from the first's (both 2 req/s).
	if ws[1].Recent != 2 {
		t.Fatalf("recent load %v, want 2", ws[1].Recent)
	}
	// A gap in the scrapes closes the open window; less than half a
	// window is not kept.
	l.Add(interval(16, 30, 30, 29))
	l.Add(interval(20, 30, 30, 29))
	for k := 21; k < 28; k++ {
		l.Add(interval(k, 30, 30, 29))
	}
	if got := len(l.Windows()); got != 3 {
		t.Fatalf("%d windows after a gap, want 3 (the lone interval before the gap dropped)", got)
	}
	if s := l.Windows()[2].Start; !s.Equal(interval(20, 0, 0, 0).Start) {
		t.Fatalf("the window after the gap starts at %v, want %v", s, interval(20, 0, 0, 0).Start)
	}
}

func TestDrainingWindowsAreLeftOut(t *testing.T) {
	w := window(0, 3, 0.2, 300, 0)
	w.WaitingStart, w.WaitingEnd = 200, 20
	if !w.Draining() {
		t.Fatal("a window that worked off 180 of 200 waiting requests is not draining")
	}
	w.WaitingEnd = 190
	if w.Draining() {
		t.Fatal("a window whose queue held is draining")
	}
}

// TestDrainContinuationIsLeftOut: the window that begins where a
// draining one ended and works off the queue it left is left out with the
// drain; one that begins with no queue after a drain, one after a gap,
// and the window after a continuation (a request or two waiting: the
// queue a stationary server holds) are kept.
func TestDrainContinuationIsLeftOut(t *testing.T) {
	cfg := DefaultConfig(0.95)
	day := func() []Window {
		ws := make([]Window, 8)
		for k := range ws {
			ws[k] = window(k, 3, 0.99, 300, 0)
		}
		ws[1].WaitingStart, ws[1].WaitingEnd = 200, 20 // draining
		ws[2].WaitingStart, ws[2].WaitingEnd = 20, 1   // goes on: 20 < 36 = a tenth of its arrivals
		ws[2].Good.Estimate = 0.6 * ws[2].Finished
		ws[3].WaitingStart = 1                        // after the continuation
		ws[5].WaitingStart, ws[5].WaitingEnd = 200, 0 // draining, to an empty queue
		return ws
	}
	starts := func(ws []Window) []time.Time {
		var out []time.Time
		for _, w := range usable(ws, cfg) {
			out = append(out, w.Start)
		}
		return out
	}
	ws := day()
	want := []time.Time{ws[0].Start, ws[3].Start, ws[4].Start, ws[6].Start, ws[7].Start}
	if got := starts(ws); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("kept windows starting %v, want %v (the drains and the continuation left out)", got, want)
	}
	// After a gap the window does not begin with the drain's queue.
	gap := day()
	gap[2].Start = gap[2].Start.Add(time.Minute)
	want = []time.Time{gap[0].Start, gap[2].Start, gap[3].Start, gap[4].Start, gap[6].Start, gap[7].Start}
	if got := starts(gap); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("with a gap after the drain: kept windows starting %v, want %v", got, want)
	}
}

func TestMixChangeStartsLearningOver(t *testing.T) {
	cfg := DefaultConfig(0.95)
	l := NewLearner(cfg)
	k := 0
	add := func(n int, prompt float64) {
		for range n {
			iv := interval(k, 30, 30, 29)
			iv.PromptTokens = prompt * iv.Finished
			l.Add(iv)
			k++
		}
	}
	add(8*30, 500) // an hour of one mix
	add(8*12, 800) // 24 minutes of prompts 60% longer
	ws := l.Windows()
	change := t0.Add(time.Hour)
	if !ws[0].Start.Equal(change) {
		t.Fatalf("learning restarted at %v, want the change at %v", ws[0].Start, change)
	}
	e := l.Estimate(ws[len(ws)-1].End)
	if !strings.Contains(e.Reason, "the mix changed: mean prompt tokens 500 before, 800 since") || !e.Since.Equal(change) {
		t.Fatalf("reason %q since %v, want the mix change said and learning since %v", e.Reason, e.Since, change)
	}
}

// curve is a synthetic attainment curve: 0.99 up to knee, then falling by
// 3 points per 1% of load; it crosses 0.95 at knee·(1 + 0.04/3).
func curve(load, knee float64) float64 {
	if load <= knee {
		return 0.99
	}
	return 0.99 - 3*(load-knee)/knee
}

// day returns windows at the given loads with binomial noise on curve.
func day(loads []float64, knee float64, rng *rand.Rand) []Window {
	ws := make([]Window, len(loads))
	for k, x := range loads {
		n := math.Round(x * 120)
		p := math.Max(0, math.Min(1, curve(x, knee)))
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

func ramp(from, to float64, n int) []float64 {
	out := make([]float64, n)
	for k := range out {
		out[k] = from + (to-from)*float64(k)/float64(n-1)
	}
	return out
}

func TestKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultConfig(0.95)
	const knee = 5.0
	end := func(ws []Window) time.Time { return ws[len(ws)-1].End }

	low := day(ramp(1, 3, 60), knee, rng)
	e := Fit(low, cfg, end(low), "")
	if e.Kind != LowerOnly || !(e.Requests.Lower <= 3) || !math.IsInf(e.Requests.Upper, 1) || e.Headroom.Upper != 1 {
		t.Fatalf("low load: %s %+v headroom %+v, want lower_only at most the highest load 3 and no upper bound", e.Kind, e.Requests, e.Headroom)
	}

	across := day(append(ramp(1, 7, 60), ramp(7, 1, 60)...), knee, rng)
	e = Fit(across, cfg, end(across), "")
	if e.Kind != Bounded || !(e.Requests.Lower <= knee && knee <= e.Requests.Upper) || math.Abs(e.Requests.Estimate-knee) > 0.05*knee {
		t.Fatalf("across the knee: %s %+v, want bounded around %v within 5%%", e.Kind, e.Requests, knee)
	}
	if e.Tokens.Estimate != e.Requests.Estimate*200 || !(e.Concurrency.Estimate > 0) {
		t.Fatalf("tokens %+v concurrency %+v, want 200 tokens per request and a positive concurrency", e.Tokens, e.Concurrency)
	}

	if e := Fit(across[:10], cfg, end(across[:10]), ""); e.Kind != Unknown || !strings.Contains(e.Reason, "15 needed") {
		t.Fatalf("ten windows: %s %q, want unknown, saying 15 are needed", e.Kind, e.Reason)
	}
	high := day(ramp(8, 9, 30), knee, rng)
	if e := Fit(high, cfg, end(high), ""); e.Kind != Unknown || !strings.Contains(e.Reason, "missed at the lowest load") {
		t.Fatalf("overloaded throughout: %s %q, want unknown", e.Kind, e.Reason)
	}
}

func TestHeadroomAndTimeToBreach(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := DefaultConfig(0.95)
	const knee = 5.0
	// Across the knee and back, then a rise from 2 req/s at 0.1 req/s per window.
	loads := append(append(ramp(1, 7, 60), ramp(7, 1, 60)...), ramp(2, 3, 11)...)
	ws := day(loads, knee, rng)
	now := ws[len(ws)-1].End
	e := Fit(ws, cfg, now, "")
	if e.Kind != Bounded {
		t.Fatalf("kind %s, want bounded", e.Kind)
	}
	// The load of the last 10 minutes: the five last windows' mean.
	wantLoad := (2.6 + 2.7 + 2.8 + 2.9 + 3.0) / 5
	if math.Abs(e.Load-wantLoad) > 1e-9 {
		t.Fatalf("load %v, want %v", e.Load, wantLoad)
	}
	if h := 1 - e.Load/e.Requests.Estimate; math.Abs(e.Headroom.Estimate-h) > 1e-12 || !(e.Headroom.Lower <= e.Headroom.Estimate && e.Headroom.Estimate <= e.Headroom.Upper) {
		t.Fatalf("headroom %+v, want %v inside its bounds", e.Headroom, h)
	}
	// The trend over 30 minutes holds the last 15 windows: 0.1 req/s per 120 s
	// over the rise, less where the ramp down ended.
	if !e.HasBreach || !(e.Trend > 0) {
		t.Fatalf("trend %v, breach %v: a rising load must give a time to breach", e.Trend, e.HasBreach)
	}
	want := time.Duration((e.Requests.Estimate - e.Load) / e.Trend * float64(time.Second))
	if d := e.TimeToBreach - want; d < -time.Second || d > time.Second || e.TimeToBreachLower > e.TimeToBreach {
		t.Fatalf("time to breach %v (lower end %v), want %v", e.TimeToBreach, e.TimeToBreachLower, want)
	}
}

func TestBaselineRecoversTheQueueingModel(t *testing.T) {
	const t0s, mu, p0, p1 = 0.08, 10.0, 0.01, 0.002
	var ws []Window
	for k, x := range ramp(1, 9, 40) {
		w := window(k, x, 1, 100, 0)
		w.TTFT = Mean{Sum: 100 * t0s / (1 - x/mu), Count: 100}
		w.TPOT = Mean{Sum: 100 * (p0 + p1*x), Count: 100}
		ws = append(ws, w)
	}
	s := slo.SLO{Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
	b := FitBaseline(ws, s)
	if math.Abs(b.T0-t0s) > 1e-9 || math.Abs(b.Mu-mu) > 1e-9 || math.Abs(b.P0-p0) > 1e-9 || math.Abs(b.P1-p1) > 1e-9 {
		t.Fatalf("baseline fit %+v, want T0 %v μ %v P0 %v P1 %v", b, t0s, mu, p0, p1)
	}
	// TTFT binds first: T0/(1−λ/μ) = 0.5 at λ = μ(1 − T0/0.5) = 8.4; TPOT at 20.
	if math.Abs(b.Requests-8.4) > 1e-9 {
		t.Fatalf("baseline capacity %v, want 8.4", b.Requests)
	}
}

// TestIntervalCoverageOnASyntheticCurve measures the prediction interval's
// coverage where the truth is known exactly: a curve with binomial noise,
// sampled by a day that crosses the knee. The nominal level is 90%; the
// bins and the transient margin widen it, so it must hold at least that.
func TestIntervalCoverageOnASyntheticCurve(t *testing.T) {
	cfg := DefaultConfig(0.95)
	cfg.Resamples = 100
	const knee, runs = 5.0, 40
	inside := 0
	for r := range runs {
		rng := rand.New(rand.NewPCG(uint64(r), 7))
		ws := day(append(ramp(1, 6, 45), ramp(6, 1, 45)...), knee, rng)
		e := Fit(ws, cfg, ws[len(ws)-1].End, "")
		// The synthetic knee where curve crosses the goal: 0.99 − 3(x−k)/k = 0.95.
		truth := knee * (1 + 0.04/3)
		if e.Requests.Lower <= truth && truth <= e.Requests.Upper {
			inside++
		}
	}
	if inside < runs*9/10 {
		t.Fatalf("the knee lay inside the interval in %d of %d synthetic days, want at least 90%%", inside, runs)
	}
	t.Logf("synthetic coverage: %d of %d", inside, runs)
}

// TestFitInvariants fits random histories (loads, attainments, bounds,
// queues, gaps) and checks what every estimate must satisfy whatever the
// data: a known kind, Lower ≤ Estimate ≤ Upper, a finite upper end exactly
// when bounded, a method exactly when bounded, headroom ordered the same
// way, a time to breach only on a bounded answer, and a Gumbel interval
// inside the isotonic one.
func TestFitInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	cfg := DefaultConfig(0.95)
	cfg.Resamples = 30
	kinds, methods := map[Kind]int{}, map[Method]int{}
	defer func() {
		if kinds[Bounded] == 0 || kinds[LowerOnly] == 0 || kinds[Unknown] == 0 || methods[Isotonic] == 0 || methods[Gumbel] == 0 {
			t.Errorf("kinds seen %v, methods %v: the random histories must reach every kind and method", kinds, methods)
		}
	}()
	for run := range 300 {
		n, top := rng.IntN(80), 0.5+rng.Float64()*9.5
		ws := make([]Window, 0, n)
		for k := range n {
			load := rng.Float64() * top
			att := math.Min(1, math.Max(0, 1.2-load/8+0.1*rng.NormFloat64()))
			w := window(k+rng.IntN(3), load, att, math.Floor(rng.Float64()*500), rng.Float64()*0.2)
			w.WaitingStart, w.WaitingEnd = rng.Float64()*100, rng.Float64()*100
			w.Recent = load * (0.8 + 0.4*rng.Float64())
			ws = append(ws, w)
		}
		e := Fit(ws, cfg, t0.Add(3*time.Hour), "")
		kinds[e.Kind]++
		methods[e.Method]++
		checkInvariants(t, run, e)
		checkShapeInsideIsotonic(t, run, ws, cfg, e)
	}
}

// checkShapeInsideIsotonic fails unless an interval the Gumbel shape
// placed lies inside the isotonic one on the same windows, and is the
// narrower, or bounds an answer the isotonic fit left one-sided.
func checkShapeInsideIsotonic(t *testing.T, run int, ws []Window, cfg Config, e Estimate) {
	t.Helper()
	if e.Method != Gumbel {
		return
	}
	cfg.ShapeFrom = 0
	iso := Fit(ws, cfg, t0.Add(3*time.Hour), "")
	r, i := e.Requests, iso.Requests
	switch iso.Kind {
	case Bounded:
		if !(i.Lower <= r.Lower && r.Upper <= i.Upper && r.Upper-r.Lower < i.Upper-i.Lower) {
			t.Fatalf("run %d: the shape's interval %+v is not inside and narrower than the isotonic %+v", run, r, i)
		}
	case LowerOnly:
		if !(i.Lower <= r.Lower) || math.IsInf(r.Upper, 1) {
			t.Fatalf("run %d: the shape's interval %+v against the isotonic one-sided %+v", run, r, i)
		}
	default:
		t.Fatalf("run %d: the shape answered where the isotonic fit is %s", run, iso.Kind)
	}
}

// checkInvariants fails unless e satisfies what every estimate must.
func checkInvariants(t *testing.T, run int, e Estimate) {
	t.Helper()
	r, h := e.Requests, e.Headroom
	switch e.Kind {
	case Unknown:
		if e.Reason == "" || e.Method != "" {
			t.Fatalf("run %d: unknown without a reason", run)
		}
		return
	case Bounded:
		if !(0 <= r.Lower && r.Lower <= r.Estimate && r.Estimate <= r.Upper) || math.IsInf(r.Upper, 1) {
			t.Fatalf("run %d: bounded %+v", run, r)
		}
		if e.Method != Isotonic && e.Method != Gumbel {
			t.Fatalf("run %d: bounded by method %q", run, e.Method)
		}
	case LowerOnly:
		if !(r.Lower == r.Estimate && r.Lower >= 0) || !math.IsInf(r.Upper, 1) || e.HasBreach || e.Method != "" {
			t.Fatalf("run %d: lower_only %+v breach %v method %q", run, r, e.HasBreach, e.Method)
		}
	default:
		t.Fatalf("run %d: kind %q", run, e.Kind)
	}
	if r.Lower > 0 && !(h.Lower <= h.Estimate && h.Estimate <= h.Upper) {
		t.Fatalf("run %d: headroom %+v for capacity %+v at load %v", run, h, r, e.Load)
	}
}
