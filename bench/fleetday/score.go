package fleetday

import (
	"time"
)

// PricePerGPUHour is the price a replica-hour is charged at (one GPU per
// replica), in dollars: the config example's gpu_hourly_cost.
const PricePerGPUHour = 2.0

// Score is how a signal kept a day.
type Score struct {
	Day, Signal string
	Threshold   float64
	// Requests arrived in the day; Good met the SLO (TTFT ≤ 500 ms and
	// TPOT ≤ 50 ms); Lost died with a replica or found none ready.
	Requests, Good, Lost float64
	// Attainment is Good / Requests, the day's, against SLO.Goal.
	Attainment float64
	// BreachMinutes counts the minutes whose finished requests' attainment
	// was below the goal.
	BreachMinutes int
	// Pages counts the firings of the daemon's default page alerts (burn
	// rate ≥ 14.4 over 1 h and 5 m for 2 m; ≥ 6 over 6 h and 30 m for
	// 15 m; burn = (1 − attainment) / (1 − goal), over the minutes since
	// the day began), each alert's episodes apart.
	Pages int
	// ReplicaHours is the replicas holding a GPU (loading, ready,
	// draining) over the day; MeanReplicas their mean, PeakReplicas the
	// Deployment's largest size.
	ReplicaHours, MeanReplicas float64
	PeakReplicas               int
	// GoodTokens are the output tokens of the good requests;
	// CostPerMillionGood the replica-hours at PricePerGPUHour per million
	// of them.
	GoodTokens, CostPerMillionGood float64
	// Minutes are the requests that ended in each minute and the good
	// ones among them.
	Minutes []Minute
}

// Minute is the requests that ended in a minute and the good ones.
type Minute struct{ N, Good float64 }

// stats accumulates a day's outcomes.
type stats struct {
	minutes      []minute
	requests     float64
	good, lost   float64
	goodTokens   float64
	replicaSecs  float64
	lengthSecs   float64
	peakReplicas int
}

type minute = Minute

func newStats(length time.Duration) stats {
	return stats{minutes: make([]minute, int(length.Minutes())+61), lengthSecs: length.Seconds()}
}

// end counts a request that ended at at: good, or not (lost when tokens is
// 0 and it is not good).
func (s *stats) end(at float64, good bool, tokens float64) {
	s.requests++
	m := min(int(at/60), len(s.minutes)-1)
	s.minutes[m].N++
	if good {
		s.good++
		s.goodTokens += tokens
		s.minutes[m].Good++
	} else if tokens == 0 {
		s.lost++
	}
}

// cost counts n replicas held for secs.
func (s *stats) cost(n int, secs float64) {
	s.replicaSecs += float64(n) * secs
	s.peakReplicas = max(s.peakReplicas, n)
}

func (s *stats) score(d Day, sig Signal, f *fleet) Score {
	sc := Score{Day: d.Name, Signal: sig.Name(), Threshold: sig.Threshold(), Requests: s.requests, Good: s.good, Lost: s.lost,
		ReplicaHours: s.replicaSecs / 3600, MeanReplicas: s.replicaSecs / s.lengthSecs, GoodTokens: s.goodTokens}
	for _, r := range f.trace {
		sc.PeakReplicas = max(sc.PeakReplicas, r.Spec)
	}
	sc.Attainment = s.good / s.requests
	if s.goodTokens > 0 {
		sc.CostPerMillionGood = sc.ReplicaHours * PricePerGPUHour / (s.goodTokens / 1e6)
	}
	for _, m := range s.minutes {
		if m.N > 0 && m.Good/m.N < SLO.Goal {
			sc.BreachMinutes++
		}
	}
	sc.Pages = pages(s.minutes, SLO.Goal)
	sc.Minutes = s.minutes
	return sc
}

// pageRule is one of the daemon's default page alerts (internal/config's
// DefaultAlertPolicy for a 30-day SLO): burn ≥ factor over both windows
// (in minutes), held for hold minutes.
type pageRule struct{ long, short, hold int }

var pageRules = []struct {
	pageRule
	factor float64
}{
	{pageRule{long: 60, short: 5, hold: 2}, 14.4},
	{pageRule{long: 360, short: 30, hold: 15}, 6},
}

// pages counts the firings of the page alerts, each alert's episodes
// apart (two alerts firing are two pages, as Alertmanager sends them),
// evaluated at the end of every minute over the minutes so far (a window
// longer than the day's past covers what there is).
func pages(ms []minute, goal float64) int {
	n := 0
	for _, r := range pageRules {
		held, firing := 0, false
		for i := range ms {
			if burn(ms, i, r.long, goal) >= r.factor && burn(ms, i, r.short, goal) >= r.factor {
				held++
			} else {
				held = 0
			}
			if held > r.hold && !firing {
				n++
			}
			firing = held > r.hold
		}
	}
	return n
}

// burn is the burn rate over the span minutes ending with minute i.
func burn(ms []minute, i, span int, goal float64) float64 {
	var n, good float64
	for j := max(0, i-span+1); j <= i; j++ {
		n, good = n+ms[j].N, good+ms[j].Good
	}
	if n == 0 {
		return 0
	}
	return (1 - good/n) / (1 - goal)
}
