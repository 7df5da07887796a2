package capacity

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// answer is an estimate of kind with the capacity's lower end lo and the
// replica's load and trend.
func answer(kind Kind, lo, load, trend float64) Estimate {
	e := Estimate{Kind: kind, Load: load, Trend: trend, Requests: Range{Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}
	switch kind {
	case Bounded:
		e.Requests = Range{Estimate: lo * 1.1, Lower: lo, Upper: lo * 1.2}
	case LowerOnly:
		e.Requests = Range{Estimate: lo, Lower: lo, Upper: math.Inf(1)}
	}
	return e
}

// sum is SumLoad over 10 minutes, as the exporter calls it.
func sum(es []Estimate) Load { return SumLoad(es, 10*time.Minute) }

// TestReplicasCountsTheMedianLowerEnd: three bounded replicas and one still
// learning; the capacity counted is the median of the bounded lower ends
// (not their estimates, not the lowest), planned at 1 − Margin of it; the
// load is every replica's, the unknown one's too, and a flat trend
// projects nothing.
func TestReplicasCountsTheMedianLowerEnd(t *testing.T) {
	es := []Estimate{answer(Bounded, 5, 4, 0), answer(Bounded, 6, 4, 0), answer(Bounded, 4, 4, 0), answer(Unknown, 0, 3, 0)}
	n := Replicas(es, sum(es), ReplicaPolicy{Margin: 0.2, Lead: 5 * time.Minute})
	if n.Kind != Bounded || n.PerReplica != 5 || n.Planned != 4 || n.Load != 15 || n.Projected != 15 || n.Answered != 3 || n.Of != 4 {
		t.Fatalf("need = %+v, want capacity 5 (bounded) planned at 4, load 15, 3 answers of 4", n)
	}
	if n.Replicas != 15.0/4 {
		t.Fatalf("replicas = %v, want 3.75", n.Replicas)
	}
}

// TestReplicasLowerOnlyRaisesTheCapacity: a lower_only answer above the
// bounded median is the capacity counted (the SLO held there on a replica
// like the others), planned at without the margin; below it, it changes
// nothing; alone, it is the answer.
func TestReplicasLowerOnlyRaisesTheCapacity(t *testing.T) {
	p := ReplicaPolicy{Margin: 0.5}
	cases := []struct {
		es      []Estimate
		per     float64
		kind    Kind
		planned float64
	}{
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(LowerOnly, 5.5, 1, 0)}, 5.5, LowerOnly, 5.5},
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(LowerOnly, 3, 1, 0)}, 5, Bounded, 2.5},
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(Bounded, 6, 1, 0)}, 5.5, Bounded, 2.75},
		{[]Estimate{answer(LowerOnly, 3, 1, 0), answer(LowerOnly, 4, 1, 0)}, 4, LowerOnly, 4},
	}
	for _, c := range cases {
		n := Replicas(c.es, sum(c.es), p)
		if n.PerReplica != c.per || n.Kind != c.kind || n.Planned != c.planned || n.Replicas != 2/c.planned {
			t.Errorf("%+v: need %+v, want capacity %v (%s) planned at %v, replicas %v", c.es, n, c.per, c.kind, c.planned, 2/c.planned)
		}
	}
}

// TestReplicasUnknownWithoutACapacity: with no answer (or a bounded one
// under margin 1) there is no number, and the load is still said.
func TestReplicasUnknownWithoutACapacity(t *testing.T) {
	es := []Estimate{answer(Unknown, 0, 2, 0), answer(Unknown, 0, 3, 0)}
	n := Replicas(es, sum(es), DefaultReplicaPolicy())
	if !math.IsNaN(n.Replicas) || n.Kind != Unknown || n.Load != 5 || n.Answered != 0 {
		t.Fatalf("need = %+v, want NaN replicas, load 5", n)
	}
	es = []Estimate{answer(Bounded, 5, 2, 0)}
	if n := Replicas(es, sum(es), ReplicaPolicy{Margin: 1}); !math.IsNaN(n.Replicas) {
		t.Fatalf("margin 1: replicas %v, want NaN", n.Replicas)
	}
	if n := Replicas(nil, Load{}, DefaultReplicaPolicy()); !math.IsNaN(n.Replicas) || n.Of != 0 {
		t.Fatalf("no replicas: %+v", n)
	}
}

