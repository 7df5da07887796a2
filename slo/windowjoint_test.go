package slo

import (
	"maps"
	"testing"
)

// jointResult evaluates s over w with the ledger's joint j and returns its
// result.
func jointResult(t *testing.T, w Window, s SLO, j *Joint) SLOResult {
	t.Helper()
	rep := Evaluate(w, []SLO{s}, []*Joint{j}, Options{})
	if len(rep.SLOs) != 1 {
		t.Fatalf("SLOs = %+v, want one", rep.SLOs)
	}
	return rep.SLOs[0]
}

// busyJoint is a ledger's joint over busyWindow's scrapes, with goods as
// its per-objective sums.
func busyJoint(finished float64, goods ...ObjectiveGood) *Joint {
	w := busyWindow()
	return &Joint{Start: w.Start, End: w.End, Finished: finished, Good: Bounded{Lower: 70, Upper: 80, Estimate: 75}, Objectives: goods}
}

// TestJointObjectivesNarrow: the ledger's per-objective sums narrow the
// window's per-objective counts while it is evaluated. busyWindow has 95
// finishers (e2e, and TPOT's own count) and 100 first tokens; at TPOT 0.07
// (between the edges 0.05 and 0.1) the histogram bounds the good finishers
// to [85, 95]. TTFT's good finishers become the ledger's alone and its
// attainment (over first tokens) stays the histogram's; TPOT's become the
// intersection, with the ledger's estimate moved into it, and its
// attainment (TPOT counts the same 95 finishers) the intersection with
// that count over 95.
func TestJointObjectivesNarrow(t *testing.T) {
	s := SLO{Name: "s", Objectives: []Objective{{TTFT, 0.5}, {TPOT, 0.07}, {ITL, 0.05}}, Goal: 0.99}
	w := busyWindow()
	w.Latency[ITL] = hist(10, []float64{0.025, 0.05, 0.1, inf}, 300, 900, 1000, 1000)
	base := jointResult(t, w, s, busyJoint(95))
	if got, want := base.GoodRequests[string(TPOT)], (Bounded{Lower: 85, Upper: 95}); got.Lower != want.Lower || got.Upper != want.Upper {
		t.Fatalf("TPOT good without the ledger's sums = %+v, want [85, 95]", got)
	}
	ttft := Bounded{Lower: 60, Upper: 70, Estimate: 65}
	for _, c := range []struct {
		name   string
		tpot   Bounded
		narrow Bounded // TPOT's good finishers after narrowing
	}{
		{"inside", Bounded{Lower: 88, Upper: 93, Estimate: 90}, Bounded{Lower: 88, Upper: 93, Estimate: 90}},
		{"overlapping", Bounded{Lower: 80, Upper: 90, Estimate: 86}, Bounded{Lower: 85, Upper: 90, Estimate: 86}},
		{"estimate below", Bounded{Lower: 80, Upper: 90, Estimate: 82}, Bounded{Lower: 85, Upper: 90, Estimate: 85}},
	} {
		r := jointResult(t, w, s, busyJoint(95, ObjectiveGood{Objective{TTFT, 0.5}, ttft}, ObjectiveGood{Objective{TPOT, 0.07}, c.tpot}))
		if got := r.GoodRequests[string(TTFT)]; got != ttft {
			t.Errorf("%s: TTFT good = %+v, want the ledger's %+v", c.name, got, ttft)
		}
		if got, want := r.Objectives[string(TTFT)], base.Objectives[string(TTFT)]; got != want {
			t.Errorf("%s: TTFT attainment = %+v, want the histogram's %+v", c.name, got, want)
		}
		if got := r.GoodRequests[string(TPOT)]; got != c.narrow {
			t.Errorf("%s: TPOT good = %+v, want %+v", c.name, got, c.narrow)
		}
		if got, want := r.Objectives[string(TPOT)], base.Objectives[string(TPOT)].Intersect(Divide(c.narrow, 95)); got != want {
			t.Errorf("%s: TPOT attainment = %+v, want %+v", c.name, got, want)
		}
		for _, k := range []string{string(ITL), AllKey} {
			if r.GoodRequests[k] != base.GoodRequests[k] || r.Objectives[k] != base.Objectives[k] {
				t.Errorf("%s: %s moved: %+v %+v, want %+v %+v", c.name, k, r.GoodRequests[k], r.Objectives[k], base.GoodRequests[k], base.Objectives[k])
			}
		}
	}
}

