package pipeline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// gateSLO is a two-objective SLO at goal 0.99 under a population policy.
func gateSLO(p slo.Population) slo.SLO {
	return slo.SLO{Name: "interactive", Goal: 0.99, Period: 24 * time.Hour, Abandoned: p,
		Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
}

// gateResult is an SLO result over n finished requests whose TTFT and TPOT
// attainments have the given lower bounds, with abandoned requests a (nil:
// not judged interval by interval).
func gateResult(n, ttftLower, tpotLower float64, a *slo.Bounded) slo.SLOResult {
	r := slo.SLOResult{Requests: n, Objectives: map[string]slo.Bounded{
		"ttft": {Lower: ttftLower, Estimate: ttftLower, Upper: 1},
		"tpot": {Lower: tpotLower, Estimate: tpotLower, Upper: 1},
	}}
	if a != nil {
		r.Abandoned, r.HasAbandoned = *a, true
	}
	return r
}

// gateSLOs is gateSLO with a policy for rejected requests too.
func gateSLOs(abandoned, rejected slo.Population) slo.SLO {
	s := gateSLO(abandoned)
	s.Rejected = rejected
	return s
}

// rejectedResult is gateResult with every objective met by the n finished
// requests and rejected requests turned away at admission.
func rejectedResult(n, rejected float64, a *slo.Bounded) slo.SLOResult {
	r := gateResult(n, 1, 1, a)
	r.Rejected, r.HasRejected = rejected, true
	return r
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// seen is a window whose first tokens and running gauge at its edges say
// first − n + runStart − runEnd requests were abandoned, n finishing.
func seen(first, runStart, runEnd float64) slo.Window {
	return slo.Window{
		Latency: map[slo.Metric]slo.Histogram{slo.TTFT: {Edges: []float64{0.5, math.Inf(1)}, Counts: []float64{first, first}}},
		Running: slo.Gauge{Known: true, AtStart: runStart, AtEnd: runEnd},
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
	fifteen := slo.Bounded{Lower: 2, Estimate: 15, Upper: 38}
	unbounded := slo.Bounded{Lower: 3, Estimate: 20, Upper: math.Inf(1)}
	for _, c := range []struct {
		name     string
		s        slo.SLO
		r        slo.SLOResult
		w        slo.Window
		observed float64
	}{
		{"cancellations alone, abandoned bad", gateSLO(slo.AbandonedBad), gateResult(85, 1, 1, &fifteen), seen(100, 7, 7), 15},
		{"the window's running gauge, not the ledger's estimate: 25 = 100 - 80 + 9 - 4 of 105", gateSLO(slo.AbandonedBad), gateResult(80, 1, 1, &fifteen), seen(100, 9, 4), 2500.0 / 105},
		{"cancellations alone, abandoned excluded", gateSLO(slo.AbandonedExcluded), gateResult(85, 1, 1, &fifteen), seen(100, 7, 7), 0},
		{"joint breach, 8% and 8%: 1 - 0.92·0.92", gateSLO(slo.AbandonedBad), gateResult(100, 0.92, 0.92, &slo.Bounded{}), seen(100, 3, 3), 15.36},
		{"both: ((1 - 0.95·0.95)·90 + 10) / 100", gateSLO(slo.AbandonedBad), gateResult(90, 0.95, 0.95, &slo.Bounded{Lower: 4, Estimate: 10, Upper: 30}), seen(100, 0, 0), 18.775},
		{"more finished than first tokens: none abandoned", gateSLO(slo.AbandonedBad), gateResult(100, 1, 1, &fifteen), seen(90, 2, 5), 0},
		{"no running gauge: the ledger's lower bound only", gateSLO(slo.AbandonedBad), gateResult(97, 1, 1, &unbounded), slo.Window{}, 3},
		{"no ledger: no abandoned", gateSLO(slo.AbandonedBad), gateResult(100, 0.99, 1, nil), seen(120, 0, 0), 1},
		{"joint bad share 1 - 0.2·0.3, where the sum would exceed 1", gateSLO(slo.AbandonedExcluded), gateResult(10, 0.2, 0.3, nil), slo.Window{}, 94},
		{"rejected bad, abandoned excluded: (0·90 + 10) / 100", gateSLOs(slo.AbandonedExcluded, slo.RejectedBad), rejectedResult(90, 10, &fifteen), seen(105, 0, 0), 10},
		{"rejected and abandoned bad: (0·75 + 15 + 10) / 100", gateSLOs(slo.AbandonedBad, slo.RejectedBad), rejectedResult(75, 10, &fifteen), seen(90, 0, 0), 25},
		{"rejected excluded: abandoned only", gateSLOs(slo.AbandonedBad, slo.RejectedExcluded), rejectedResult(85, 10, &fifteen), seen(100, 0, 0), 15},
	} {
		ev := objectiveEvidence(c.r, c.s, c.w)
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
	fifteen := slo.Bounded{Lower: 2, Estimate: 14, Upper: 38}
	for _, c := range []struct {
		p                          slo.Population
		w                          slo.Window
		first, abandoned, unserved float64
	}{
		{slo.AbandonedBad, seen(100, 7, 7), 100, 15, 15},
		{slo.AbandonedExcluded, seen(100, 7, 7), 100, 15, 0},
		{slo.AbandonedBad, seen(100, 9, 4), 100, 20, 20},
		{slo.AbandonedBad, slo.Window{}, 0, 2, 2},
	} {
		ev := objectiveEvidence(gateResult(85, 1, 1, &fifteen), gateSLO(c.p), c.w)
		if ev.FirstTokens != c.first || ev.Abandoned != c.abandoned || ev.Unserved != c.unserved || ev.Ledger != fifteen {
			t.Errorf("policy %v, window %+v: first tokens %v, abandoned %v, unserved %v, ledger %+v; want %v, %v, %v, %+v",
				c.p, c.w.Running, ev.FirstTokens, ev.Abandoned, ev.Unserved, ev.Ledger, c.first, c.abandoned, c.unserved, fifteen)
		}
	}
}

// TestGateNeedsEvidence: the page needs the upper bound and the evidence
// (the larger of the lower bound and the observed burn) above the factor in
// both windows; a vacuous upper bound with nothing seen bad never pages,
// and a proven lower bound pages even when the observed burn reads less.
func TestGateNeedsEvidence(t *testing.T) {
	check := func(long, short slo.Bounded, obsLong, obsShort float64) BurnCheck {
		return BurnCheck{Alert: BurnAlert{Factor: 14.4}, Known: true, Long: long, Short: short,
			LongEvidence: Evidence{Observed: obsLong}, ShortEvidence: Evidence{Observed: obsShort}}
	}
	breach := slo.Bounded{Lower: 10, Estimate: 17, Upper: 25}
	for _, c := range []struct {
		name string
		c    BurnCheck
		want bool
	}{
		{"observed above in both", check(breach, breach, 17, 16), true},
		{"vacuous upper bound, nothing seen bad", check(slo.Bounded{Upper: 95}, slo.Bounded{Upper: 95}, 0, 0), false},
		{"short window under the factor", check(breach, breach, 17, 14), false},
		{"upper bound under the factor", check(slo.Bounded{Lower: 1, Estimate: 5, Upper: 14}, breach, 20, 20), false},
		{"proven by the lower bound", check(slo.Bounded{Lower: 15, Estimate: 18, Upper: 22}, slo.Bounded{Lower: 16, Estimate: 18, Upper: 30}, 12, 13), true},
		{"unknown", BurnCheck{Alert: BurnAlert{Factor: 14.4}, Long: breach, Short: breach, LongEvidence: Evidence{Observed: 20}, ShortEvidence: Evidence{Observed: 20}}, false},
	} {
		if got := c.c.Active(); got != c.want {
			t.Errorf("%s: active %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEvidenceAnnotationSaysWhatItRestsOn: the page's evidence annotation
// names, for each window, the objectives' bad shares and the first tokens
// TTFT's is over, the unserved requests that its observed burn rate comes
// from, and the abandoned ones among them beside the ledger's bracket.
func TestEvidenceAnnotationSaysWhatItRestsOn(t *testing.T) {
	ev := Evidence{Requests: 262, Coverage: 1, Observed: 14.94, Unserved: 45, BadShares: map[string]float64{"ttft": 0.0033, "tpot": 0},
		FirstTokens: 306, Abandoned: 45, Ledger: slo.Bounded{Lower: 29, Estimate: 45, Upper: 60}}
	c := BurnCheck{Alert: BurnAlert{SLO: "interactive", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 14.4},
		Known: true, Long: slo.Bounded{Lower: 10, Estimate: 15, Upper: 19}, Short: slo.Bounded{Lower: 10, Estimate: 15, Upper: 19},
		LongEvidence: ev, ShortEvidence: ev}
	got := burnCondition(map[string]string{"target": "sim"}, "m", c).annotations["evidence"]
	want := "observed 14.94 (bad tpot 0%, ttft 0.33% of 306 first tokens; unserved 45, abandoned 45 (ledger 45 [29, 60]))"
	if !strings.Contains(got, want) {
		t.Errorf("evidence annotation %q, want it to contain %q", got, want)
	}
}