// TestReplicasProjectsARisingTrendOnly: a rising trend moves the load to
// now (half the load span) and on by the lead; a falling one moves it to
// now only, never below zero.
func TestReplicasProjectsARisingTrendOnly(t *testing.T) {
	p := ReplicaPolicy{Lead: 5 * time.Minute}
	es := []Estimate{answer(Bounded, 10, 4, 0.001), answer(Bounded, 10, 4, 0.001)}
	up := Replicas(es, sum(es), p)
	if math.Abs(up.Load-(8+0.002*300)) > 1e-12 || math.Abs(up.Projected-(8+0.002*600)) > 1e-12 {
		t.Fatalf("rising: load %v projected %v, want 8.6 and 9.2", up.Load, up.Projected)
	}
	es = []Estimate{answer(Bounded, 10, 4, -0.001)}
	down := Replicas(es, sum(es), p)
	if math.Abs(down.Load-3.7) > 1e-12 || down.Projected != down.Load {
		t.Fatalf("falling: load %v projected %v, want 3.7 both", down.Load, down.Projected)
	}
	es = []Estimate{answer(Bounded, 10, 0.1, -0.01)}
	if z := Replicas(es, sum(es), p); z.Load != 0 || z.Replicas != 0 {
		t.Fatalf("steep fall: %+v, want load 0", z)
	}
}

// TestReplicasRoundedUpKeepThePlan is the doc comment's bound over random
// fleets: ⌈Replicas⌉ replicas sharing the projected load carry at most
// the load planned per replica, and one replica fewer would carry more.
func TestReplicasRoundedUpKeepThePlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []Kind{Bounded, LowerOnly, Unknown}
	for range 2000 {
		es := make([]Estimate, 1+rng.IntN(12))
		for i := range es {
			es[i] = answer(kinds[rng.IntN(3)], 0.5+rng.Float64()*10, rng.Float64()*8, (rng.Float64()-0.5)*0.01)
		}
		p := ReplicaPolicy{Margin: rng.Float64() * 0.5, Lead: time.Duration(rng.IntN(600)) * time.Second}
		n := Replicas(es, sum(es), p)
		if n.Kind == Unknown {
			continue
		}
		k := math.Ceil(n.Replicas)
		if k > 0 && n.Projected/k > n.Planned*(1+1e-12) {
			t.Fatalf("%v replicas carry %v each, above the plan %v", k, n.Projected/k, n.Planned)
		}
		if k > 1 && n.Projected/(k-1) <= n.Planned {
			t.Fatalf("%v replicas would do: %v each, plan %v", k-1, n.Projected/(k-1), n.Planned)
		}
		if want := n.PerReplica * (1 - p.Margin); n.Kind == Bounded && math.Abs(n.Planned-want) > 1e-12 {
			t.Fatalf("bounded plan %v, want %v", n.Planned, want)
		}
	}
}

// TestReplicasOverloadedFleetScalesUp: no replica has a capacity, one saw
// the SLO missed at every load (even by the upper bounds: an overloaded
// fleet); the capacity is counted at half its lowest load, so the signal
// asks for twice the replicas that load needs, instead of going silent.
// A replica whose upper bounds reach the goal is no such evidence.
func TestReplicasOverloadedFleetScalesUp(t *testing.T) {
	missed := answer(Unknown, 0, 12, 0)
	missed.Goal = 0.95
	missed.Curve.Fit = []CurvePoint{{Load: 6, Attainment: Range{Estimate: 0.8, Lower: 0.78, Upper: 0.9}}, {Load: 7, Attainment: Range{Estimate: 0.7, Lower: 0.6, Upper: 0.8}}}
	unsure := missed
	unsure.Curve.Fit = []CurvePoint{{Load: 5, Attainment: Range{Estimate: 0.9, Lower: 0.85, Upper: 0.96}}}
	es := []Estimate{missed, unsure}
	n := Replicas(es, sum(es), DefaultReplicaPolicy())
	if !n.Missed || n.PerReplica != 3 || n.Planned != 3 || n.Replicas != 24.0/3 || n.Kind != Unknown {
		t.Fatalf("need %+v, want capacity 3 (half of 6), replicas 8", n)
	}
	es = []Estimate{unsure}
	if n := Replicas(es, sum(es), DefaultReplicaPolicy()); n.Missed || !math.IsNaN(n.Replicas) {
		t.Fatalf("upper bounds reaching the goal: %+v, want no number", n)
	}
	es = []Estimate{missed, answer(LowerOnly, 4, 0, 0)}
	if n := Replicas(es, sum(es), DefaultReplicaPolicy()); n.Missed || n.PerReplica != 4 {
		t.Fatalf("with a lower_only answer beside: %+v, want it counted", n)
	}
}

