package slo

import (
	"math"
	"testing"
	"time"
)

// gateSLO is a two-objective SLO at goal 0.99 under a population policy.
func gateSLO(p Population) SLO {
	return SLO{Name: "interactive", Goal: 0.99, Period: 24 * time.Hour, Abandoned: p,
		Objectives: []Objective{{Metric: TTFT, Threshold: 0.5}, {Metric: TPOT, Threshold: 0.05}}}
}

// gateResult is an SLO result over n finished requests whose TTFT and TPOT
// attainments have the given lower bounds, with abandoned requests a (nil:
// not judged interval by interval).
func gateResult(n, ttftLower, tpotLower float64, a *Bounded) SLOResult {
	r := SLOResult{Requests: n, Objectives: map[string]Bounded{
		"ttft": {Lower: ttftLower, Estimate: ttftLower, Upper: 1},
		"tpot": {Lower: tpotLower, Estimate: tpotLower, Upper: 1},
	}}
	if a != nil {
		r.Abandoned, r.HasAbandoned = *a, true
	}
	return r
}

// gateSLOs is gateSLO with a policy for rejected requests too.
func gateSLOs(abandoned, rejected Population) SLO {
	s := gateSLO(abandoned)
	s.Rejected = rejected
	return s
}

// rejectedResult is gateResult with every objective met by the n finished
// requests and rejected requests turned away at admission.
func rejectedResult(n, rejected float64, a *Bounded) SLOResult {
	r := gateResult(n, 1, 1, a)
	r.Rejected, r.HasRejected = rejected, true
	return r
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// seen is a window whose first tokens and running gauge at its edges say
// first − n + runStart − runEnd requests were abandoned, n finishing.
func seen(first, runStart, runEnd float64) Window {
	return Window{
		Latency: map[Metric]Histogram{TTFT: {Edges: []float64{0.5, math.Inf(1)}, Counts: []float64{first, first}}},
		Running: Gauge{Known: true, AtStart: runStart, AtEnd: runEnd},
	}
}

// TestObservedBurnFollowsThePopulation: the observed burn rate counts the
// abandoned requests bad, at the window's estimate (first tokens − finished
// + running at the start − running at the end, as the rules count them,
// not the ledger's clamped estimate), under `abandoned: bad` only, and the
// rejected ones under `rejected: bad`; reads the joint from the objectives'
// bad shares taken as independent (a joint breach neither shows alone
// pages, and a request bad on both counts once, not twice as in their sum);
// and never counts requests whose bound is unbounded.
func TestObservedBurnFollowsThePopulation(t *testing.T) {
	fifteen := Bounded{Lower: 2, Estimate: 15, Upper: 38}
	unbounded := Bounded{Lower: 3, Estimate: 20, Upper: math.Inf(1)}
	for _, c := range []struct {
		name     string
		s        SLO
		r        SLOResult
		w        Window
		observed float64
	}{
		{"cancellations alone, abandoned bad", gateSLO(AbandonedBad), gateResult(85, 1, 1, &fifteen), seen(100, 7, 7), 15},
		{"the window's running gauge, not the ledger's estimate: 25 = 100 - 80 + 9 - 4 of 105", gateSLO(AbandonedBad), gateResult(80, 1, 1, &fifteen), seen(100, 9, 4), 2500.0 / 105},
		{"cancellations alone, abandoned excluded", gateSLO(AbandonedExcluded), gateResult(85, 1, 1, &fifteen), seen(100, 7, 7), 0},
		{"joint breach, 8% and 8%: 1 - 0.92·0.92", gateSLO(AbandonedBad), gateResult(100, 0.92, 0.92, &Bounded{}), seen(100, 3, 3), 15.36},
		{"both, the 5 slow first tokens the 10 abandoned streams': ((1 - 1·0.95)·90 + 10) / 100", gateSLO(AbandonedBad), gateResult(90, 0.95, 0.95, &Bounded{Lower: 4, Estimate: 10, Upper: 30}), seen(100, 0, 0), 14.5},
		{"both, 15 slow first tokens, 5 beyond the abandoned streams': ((1 - (1 - 5/90)·0.95)·90 + 10) / 100", gateSLO(AbandonedBad), gateResult(90, 0.85, 0.95, &Bounded{Lower: 4, Estimate: 10, Upper: 30}), seen(100, 0, 0), 19.25},
		{"abandoned excluded, 15 slow first tokens, 10 abandoned: (1 - (1 - 5/90)·0.95) of the finishers", gateSLO(AbandonedExcluded), gateResult(90, 0.85, 0.95, &Bounded{Lower: 4, Estimate: 10, Upper: 30}), seen(100, 0, 0), 100 * (1 - (1-5.0/90)*0.95)},
		{"more finished than first tokens: none abandoned", gateSLO(AbandonedBad), gateResult(100, 1, 1, &fifteen), seen(90, 2, 5), 0},
		{"no running gauge: the ledger's lower bound only", gateSLO(AbandonedBad), gateResult(97, 1, 1, &unbounded), Window{}, 3},
		{"no ledger: no abandoned", gateSLO(AbandonedBad), gateResult(100, 0.99, 1, nil), seen(120, 0, 0), 1},
		{"joint bad share 1 - 0.2·0.3, where the sum would exceed 1", gateSLO(AbandonedExcluded), gateResult(10, 0.2, 0.3, nil), Window{}, 94},
		{"rejected bad, abandoned excluded: (0·90 + 10) / 100", gateSLOs(AbandonedExcluded, RejectedBad), rejectedResult(90, 10, &fifteen), seen(105, 0, 0), 10},
		{"rejected and abandoned bad: (0·75 + 15 + 10) / 100", gateSLOs(AbandonedBad, RejectedBad), rejectedResult(75, 10, &fifteen), seen(90, 0, 0), 25},
		{"rejected excluded: abandoned only", gateSLOs(AbandonedBad, RejectedExcluded), rejectedResult(85, 10, &fifteen), seen(100, 0, 0), 15},
	} {
		ev := EvidenceOf(c.r, c.s, c.w)
		if !closeTo(ev.Observed, c.observed) {
			t.Errorf("%s: observed burn %v, want %v", c.name, ev.Observed, c.observed)
		}
	}
}

// TestEvidenceCarriesItsCounts: the evidence carries the window's first
// tokens and its abandoned streams, at the estimate the observed burn counts
// them at, under either policy (under `abandoned: excluded` they are in no
// unserved count), beside the ledger's bracket of them.
func TestEvidenceCarriesItsCounts(t *testing.T) {
	fifteen := Bounded{Lower: 2, Estimate: 14, Upper: 38}
	for _, c := range []struct {
		p                          Population
		w                          Window
		first, abandoned, unserved float64
	}{
		{AbandonedBad, seen(100, 7, 7), 100, 15, 15},
		{AbandonedExcluded, seen(100, 7, 7), 100, 15, 0},
		{AbandonedBad, seen(100, 9, 4), 100, 20, 20},
		{AbandonedBad, Window{}, 0, 2, 2},
	} {
		ev := EvidenceOf(gateResult(85, 1, 1, &fifteen), gateSLO(c.p), c.w)
		if ev.Requests != 85 {
			t.Errorf("policy %v: evidence of %v finished requests, want 85", c.p, ev.Requests)
		}
		if ev.FirstTokens != c.first || ev.Abandoned != c.abandoned || ev.Unserved != c.unserved || ev.Ledger != fifteen {
			t.Errorf("policy %v, window %+v: first tokens %v, abandoned %v, unserved %v, ledger %+v; want %v, %v, %v, %+v",
				c.p, c.w.Running, ev.FirstTokens, ev.Abandoned, ev.Unserved, ev.Ledger, c.first, c.abandoned, c.unserved, fifteen)
		}
	}
}

// TestFinisherTTFTShare: the TTFT bad share charged to the finished
// requests is the slow first tokens beyond the abandoned streams' over the
// other first tokens; never above the share over every first token, never
// below what the counts prove the other requests' (t·f − a of them, over
// at most f − a), and the share itself without abandoned streams or with
// no first token left.
func TestFinisherTTFTShare(t *testing.T) {
	for _, c := range []struct {
		t, f, a, want float64
	}{
		{0.05, 100, 10, 0},
		{0.15, 100, 10, 5.0 / 90},
		{0.15, 100, 0, 0.15},
		{0.15, 100, 100, 0.15},
		{0.15, 100, 120, 0.15},
		{1, 100, 10, 1},
		{0, 100, 10, 0},
	} {
		got := FinisherTTFTShare(c.t, c.f, c.a)
		if !closeTo(got, c.want) {
			t.Errorf("FinisherTTFTShare(%v, %v, %v) = %v, want %v", c.t, c.f, c.a, got, c.want)
		}
	}
	for ti := 0; ti <= 20; ti++ {
		for ai := 0; ai <= 20; ai++ {
			share, f, a := float64(ti)/20, 100.0, float64(ai)*5
			got := FinisherTTFTShare(share, f, a)
			if got > share+1e-12 {
				t.Fatalf("t %v, a %v: charged %v, above the share over every first token", share, a, got)
			}
			if a < f && got*(f-a) < share*f-a-1e-9 {
				t.Fatalf("t %v, a %v: charged %v of %v, fewer than the %v slow first tokens the abandoned streams cannot hold", share, a, got, f-a, share*f-a)
			}
		}
	}
}
