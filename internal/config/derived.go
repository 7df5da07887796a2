package config

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Interval is the target's effective scrape interval: its own override, or the
// global one.
func (t Target) Interval(g Global) time.Duration {
	if t.ScrapeInterval > 0 {
		return time.Duration(t.ScrapeInterval)
	}
	return time.Duration(g.ScrapeInterval)
}

// Timeout is the target's effective scrape timeout: its own override, or the
// global one capped at the target's interval (as Prometheus does for jobs that
// scrape faster than the global timeout).
func (t Target) Timeout(g Global) time.Duration {
	if t.ScrapeTimeout > 0 {
		return time.Duration(t.ScrapeTimeout)
	}
	return min(time.Duration(g.ScrapeTimeout), t.Interval(g))
}

// HourlyCost is the price of one hour of this target: its own override, or
// the global cost.
func (t Target) HourlyCost(c Cost) float64 {
	if t.GPUHourlyCost != nil {
		return *t.GPUHourlyCost
	}
	return c.GPUHourlyCost
}

// Equal reports whether two targets have identical settings, so that a reload
// can keep the history of targets that did not change. It compares the
// target's own fields only; settings inherited from Global or Cost must be
// compared by the caller.
func (t Target) Equal(other Target) bool {
	return reflect.DeepEqual(normalizedTarget(t), normalizedTarget(other))
}

// normalizedTarget treats an empty label map like an absent one.
func normalizedTarget(t Target) Target {
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	return t
}

// ObjectiveList returns the SLO's objectives sorted by key.
func (s SLO) ObjectiveList() []Objective {
	out := make([]Objective, 0, len(s.Objectives))
	for m, d := range s.Objectives {
		out = append(out, Objective{Metric: m, Threshold: time.Duration(d)})
	}
	slices.SortFunc(out, func(a, b Objective) int { return strings.Compare(string(a.Metric), string(b.Metric)) })
	return out
}

// BurnFactor is the burn rate at which the policy fires for an SLO with the
// given period: spending BudgetConsumed of the budget within LongWindow means
// burning BudgetConsumed·period/LongWindow times faster than the budget allows
// (14.4 for 2% in 1h of 30d). It is 0 when LongWindow is not positive.
func (a AlertPolicy) BurnFactor(period time.Duration) float64 {
	if a.LongWindow <= 0 {
		return 0
	}
	return a.BudgetConsumed * float64(period) / float64(a.LongWindow)
}

// LongestPeriod is the longest SLO period, which bounds how much history the
// error budget needs; 0 when there are no SLOs.
func (c *Config) LongestPeriod() time.Duration {
	var longest time.Duration
	for _, s := range c.SLOs {
		longest = max(longest, time.Duration(s.Period))
	}
	return longest
}

// abandonedPolicies maps each accepted value of slos[].abandoned to its
// population; empty means the default, bad.
var abandonedPolicies = map[string]slo.Population{
	"":         slo.AbandonedBad,
	"bad":      slo.AbandonedBad,
	"excluded": slo.AbandonedExcluded,
}

// AbandonedPopulation is the population the SLO judges: abandoned requests
// counted bad (the default) or excluded.
func (s SLO) AbandonedPopulation() slo.Population {
	return abandonedPolicies[s.Abandoned]
}

// RejectedPopulation says whether requests turned away at admission count
// bad (the default) or are excluded; slos[].rejected takes the same values
// as slos[].abandoned.
func (s SLO) RejectedPopulation() slo.Population {
	return abandonedPolicies[s.Rejected]
}
