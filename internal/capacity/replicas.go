package capacity

import (
	"math"
	"slices"
	"time"
)

// ReplicaPolicy says how Replicas turns the replicas' capacities and the
// model's load into a number of replicas.
type ReplicaPolicy struct {
	// Margin is the share of a replica's capacity left free (0.1): a
	// replica is planned to carry at most (1 − Margin) times the capacity
	// counted for it, for the load's swings between two evaluations and the
	// router's uneven share.
	Margin float64
	// Lead is how long a replica ordered now takes to serve (5m: the
	// autoscaler's reaction and stabilization, the pod's scheduling and the
	// model's load): a rising load is projected that far along its trend.
	Lead time.Duration
	// LoadSpan is the span Estimate.Load is averaged over
	// (Config.LoadSpan, 10m): under a steady trend that mean lags the load
	// now by half of it.
	LoadSpan time.Duration
}

// DefaultReplicaPolicy returns the defaults named in ReplicaPolicy.
func DefaultReplicaPolicy() ReplicaPolicy {
	return ReplicaPolicy{Margin: 0.1, Lead: 5 * time.Minute, LoadSpan: 10 * time.Minute}
}

// Need is the replica signal: the replicas a model needs to keep its SLO.
type Need struct {
	// Replicas is Projected over (1 − Margin) × PerReplica, fractional (an
	// autoscaler rounds it up); NaN when no estimate has a capacity.
	Replicas float64
	// PerReplica is the capacity counted for each replica (req/s) and
	// Kind the kind of the answer it came from (Bounded or LowerOnly;
	// Unknown when there is none).
	PerReplica float64
	Kind       Kind
	// Load is the model's load now, Projected the load Lead from now
	// (req/s), and Trend the model's load trend (req/s per second).
	Load, Projected, Trend float64
	// Answered counts the estimates with a capacity, of Of.
	Answered, Of int
}

// Replicas is the number of replicas a model needs, from the capacity
// estimates of the replicas serving it (one per replica, whatever its
// kind) under p. It is a prediction resting on the capacity's, and on
// these assumptions:
//
//   - the replicas are alike (one model, engine configuration, hardware
//     and mix behind one router), so that any replica's capacity is every
//     replica's and the load is the sum of theirs;
//   - the router spreads the load evenly over the ready replicas (least
//     outstanding requests does, up to its swings, which Margin covers);
//   - the load: each estimate's Load is its arrival rate over
//     p.LoadSpan and its Trend the least-squares slope over the capacity's
//     TrendSpan; summed, the load now is that mean plus the trend times
//     half the span (the lag of a mean of a linear ramp behind its end),
//     and Projected adds the trend times p.Lead when it rises (a falling
//     trend is not projected: capacity is shed on the load seen, not on
//     the load foreseen);
//   - the capacity counted for a replica is the lower end of a
//     prediction interval, never its estimate: the median of the bounded
//     answers' lower ends (one replica's interval drawn low does not set
//     everyone's), raised to the highest lower_only answer when that is
//     higher (the SLO held at that load on a replica like the others). A
//     lower_only answer is only the highest load seen with the SLO met,
//     so a fleet kept below it plans on less than it has: it learns its
//     knee only when the load comes near it;
//   - Margin: the capacity's prediction interval has a nominal 90%
//     coverage, so the true capacity lies below a replica's lower end in
//     about 5% of evaluations; Margin is on top of that, for the load.
//
// What holds whatever the inputs: with n = ⌈Replicas⌉ replicas sharing
// Projected evenly, each carries Projected / n ≤ (1 − Margin) · PerReplica,
// because n ≥ Replicas = Projected / ((1 − Margin) · PerReplica). Whether
// that keeps the SLO is the capacity's prediction, measured against the
// simulator's truth in bench/fleetday (docs/autoscaling.md).
func Replicas(es []Estimate, p ReplicaPolicy) Need {
	n := Need{Replicas: math.NaN(), PerReplica: math.NaN(), Kind: Unknown, Of: len(es)}
	for _, e := range es {
		if finite(e.Load) {
			n.Load += e.Load
		}
		if finite(e.Trend) {
			n.Trend += e.Trend
		}
	}
	n.Load = math.Max(0, n.Load+n.Trend*p.LoadSpan.Seconds()/2)
	n.Projected = n.Load + math.Max(0, n.Trend)*p.Lead.Seconds()
	n.PerReplica, n.Kind, n.Answered = perReplica(es)
	if n.Kind == Unknown || !(p.Margin < 1) {
		return n
	}
	n.Replicas = n.Projected / ((1 - math.Max(0, p.Margin)) * n.PerReplica)
	return n
}

// perReplica is the capacity counted for each replica (see Replicas), the
// kind of the answer it came from and the number of answers with one.
func perReplica(es []Estimate) (float64, Kind, int) {
	var bounded []float64
	lowerOnly, answered := 0.0, 0
	for _, e := range es {
		lo := e.Requests.Lower
		if !(lo > 0) || math.IsInf(lo, 1) {
			continue
		}
		switch e.Kind {
		case Bounded:
			bounded = append(bounded, lo)
			answered++
		case LowerOnly:
			lowerOnly = math.Max(lowerOnly, lo)
			answered++
		}
	}
	if len(bounded) == 0 {
		if lowerOnly > 0 {
			return lowerOnly, LowerOnly, answered
		}
		return math.NaN(), Unknown, 0
	}
	slices.Sort(bounded)
	m := len(bounded) / 2
	med := bounded[m]
	if len(bounded)%2 == 0 {
		med = (bounded[m-1] + bounded[m]) / 2
	}
	if lowerOnly > med {
		return lowerOnly, LowerOnly, answered
	}
	return med, Bounded, answered
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
