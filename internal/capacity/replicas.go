package capacity

import (
	"math"
	"slices"
	"time"
)

// ReplicaPolicy says how Replicas turns the replicas' capacities and the
// model's load into a number of replicas.
type ReplicaPolicy struct {
	// Margin is the share of a replica's bounded capacity left free (0.1):
	// a replica is planned to carry at most (1 − Margin) times the lower
	// end of its capacity's interval, for the load's swings between two
	// evaluations and the router's uneven share. A lower_only capacity,
	// a load the SLO held at, is planned at without it (see Replicas).
	Margin float64
	// Lead is how long a replica ordered now takes to serve (5m: the
	// autoscaler's reaction and stabilization, the pod's scheduling and the
	// model's load): a rising load is projected that far along its trend.
	Lead time.Duration
}

// DefaultReplicaPolicy returns the defaults named in ReplicaPolicy.
func DefaultReplicaPolicy() ReplicaPolicy {
	return ReplicaPolicy{Margin: 0.1, Lead: 5 * time.Minute}
}

// Load is a model's load: its arrival rate averaged over Span (req/s) and
// the rate's least-squares trend (req/s per second).
type Load struct {
	Rate, Trend float64
	Span        time.Duration
}

// Now is the load now: the mean over Span plus the trend times half of it,
// the lag of a mean of a linear ramp behind its end; never below 0.
func (l Load) Now() float64 { return math.Max(0, l.Rate+l.Trend*l.Span.Seconds()/2) }

// SumLoad is the model's load as the estimates of its replicas give it:
// their Load and Trend summed, over span (Config.LoadSpan). It is exact
// while the same replicas served the whole of the capacity's LoadSpan and
// TrendSpan. Around a scale event it is not: a replica added k minutes ago
// reports its rate over those k minutes while the others still average
// their larger share of the minutes before, so the sum overcounts by up to
// one replica's share for LoadSpan; a replica removed takes its share out
// at once, while the others' means take LoadSpan to rise, so the sum
// undercounts by up to its share; and each step of a replica's share
// bends its trend for TrendSpan. A pool of every replica's intervals (bench/fleetday's pooledLoad) has neither fault.
func SumLoad(es []Estimate, span time.Duration) Load {
	l := Load{Span: span}
	for _, e := range es {
		if finite(e.Load) {
			l.Rate += e.Load
		}
		if finite(e.Trend) {
			l.Trend += e.Trend
		}
	}
	return l
}

// Need is the replica signal: the replicas a model needs to keep its SLO.
type Need struct {
	// Replicas is Projected over the load planned per replica,
	// fractional (an autoscaler rounds it up); NaN when no estimate has a
	// capacity.
	Replicas float64
	// PerReplica is the capacity counted for each replica (req/s), Kind
	// the kind of the answer it came from (Bounded or LowerOnly; Unknown
	// when there is none) and Planned the load planned per replica:
	// (1 − Margin) · PerReplica when Bounded, PerReplica otherwise.
	PerReplica, Planned float64
	Kind                Kind
	// Missed is true when no replica had a capacity and one saw the SLO
	// missed at every load: PerReplica is then half the lowest of them.
	Missed bool
	// Margin is the margin the plan left free: the policy's for a bounded
	// capacity, 0 for a lower_only one or a missed SLO.
	Margin float64
	// Spread is the replicas the capacity's prediction interval allows,
	// without the margin: Projected over the median of the bounded
	// answers' upper ends (Lower, the fewest), of their estimates
	// (Estimate) and of their lower ends (Upper, the most). A lower_only
	// capacity has no upper end: Lower is 0 and Estimate = Upper =
	// Replicas. A missed SLO says only that the capacity lies below the
	// lowest load it missed at: Lower is Projected over that load, Upper
	// +Inf and Estimate = Replicas. All NaN while Replicas is.
	Spread Range
	// Load is the model's load now and Projected the load Lead from now
	// (req/s).
	Load, Projected float64
	// Answered counts the estimates with a capacity, of Of.
	Answered, Of int
}

