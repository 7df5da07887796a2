package slo

import (
	"math"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// busyWindow is one minute of a busy server, with numbers chosen so that
// every expected value below can be worked by hand.
func busyWindow() Window {
	req := []float64{1, 5, 10, inf}
	return Window{
		Start: t0, End: t0.Add(time.Minute), Nominal: time.Minute,
		Latency: map[Metric]Histogram{
			TTFT:      hist(30, []float64{0.1, 0.5, 1, inf}, 50, 90, 100, 100),
			TPOT:      hist(3.5, []float64{0.025, 0.05, 0.1, inf}, 40, 85, 95, 95),
			E2E:       hist(300, req, 20, 80, 95, 95),
			Queue:     hist(12, req, 90, 95, 95, 95),
			Inference: hist(240, req, 25, 85, 95, 95),
		},
		GenerationTokens:      hist(20000, []float64{10, 100, 1000, inf}, 10, 60, 95, 95),
		PromptTokens:          hist(50000, []float64{10, 100, 1000, inf}, 0, 0, 95, 95),
		GenerationTokensTotal: 21000, PromptTokensTotal: 60000, HasTokenCounters: true,
		RequestSuccess: 95, HasRequestSuccess: true,
		Running: Gauge{Known: true, AtStart: 5, AtEnd: 8, Mean: 6, Max: 9},
		Waiting: Gauge{Known: true, AtStart: 1, AtEnd: 2, Mean: 1.5, Max: 3},
	}
}

func TestEvaluateWindowBusy(t *testing.T) {
	rep := EvaluateWindow(busyWindow(), []SLO{interactive}, Options{Quantiles: []float64{0.5, 0.99}})
	if rep.Requests[TTFT] != 100 || rep.Requests[E2E] != 95 || len(rep.Requests) != 5 {
		t.Errorf("Requests = %v", rep.Requests)
	}
	if q := rep.Quantiles[TTFT]; len(q) != 2 || q[0].Lower != 0 || q[0].Upper != 0.1 || !near(PrometheusQuantile(0.5, busyWindow().Latency[TTFT]), 0.1) {
		t.Errorf("TTFT quantiles = %+v, want p50 in (0, 0.1], Prometheus 0.1", q)
	}
	if !rep.HasThroughput || rep.GenerationTokensPerSecond != 350 || rep.PromptTokensPerSecond != 1000 {
		t.Errorf("throughput %v %v %v, want 350, 1000", rep.HasThroughput, rep.GenerationTokensPerSecond, rep.PromptTokensPerSecond)
	}
	if !rep.HasRequestRate || !near(rep.RequestsPerSecond, 95.0/60) {
		t.Errorf("request rate %v %v, want 95/60", rep.HasRequestRate, rep.RequestsPerSecond)
	}
	wantC := map[Stage]Concurrency{
		StageTotal:   {Predicted: 5, Observed: 7.5, HasObserved: true},
		StageQueue:   {Predicted: 0.2, Observed: 1.5, HasObserved: true},
		StageRunning: {Predicted: 4, Observed: 6, HasObserved: true},
	}
	for s, want := range wantC {
		if got := rep.Concurrency[s]; !near(got.Predicted, want.Predicted) || got.Observed != want.Observed || !got.HasObserved {
			t.Errorf("Concurrency[%s] = %+v, want %+v", s, got, want)
		}
	}
	if len(rep.SLOs) != 1 {
		t.Fatalf("SLOs = %+v", rep.SLOs)
	}
	r := rep.SLOs[0]
	// TTFT: 90 good of A (100); |A\B| <= F(end) = 10, |B\A| <= min(F(start) = 6,
	// 10 + 95 − 100) = 5: good in B in [80, 95], estimate 0.9·95.
	// TPOT: 85 of 95 exactly. Joint: [80+85−95, 85], estimate (0.9·85+85)/2.
	// Tokens: 25 bad at most hold min(20000, 20000 − least(70) = 18500).
	want := map[string]Bounded{
		"ttft": Exact(0.9), "tpot": Exact(85.0 / 95), AllKey: {80.75 / 95, 70.0 / 95, 85.0 / 95},
	}
	for k, w := range want {
		if got := r.Objectives[k]; !nearB(got, w) {
			t.Errorf("Objectives[%s] = %+v, want %+v", k, got, w)
		}
	}
	wantGood := map[string]Bounded{"ttft": {85.5, 80, 95}, "tpot": Exact(85), AllKey: {80.75, 70, 85}}
	for k, w := range wantGood {
		if got := r.GoodRequests[k]; !nearB(got, w) {
			t.Errorf("GoodRequests[%s] = %+v, want %+v", k, got, w)
		}
	}
	if r.Requests != 95 {
		t.Errorf("Requests = %v, want 95", r.Requests)
	}
	if !nearB(r.GoodputRequestsPerSecond, Bounded{80.75 / 60, 70.0 / 60, 85.0 / 60}) {
		t.Errorf("goodput requests/s = %+v", r.GoodputRequestsPerSecond)
	}
	if !r.HasGoodputTokens || !nearB(r.GoodputTokensPerSecond, Bounded{17000.0 / 60, 1500.0 / 60, 20000.0 / 60}) {
		t.Errorf("goodput tokens/s = %+v (%v)", r.GoodputTokensPerSecond, r.HasGoodputTokens)
	}
	if !r.HasBurnRate || !nearB(r.BurnRate, Bounded{(1 - 0.85) / (1 - 0.99), (10.0 / 95) / (1 - 0.99), (25.0 / 95) / (1 - 0.99)}) {
		t.Errorf("burn rate = %+v", r.BurnRate)
	}
}

func TestEvaluateWindowEdgeCases(t *testing.T) {
	noTTFTGauges := busyWindow()
	noTTFTGauges.Waiting = Gauge{}
	missing := busyWindow()
	delete(missing.Latency, TTFT)
	idle := busyWindow()
	for m, h := range idle.Latency {
		h.Counts = make([]float64, len(h.Counts))
		h.Sum = 0
		idle.Latency[m] = h
	}
	zero := busyWindow()
	zero.End = zero.Start
	itlOnly := busyWindow()
	itlOnly.Latency[ITL] = hist(10, []float64{0.05, 0.1, inf}, 900, 990, 1000)
	itlSLO := SLO{Name: "itl", Objectives: []Objective{{ITL, 0.05}}, Goal: 0.9}

	tests := []struct {
		name  string
		w     Window
		slos  []SLO
		check func(t *testing.T, rep WindowReport)
	}{
		{"unknown gauges: TTFT in B trivially bounded", noTTFTGauges, []SLO{interactive}, func(t *testing.T, rep WindowReport) {
			if got := rep.SLOs[0].GoodRequests["ttft"]; got.Lower != 0 || got.Upper != 95 {
				t.Errorf("ttft good in B = %+v, want [0, 95]", got)
			}
			if got := rep.SLOs[0].GoodRequests[AllKey]; got.Lower != 0 || got.Upper != 85 {
				t.Errorf("all = %+v, want [0, 85]", got)
			}
			if c := rep.Concurrency[StageTotal]; c.HasObserved {
				t.Errorf("total concurrency observed without the waiting gauge: %+v", c)
			}
		}},
		{"missing TTFT histogram", missing, []SLO{interactive}, func(t *testing.T, rep WindowReport) {
			r := rep.SLOs[0]
			if _, ok := r.Objectives["ttft"]; ok {
				t.Error("ttft attainment reported without its histogram")
			}
			if got, ok := r.GoodRequests[AllKey]; ok {
				t.Errorf("all = %+v without the TTFT histogram, want it absent (unknown is not good)", got)
			}
			if len(r.Unknown) != 1 || r.Unknown[0] != TTFT || r.HasBurnRate || r.HasGoodputTokens {
				t.Errorf("unknown %v, burn %v, goodput %v: want ttft unknown and no burn or goodput", r.Unknown, r.HasBurnRate, r.HasGoodputTokens)
			}
		}},
		{"idle window: no SLOs, no quantiles", idle, []SLO{interactive}, func(t *testing.T, rep WindowReport) {
			if len(rep.SLOs) != 0 || len(rep.Quantiles) != 0 || rep.Requests[E2E] != 0 {
				t.Errorf("report = %+v", rep)
			}
			if !rep.HasRequestRate || rep.RequestsPerSecond != 0 {
				t.Errorf("request rate %v %v, want a known 0", rep.HasRequestRate, rep.RequestsPerSecond)
			}
		}},
		{"zero-length window: nothing", zero, []SLO{interactive}, func(t *testing.T, rep WindowReport) {
			if len(rep.SLOs) != 0 || len(rep.Requests) != 0 || rep.HasThroughput || rep.HasRequestRate || len(rep.Concurrency) != 0 {
				t.Errorf("report = %+v", rep)
			}
		}},
		{"ITL-only SLO: all is the share of good gaps", itlOnly, []SLO{itlSLO}, func(t *testing.T, rep WindowReport) {
			r := rep.SLOs[0]
			if !nearB(r.Objectives[AllKey], Exact(0.9)) || !nearB(r.GoodRequests[AllKey], Exact(0.9*95)) || !nearB(r.GoodRequests["itl"], Exact(900)) {
				t.Errorf("result = %+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := EvaluateWindow(tt.w, tt.slos, Options{Quantiles: []float64{0.5, 0.9, 0.99}})
			checkReport(t, rep)
			tt.check(t, rep)
		})
	}
}

// checkReport fails on any NaN or broken invariant in a report: bounds in
// order, ratios in [0, 1], quantiles non-decreasing in q.
func checkReport(t *testing.T, rep WindowReport) {
	t.Helper()
	for m, qs := range rep.Quantiles {
		for i, q := range qs {
			checkBounded(t, "quantile "+string(m), q.Bounded)
			if i > 0 && q.Q >= qs[i-1].Q && (q.Estimate < qs[i-1].Estimate || q.Lower < qs[i-1].Lower || q.Upper < qs[i-1].Upper) {
				t.Fatalf("%s: quantiles decrease from %+v to %+v", m, qs[i-1], q)
			}
		}
	}
	for _, v := range []float64{rep.GenerationTokensPerSecond, rep.PromptTokensPerSecond, rep.RequestsPerSecond} {
		if math.IsNaN(v) || v < 0 {
			t.Fatalf("rate %v", v)
		}
	}
	for s, c := range rep.Concurrency {
		if math.IsNaN(c.Predicted) || math.IsNaN(c.Observed) {
			t.Fatalf("concurrency %s: %+v", s, c)
		}
	}
	for _, r := range rep.SLOs {
		for k, b := range r.Objectives {
			checkBounded(t, r.Name+" "+k, b)
			if b.Lower < 0 || b.Upper > 1+1e-12 {
				t.Fatalf("%s %s: ratio out of [0, 1]: %+v", r.Name, k, b)
			}
		}
		for k, b := range r.GoodRequests {
			checkBounded(t, r.Name+" good "+k, b)
		}
		if g := r.GoodRequests[AllKey]; g.Upper > r.Requests*(1+1e-12) {
			t.Fatalf("%s: all good %+v > requests %v", r.Name, g, r.Requests)
		}
		checkBounded(t, r.Name+" goodput tokens", r.GoodputTokensPerSecond)
		checkBounded(t, r.Name+" goodput requests", r.GoodputRequestsPerSecond)
		if r.HasBurnRate {
			checkBounded(t, r.Name+" burn", r.BurnRate)
		}
	}
}

// BenchmarkEvaluateWindow measures one window with two SLOs and four
// quantiles per metric: the daemon's work per target, window and scrape.
func BenchmarkEvaluateWindow(b *testing.B) {
	w := busyWindow()
	slos := []SLO{interactive, {Name: "e2e", Objectives: []Objective{{E2E, 7}}, Goal: 0.95}}
	opts := Options{Quantiles: []float64{0.5, 0.9, 0.95, 0.99}}
	for b.Loop() {
		EvaluateWindow(w, slos, opts)
	}
}

// TestITLOnlySLOWithoutITLHistogram: with no ITL histogram an ITL-only SLO
// has no "all" (and no burn rate) instead of an invented exact 100%.
func TestITLOnlySLOWithoutITLHistogram(t *testing.T) {
	w := busyWindow() // no ITL histogram
	rep := EvaluateWindow(w, []SLO{{Name: "gaps", Objectives: []Objective{{ITL, 0.05}}, Goal: 0.99}}, Options{})
	if len(rep.SLOs) != 1 {
		t.Fatalf("got %d SLO results", len(rep.SLOs))
	}
	r := rep.SLOs[0]
	if _, ok := r.Objectives[AllKey]; ok || r.HasBurnRate {
		t.Errorf("ITL-only SLO without ITL data: all=%v burn=%v (has %v), want absent", r.Objectives[AllKey], r.BurnRate, r.HasBurnRate)
	}
}

// TestEvaluateWindowAborted checks that the engine's own aborted count is
// reported as scraped, only when the target has it, never negative or NaN,
// and that it touches no SLO number.
func TestEvaluateWindowAborted(t *testing.T) {
	base := EvaluateWindow(busyWindow(), []SLO{interactive}, Options{})
	if base.HasAborted || base.Aborted != 0 {
		t.Errorf("aborted %v (has %v) without the counter", base.Aborted, base.HasAborted)
	}
	tests := []struct {
		name    string
		v       float64
		want    float64
		wantHas bool
	}{
		{"counted", 7, 7, true},
		{"zero is a count", 0, 0, true},
		{"negative float noise clamps to 0", -1e-12, 0, true},
		{"NaN is unknown", math.NaN(), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := busyWindow()
			w.RequestAborted, w.HasRequestAborted = tt.v, true
			rep := EvaluateWindow(w, []SLO{interactive}, Options{})
			checkReport(t, rep)
			if rep.Aborted != tt.want || rep.HasAborted != tt.wantHas {
				t.Errorf("aborted %v (has %v), want %v (has %v)", rep.Aborted, rep.HasAborted, tt.want, tt.wantHas)
			}
			if got, want := rep.SLOs[0], base.SLOs[0]; !nearB(got.Objectives[AllKey], want.Objectives[AllKey]) || got.Requests != want.Requests {
				t.Errorf("the aborted count changed the SLO: %+v, was %+v", got, want)
			}
		})
	}
}

// TestWindowReportClone: writing into a clone's maps and SLO results
// leaves the original report as it was.
func TestWindowReportClone(t *testing.T) {
	rep := EvaluateWindow(busyWindow(), []SLO{interactive}, Options{Quantiles: []float64{0.5}})
	want := EvaluateWindow(busyWindow(), []SLO{interactive}, Options{Quantiles: []float64{0.5}})
	c := rep.Clone()
	c.Requests[TTFT], c.Quantiles[TTFT], c.Concurrency[StageTotal] = 1, nil, Concurrency{}
	c.SLOs[0].Name, c.SLOs[0].Objectives[AllKey], c.SLOs[0].GoodRequests[string(TTFT)] = "x", Exact(0), Exact(0)
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("writing into the clone changed the original:\n%+v\nwant\n%+v", rep, want)
	}
}

// EvaluateWindow is the whole-window evaluation, Evaluate without a ledger.
func EvaluateWindow(w Window, slos []SLO, opts Options) WindowReport {
	return Evaluate(w, slos, nil, opts)
}