// TestReplicasSpread: the interval of a bounded need is the projected load
// over the medians of the upper ends, estimates and lower ends, without the
// margin; a lower_only need has no fewest (0) and its most is Replicas.
func TestReplicasSpread(t *testing.T) {
	es := []Estimate{answer(Bounded, 5, 4, 0), answer(Bounded, 6, 4, 0), answer(Bounded, 4, 4, 0)}
	n := Replicas(es, sum(es), ReplicaPolicy{Margin: 0.2})
	want := Range{Estimate: 12 / 5.5, Lower: 12.0 / 6, Upper: 12.0 / 5}
	if math.Abs(n.Spread.Estimate-want.Estimate) > 1e-12 || math.Abs(n.Spread.Lower-want.Lower) > 1e-12 || n.Spread.Upper != want.Upper || n.Margin != 0.2 {
		t.Fatalf("spread %+v margin %v, want %+v and 0.2", n.Spread, n.Margin, want)
	}
	if !(n.Spread.Upper < n.Replicas) {
		t.Errorf("the interval's most %v is not below the recommendation %v, which keeps the margin", n.Spread.Upper, n.Replicas)
	}
	lo := []Estimate{answer(LowerOnly, 4, 6, 0)}
	n = Replicas(lo, sum(lo), ReplicaPolicy{Margin: 0.2})
	if n.Spread != (Range{Estimate: 1.5, Lower: 0, Upper: 1.5}) || n.Margin != 0 {
		t.Errorf("lower_only spread %+v margin %v, want [0, 1.5] at 1.5 and no margin", n.Spread, n.Margin)
	}
}

// TestModelNeedsGroupsByModelAndSLO: one need per model and SLO, in the
// order each pair first appears, pooling its targets; NaN replicas for a
// pair none of whose targets has a capacity.
func TestModelNeedsGroupsByModelAndSLO(t *testing.T) {
	reps := []Report{
		{Target: "a", Model: "m2", SLO: "s", Estimate: answer(LowerOnly, 2, 1, 0)},
		{Target: "a", Model: "m1", SLO: "s", Estimate: answer(LowerOnly, 4, 3, 0)},
		{Target: "a", Model: "m3", SLO: "s", Estimate: answer(Unknown, 0, 1, 0)},
		{Target: "b", Model: "m2", SLO: "s", Estimate: answer(Unknown, 0, 2, 0)},
		{Target: "b", Model: "m1", SLO: "s", Estimate: answer(LowerOnly, 5, 6, 0)},
	}
	ns := ModelNeeds(reps, nil, DefaultReplicaPolicy())
	if len(ns) != 3 || ns[0].Model != "m2" || ns[1].Model != "m1" || ns[2].Model != "m3" || ns[0].Of != 2 || ns[1].Of != 2 {
		t.Fatalf("needs %+v, want m2 then m1, two targets each, then m3", ns)
	}
	if !math.IsNaN(ns[2].Replicas) || ns[2].Answered != 0 {
		t.Errorf("m3 needs %v replicas on %d answers, want NaN on none", ns[2].Replicas, ns[2].Answered)
	}
	if ns[0].Replicas != 3.0/2 || ns[1].Replicas != 9.0/5 || ns[1].Policy != DefaultReplicaPolicy() {
		t.Errorf("replicas %v and %v, want 1.5 and 1.8 under the default policy", ns[0].Replicas, ns[1].Replicas)
	}
}