// TestJointObjectivesNarrowOnlyTheSameFinishers: sums over other requests
// than the window's finishers narrow nothing, and an attainment narrows
// only when its histogram counts exactly those finishers.
func TestJointObjectivesNarrowOnlyTheSameFinishers(t *testing.T) {
	s := SLO{Name: "s", Objectives: []Objective{{TTFT, 0.5}, {TPOT, 0.07}}, Goal: 0.99}
	goods := []ObjectiveGood{{Objective{TTFT, 0.5}, Bounded{Lower: 60, Upper: 70, Estimate: 65}}, {Objective{TPOT, 0.07}, Bounded{Lower: 88, Upper: 93, Estimate: 90}}}
	same := func(t *testing.T, what string, w Window, finished float64) {
		t.Helper()
		r, base := jointResult(t, w, s, busyJoint(finished, goods...)), jointResult(t, w, s, busyJoint(finished))
		if !maps.Equal(r.GoodRequests, base.GoodRequests) || !maps.Equal(r.Objectives, base.Objectives) {
			t.Errorf("%s: narrowed to %+v %+v, want %+v %+v", what, r.GoodRequests, r.Objectives, base.GoodRequests, base.Objectives)
		}
	}
	same(t, "94 judged finishers of 95", busyWindow(), 94)
	// Without e2e no count says TPOT's 95 are the finishers (a server may
	// observe a histogram elsewhere than at the finish): the window
	// judges no SLO, and nothing is narrowed.
	noE2E := busyWindow()
	delete(noE2E.Latency, E2E)
	if rep := Evaluate(noE2E, []SLO{s}, []*Joint{busyJoint(95, goods...)}, Options{}); len(rep.SLOs) != 0 {
		t.Errorf("no e2e histogram: SLOs judged %+v, want none", rep.SLOs)
	}

	// TPOT's histogram counts one request more than the 95 finishers: its
	// good count narrows, its attainment (over 96) does not.
	w := busyWindow()
	w.Latency[TPOT] = hist(3.5, []float64{0.025, 0.05, 0.1, inf}, 40, 85, 96, 96)
	r, base := jointResult(t, w, s, busyJoint(95, goods...)), jointResult(t, w, s, busyJoint(95))
	if got, want := r.GoodRequests[string(TPOT)], base.GoodRequests[string(TPOT)].Intersect(goods[1].Good); got.Lower != want.Lower || got.Upper != want.Upper {
		t.Errorf("TPOT good over 96 = %+v, want %+v", got, want)
	}
	if got, want := r.Objectives[string(TPOT)], base.Objectives[string(TPOT)]; got != want {
		t.Errorf("TPOT attainment over 96 = %+v, want the histogram's %+v", got, want)
	}
}

// TestJointObjectivesDuplicateMetric: an SLO naming TPOT twice keeps one
// entry for it, the last objective's, so only the last sum narrows it.
func TestJointObjectivesDuplicateMetric(t *testing.T) {
	s := SLO{Name: "s", Objectives: []Objective{{TPOT, 0.07}, {TPOT, 0.2}}, Goal: 0.99}
	w := busyWindow()
	w.Latency[TPOT] = hist(3.5, []float64{0.025, 0.05, 0.1, 0.5, inf}, 40, 85, 90, 95, 95)
	base := jointResult(t, w, s, busyJoint(95))
	if got := base.GoodRequests[string(TPOT)]; got.Lower != 90 || got.Upper != 95 {
		t.Fatalf("TPOT good at 0.2 = %+v, want [90, 95]", got)
	}
	last := Bounded{Lower: 92, Upper: 94, Estimate: 93}
	r := jointResult(t, w, s, busyJoint(95,
		ObjectiveGood{Objective{TPOT, 0.07}, Bounded{Lower: 85, Upper: 86, Estimate: 85}},
		ObjectiveGood{Objective{TPOT, 0.2}, last}))
	if got := r.GoodRequests[string(TPOT)]; got != last {
		t.Errorf("TPOT good = %+v, want the last objective's %+v", got, last)
	}
}
