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

// TestReplicasCountsTheMedianLowerEnd: three bounded replicas and one still
// learning; the capacity counted is the median of the bounded lower ends
// (not their estimates, not the lowest), the load is every replica's, the
// unknown one's too, and a flat trend projects nothing.
func TestReplicasCountsTheMedianLowerEnd(t *testing.T) {
	es := []Estimate{answer(Bounded, 5, 4, 0), answer(Bounded, 6, 4, 0), answer(Bounded, 4, 4, 0), answer(Unknown, 0, 3, 0)}
	p := ReplicaPolicy{Margin: 0.2, Lead: 5 * time.Minute, LoadSpan: 10 * time.Minute}
	n := Replicas(es, p)
	if n.Kind != Bounded || n.PerReplica != 5 || n.Load != 15 || n.Projected != 15 || n.Answered != 3 || n.Of != 4 {
		t.Fatalf("need = %+v, want capacity 5 (bounded), load 15, 3 answers of 4", n)
	}
	if want := 15 / (0.8 * 5); math.Abs(n.Replicas-want) > 1e-12 {
		t.Fatalf("replicas = %v, want %v", n.Replicas, want)
	}
}

// TestReplicasLowerOnlyRaisesTheCapacity: a lower_only answer above the
// bounded median is the capacity counted (the SLO held there on a replica
// like the others); below it, it changes nothing; alone, it is the answer.
func TestReplicasLowerOnlyRaisesTheCapacity(t *testing.T) {
	p := ReplicaPolicy{}
	cases := []struct {
		es   []Estimate
		per  float64
		kind Kind
	}{
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(LowerOnly, 5.5, 1, 0)}, 5.5, LowerOnly},
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(LowerOnly, 3, 1, 0)}, 5, Bounded},
		{[]Estimate{answer(Bounded, 5, 1, 0), answer(Bounded, 6, 1, 0)}, 5.5, Bounded},
		{[]Estimate{answer(LowerOnly, 3, 1, 0), answer(LowerOnly, 4, 1, 0)}, 4, LowerOnly},
	}
	for _, c := range cases {
		n := Replicas(c.es, p)
		if n.PerReplica != c.per || n.Kind != c.kind || n.Replicas != 2/c.per {
			t.Errorf("%+v: need %+v, want capacity %v (%s), replicas %v", c.es, n, c.per, c.kind, 2/c.per)
		}
	}
}

// TestReplicasUnknownWithoutACapacity: with no answer (or margin 1) there
// is no number, and the load is still said.
func TestReplicasUnknownWithoutACapacity(t *testing.T) {
	n := Replicas([]Estimate{answer(Unknown, 0, 2, 0), answer(Unknown, 0, 3, 0)}, DefaultReplicaPolicy())
	if !math.IsNaN(n.Replicas) || n.Kind != Unknown || n.Load != 5 || n.Answered != 0 {
		t.Fatalf("need = %+v, want NaN replicas, load 5", n)
	}
	if n := Replicas([]Estimate{answer(Bounded, 5, 2, 0)}, ReplicaPolicy{Margin: 1}); !math.IsNaN(n.Replicas) {
		t.Fatalf("margin 1: replicas %v, want NaN", n.Replicas)
	}
	if n := Replicas(nil, DefaultReplicaPolicy()); !math.IsNaN(n.Replicas) || n.Of != 0 {
		t.Fatalf("no replicas: %+v", n)
	}
}

// TestReplicasProjectsARisingTrendOnly: a rising trend moves the load to
// now (half the load span) and on by the lead; a falling one moves it to
// now only, never below zero.
func TestReplicasProjectsARisingTrendOnly(t *testing.T) {
	p := ReplicaPolicy{Lead: 5 * time.Minute, LoadSpan: 10 * time.Minute}
	up := Replicas([]Estimate{answer(Bounded, 10, 4, 0.001), answer(Bounded, 10, 4, 0.001)}, p)
	if math.Abs(up.Load-(8+0.002*300)) > 1e-12 || math.Abs(up.Projected-(8+0.002*600)) > 1e-12 {
		t.Fatalf("rising: load %v projected %v, want 8.6 and 9.2", up.Load, up.Projected)
	}
	down := Replicas([]Estimate{answer(Bounded, 10, 4, -0.001)}, p)
	if math.Abs(down.Load-3.7) > 1e-12 || down.Projected != down.Load {
		t.Fatalf("falling: load %v projected %v, want 3.7 both", down.Load, down.Projected)
	}
	if z := Replicas([]Estimate{answer(Bounded, 10, 0.1, -0.01)}, p); z.Load != 0 || z.Replicas != 0 {
		t.Fatalf("steep fall: %+v, want load 0", z)
	}
}

// TestReplicasRoundedUpKeepTheMargin is the doc comment's bound over
// random fleets: ⌈Replicas⌉ replicas sharing the projected load carry at
// most (1 − Margin) of the capacity counted, and one replica fewer would
// carry more.
func TestReplicasRoundedUpKeepTheMargin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []Kind{Bounded, LowerOnly, Unknown}
	for range 2000 {
		es := make([]Estimate, 1+rng.IntN(12))
		for i := range es {
			es[i] = answer(kinds[rng.IntN(3)], 0.5+rng.Float64()*10, rng.Float64()*8, (rng.Float64()-0.5)*0.01)
		}
		p := ReplicaPolicy{Margin: rng.Float64() * 0.5, Lead: time.Duration(rng.IntN(600)) * time.Second, LoadSpan: 10 * time.Minute}
		n := Replicas(es, p)
		if n.Kind == Unknown {
			continue
		}
		k := math.Ceil(n.Replicas)
		limit := (1 - p.Margin) * n.PerReplica
		if k > 0 && n.Projected/k > limit*(1+1e-12) {
			t.Fatalf("%v replicas carry %v each, above %v", k, n.Projected/k, limit)
		}
		if k > 1 && n.Projected/(k-1) <= limit {
			t.Fatalf("%v replicas would do: %v each, limit %v", k-1, n.Projected/(k-1), limit)
		}
	}
}
