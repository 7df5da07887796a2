package fleetday

import (
	"math"
	"time"
)

// Policy is one of a direction's scaling policies: at most Value pods
// (Percent false) or Value percent of the replicas at the start of the
// period (Percent true) added, or removed, over Period.
type Policy struct {
	Percent bool
	Value   int
	Period  time.Duration
}

// Rules are a direction's stabilization window and policies; of several
// policies the one allowing the larger change applies (selectPolicy Max,
// the default).
type Rules struct {
	Window   time.Duration
	Policies []Policy
}

// HPA is the autoscaler's configuration, with the semantics of the
// Kubernetes HorizontalPodAutoscaler (autoscaling/v2) that KEDA creates:
// every Sync, desired = ⌈metric / target⌉ for an AverageValue target,
// unless metric / (target · current) is within Tolerance of 1; the
// recommendation is stabilized (the lowest of the last Up.Window's
// recommendations when it rises, the highest of the last Down.Window's
// when it falls), limited by the direction's policies over the changes
// made in their periods, and clamped to [Min, Max].
type HPA struct {
	Min, Max  int
	Tolerance float64
	Sync      time.Duration
	Up, Down  Rules
}

// DefaultHPA is the behaviour llm-d's SLO-aware autoscaling guide
// benchmarked with, for every signal alike: scale up at most by
// max(100%, 4 pods) per 60 s after a 30 s stabilization window, scale
// down by one pod per 120 s after a 180 s window; Kubernetes' 15 s sync
// and 0.1 tolerance; 1 to 16 replicas.
func DefaultHPA() HPA {
	return HPA{
		Min: 1, Max: 16, Tolerance: 0.1, Sync: 15 * time.Second,
		Up:   Rules{Window: 30 * time.Second, Policies: []Policy{{Percent: true, Value: 100, Period: time.Minute}, {Value: 4, Period: time.Minute}}},
		Down: Rules{Window: 180 * time.Second, Policies: []Policy{{Value: 1, Period: 120 * time.Second}}},
	}
}

type recommendation struct {
	at float64
	n  int
}

type scaleEvent struct {
	at    float64
	delta int // replicas added (> 0) or removed (< 0)
}

// autoscaler is the HPA's state: its recent recommendations and scale
// events.
type autoscaler struct {
	cfg    HPA
	recs   []recommendation
	events []scaleEvent
}

// raw is the metric's recommendation before stabilization: current when
// the metric is missing or within the tolerance.
func (a *autoscaler) raw(current int, value, target float64, ok bool) int {
	if !ok || !(target > 0) || math.IsNaN(value) {
		return current
	}
	if math.Abs(1-value/(target*float64(current))) <= a.cfg.Tolerance {
		return current
	}
	return int(math.Ceil(value/target - 1e-9))
}

// decide returns the replicas at now for the metric (value, target; ok
// false when missing, which changes nothing, as the HPA skips a metric it
// cannot read), and records the change.
func (a *autoscaler) decide(now float64, current int, value, target float64, ok bool) int {
	if !ok {
		return current
	}
	want := a.stabilize(now, current, a.raw(current, value, target, ok))
	got := a.limit(now, current, want)
	if got != current {
		a.events = append(a.events, scaleEvent{at: now, delta: got - current})
	}
	a.forget(now)
	return got
}

// stabilize keeps the recommendation and returns the stabilized one: up to
// the lowest of the Up window's recommendations, down to the highest of
// the Down window's, otherwise current.
func (a *autoscaler) stabilize(now float64, current, rec int) int {
	up, down := rec, rec
	for _, r := range a.recs {
		if r.at > now-a.cfg.Up.Window.Seconds() {
			up = min(up, r.n)
		}
		if r.at > now-a.cfg.Down.Window.Seconds() {
			down = max(down, r.n)
		}
	}
	a.recs = append(a.recs, recommendation{at: now, n: rec})
	out := current
	if out < up {
		out = up
	}
	if out > down {
		out = down
	}
	return out
}

// limit applies the direction's policies and [Min, Max].
func (a *autoscaler) limit(now float64, current, want int) int {
	switch {
	case want > current:
		limit := math.MinInt
		for _, p := range a.cfg.Up.Policies {
			start := current - a.changed(now, p.Period, 1) + a.changed(now, p.Period, -1)
			proposed := start + p.Value
			if p.Percent {
				proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
			}
			limit = max(limit, proposed)
		}
		want = min(want, max(limit, current), a.cfg.Max)
	case want < current:
		limit := math.MaxInt
		for _, p := range a.cfg.Down.Policies {
			start := current - a.changed(now, p.Period, 1) + a.changed(now, p.Period, -1)
			proposed := start - p.Value
			if p.Percent {
				proposed = int(float64(start) * (1 - float64(p.Value)/100))
			}
			limit = min(limit, proposed)
		}
		want = max(want, min(limit, current), a.cfg.Min)
	}
	return min(max(want, a.cfg.Min), a.cfg.Max)
}

// changed is the replicas added (sign 1) or removed (sign −1) in the last
// period.
func (a *autoscaler) changed(now float64, period time.Duration, sign int) int {
	n := 0
	for _, e := range a.events {
		if e.at > now-period.Seconds() && e.delta*sign > 0 {
			n += e.delta * sign
		}
	}
	return n
}

// forget drops the recommendations and events older than every window and
// period.
func (a *autoscaler) forget(now float64) {
	keep := math.Max(a.cfg.Up.Window.Seconds(), a.cfg.Down.Window.Seconds())
	for _, p := range append(append([]Policy(nil), a.cfg.Up.Policies...), a.cfg.Down.Policies...) {
		keep = math.Max(keep, p.Period.Seconds())
	}
	cut := 0
	for cut < len(a.recs) && a.recs[cut].at <= now-keep {
		cut++
	}
	a.recs = a.recs[cut:]
	cut = 0
	for cut < len(a.events) && a.events[cut].at <= now-keep {
		cut++
	}
	a.events = a.events[cut:]
}
