package online

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// boundedDay is a learner state of windows whose load ramps from 1 to 7
// req/s and back to 2 on a server whose attainment falls below 0.95 past 5.
func boundedDay(n int) capacity.LearnerState {
	rng := rand.New(rand.NewPCG(5, 5))
	var st capacity.LearnerState
	for k := range n {
		load := 1 + 6*float64(k)/120
		if k > 120 {
			load = 7 - 5*float64(k-120)/float64(max(1, n-120))
		}
		att := 0.99
		if load > 5 {
			att = 0.99 - 0.6*(load-5)/5
		}
		n := math.Round(load * 120)
		good := 0.0
		for range int(n) {
			if rng.Float64() < att {
				good++
			}
		}
		s := start.Add(time.Duration(k) * 2 * time.Minute)
		st.Windows = append(st.Windows, capacity.Window{Start: s, End: s.Add(2 * time.Minute), Arrivals: n, Recent: load, Finished: n, Known: true,
			Mixed: true, PromptTokens: 500 * n, OutputTokens: 200 * n, InFlight: load * 480,
			Good: slo.Bounded{Estimate: good, Lower: math.Max(0, good-n/100), Upper: math.Min(n, good+n/100)}})
	}
	return st
}

// TestBoundedEstimatesRefitEveryHalfHour: a bounded estimate is refreshed
// (the knee kept, the load moved on) when a window closes less than
// RefitEvery after its fit, and fitted afresh after; nothing changes when
// no window closed.
func TestBoundedEstimatesRefitEveryHalfHour(t *testing.T) {
	cfg := capacity.DefaultConfig(0.95)
	full := boundedDay(200)
	l, err := capacity.RestoreLearner(cfg, capacity.LearnerState{Windows: full.Windows[:180]})
	if err != nil {
		t.Fatal(err)
	}
	e := &entry{learner: l, def: "d", goal: 0.95}
	t0 := full.Windows[179].End
	e.update(t0)
	if e.est.Kind != capacity.Bounded || !e.fittedAt.Equal(t0) {
		t.Fatalf("first update: %s fitted at %v, want bounded at %v", e.est.Kind, e.fittedAt, t0)
	}
	knee := e.est.Requests
	e.update(t0.Add(time.Minute)) // no window closed
	if !e.fittedAt.Equal(t0) || e.est.Requests != knee {
		t.Fatal("an update without a new window changed the estimate")
	}
	// The learner as it is after window k closed.
	add := func(k int) time.Time {
		w := full.Windows[k]
		e.learner, _ = capacity.RestoreLearner(cfg, capacity.LearnerState{Windows: full.Windows[:k+1]})
		return w.End
	}
	at := add(185)
	e.update(at)
	if !e.fittedAt.Equal(t0) || e.est.Requests != knee || e.est.Windows != 180 {
		t.Fatalf("ten minutes after the fit: fitted at %v, knee %+v, %d windows; want the refreshed fit of %v", e.fittedAt, e.est.Requests, e.est.Windows, t0)
	}
	if want := e.learner.Refresh(e.est, at); e.est.Load != want.Load {
		t.Fatalf("refreshed load %v, want %v", e.est.Load, want.Load)
	}
	at = add(195)
	e.update(at)
	if !e.fittedAt.Equal(at) || e.est.Windows == 180 {
		t.Fatalf("thirty minutes after the fit: fitted at %v with %d windows, want a fresh fit at %v", e.fittedAt, e.est.Windows, at)
	}
}

// TestFullHistoryKeepsUpdating: once a learner holds a full History, each
// window that closes pushes the oldest out and the count stays the same;
// the estimate must still be refreshed between fits and fitted afresh
// every RefitEvery, not frozen at the last fit before the history filled.
func TestFullHistoryKeepsUpdating(t *testing.T) {
	cfg := capacity.DefaultConfig(0.95)
	cfg.History = 2 * time.Hour
	full := boundedDay(200)
	// The learner as it is after window k closed: the last 61 windows
	// (two hours of two-minute windows, both ends kept).
	learnerAt := func(k int) (*capacity.Learner, time.Time) {
		l, err := capacity.RestoreLearner(cfg, capacity.LearnerState{Windows: full.Windows[k-60 : k+1]})
		if err != nil {
			t.Fatal(err)
		}
		return l, full.Windows[k].End
	}
	l, t0 := learnerAt(150)
	e := &entry{learner: l, def: "d", goal: 0.95}
	e.update(t0)
	if e.est.Kind != capacity.Bounded || !e.fittedAt.Equal(t0) {
		t.Fatalf("first update: %s fitted at %v, want bounded at %v", e.est.Kind, e.fittedAt, t0)
	}
	count, load := len(l.Windows()), e.est.Load
	var at time.Time
	e.learner, at = learnerAt(155)
	if len(e.learner.Windows()) != count {
		t.Fatalf("%d windows after five more closed, want %d (a full history)", len(e.learner.Windows()), count)
	}
	e.update(at)
	if !e.fittedAt.Equal(t0) {
		t.Fatalf("ten minutes after the fit: fitted at %v, want the fit of %v refreshed", e.fittedAt, t0)
	}
	if want := e.learner.Refresh(e.est, at).Load; e.est.Load != want || e.est.Load == load {
		t.Fatalf("refreshed load %v (at the fit %v), want %v", e.est.Load, load, want)
	}
	e.learner, at = learnerAt(165)
	e.update(at)
	if !e.fittedAt.Equal(at) || !e.est.Since.Equal(full.Windows[105].Start) {
		t.Fatalf("thirty minutes after the fit: fitted at %v from %v, want a fresh fit at %v from %v", e.fittedAt, e.est.Since, at, full.Windows[105].Start)
	}
}