// Replicas is the number of replicas a model needs, from the capacity
// estimates of the replicas serving it (one per replica, whatever its
// kind) and the model's load, under p. It is a prediction resting on the
// capacity's, and on these assumptions:
//
//   - the replicas are alike (one model, engine configuration, hardware
//     and mix behind one router), so that any replica's capacity is every
//     replica's;
//   - the router spreads the load evenly over the ready replicas (least
//     outstanding requests does, up to its swings, which Margin covers);
//   - the load: load.Now() (the mean over its span brought forward by
//     half the span along the trend), projected p.Lead further along the
//     trend when it rises; a falling trend is not projected, so capacity
//     is shed on the load seen, not on the load foreseen. A pooled load or
//     SumLoad gives it, with the faults SumLoad's comment names;
//   - the capacity counted for a replica is the lower end of a
//     prediction interval, never its estimate: the median of the bounded
//     answers' lower ends (one replica's interval drawn low does not set
//     everyone's), raised to the highest lower_only answer when that is
//     higher (the SLO held at that load on a replica like the others);
//   - where no replica has a capacity but one saw the SLO missed at every
//     load it served, even by the upper bounds on its windows' good
//     requests (its curve's fit of them below the goal at its lowest
//     load: an overloaded fleet, or one whose mix just changed), the
//     capacity lies below that load and nothing says how far: it is
//     counted at half of it, the largest step Kubernetes' default
//     scale-up policy (+100% per period) takes at once. Without it the
//     signal would go silent exactly when the fleet is overloaded;
//   - Margin: the bounded capacity's interval has a nominal 90% coverage,
//     so the true capacity lies below its lower end in about 5% of
//     evaluations; Margin is on top of that, for the load. A lower_only
//     answer is only the highest load seen with the SLO met: a fleet kept
//     below it would never learn more, so it is planned at exactly that
//     load, where the SLO held, and the autoscaler's tolerance (adding a
//     replica only once the load is some 10% past the plan) lets the
//     replicas go a little past it, which is how they learn their knee.
//
// What holds whatever the inputs: with n = ⌈Replicas⌉ replicas sharing
// Projected evenly, each carries Projected / n ≤ Planned, because n ≥
// Replicas = Projected / Planned. Whether that keeps the SLO is the
// capacity's prediction, measured against the simulator's truth in
// bench/fleetday (docs/autoscaling.md).
func Replicas(es []Estimate, load Load, p ReplicaPolicy) Need {
	n := Need{Replicas: math.NaN(), PerReplica: math.NaN(), Planned: math.NaN(), Kind: Unknown, Of: len(es),
		Spread: Range{Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}}
	n.Load = load.Now()
	n.Projected = n.Load + math.Max(0, load.Trend)*p.Lead.Seconds()
	n.PerReplica, n.Kind, n.Answered = perReplica(es)
	if n.Kind == Unknown {
		if lo := lowestMissed(es); lo > 0 {
			n.PerReplica, n.Missed = lo/2, true
		}
	}
	switch {
	case n.Kind == Bounded && p.Margin < 1:
		n.Margin = math.Max(0, p.Margin)
		n.Planned = (1 - n.Margin) * n.PerReplica
	case n.Kind == LowerOnly || n.Missed:
		n.Planned = n.PerReplica
	default:
		return n
	}
	n.Replicas = n.Projected / n.Planned
	n.Spread = spread(es, n)
	return n
}

// spread is Need.Spread of n, the need Replicas computed from es.
func spread(es []Estimate, n Need) Range {
	switch {
	case n.Missed:
		return Range{Estimate: n.Replicas, Lower: n.Projected / (2 * n.PerReplica), Upper: math.Inf(1)}
	case n.Kind == LowerOnly:
		return Range{Estimate: n.Replicas, Lower: 0, Upper: n.Replicas}
	}
	var est, upper []float64
	for _, e := range es {
		if e.Kind == Bounded && e.Requests.Lower > 0 && !math.IsInf(e.Requests.Lower, 1) {
			est, upper = append(est, e.Requests.Estimate), append(upper, e.Requests.Upper)
		}
	}
	return Range{Estimate: n.Projected / median(est), Lower: n.Projected / median(upper), Upper: n.Projected / n.PerReplica}
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
	med := median(bounded)
	if lowerOnly > med {
		return lowerOnly, LowerOnly, answered
	}
	return med, Bounded, answered
}

// median is the median of xs, which it sorts (NaN when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// lowestMissed is the lowest load of the answers whose curve misses the
// goal at its lowest load even by the fit of the windows' upper bounds
// (0 when none does).
func lowestMissed(es []Estimate) float64 {
	lo := 0.0
	for _, e := range es {
		if len(e.Curve.Fit) == 0 {
			continue
		}
		f := e.Curve.Fit[0]
		if f.Attainment.Upper < e.Goal && f.Load > 0 && (lo == 0 || f.Load < lo) {
			lo = f.Load
		}
	}
	return lo
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
