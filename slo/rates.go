package slo

import (
	"math"
	"slices"
)

// BurnRate is how fast the error budget burns: (1 − attainment) / (1 − goal),
// 1 meaning exactly on budget. all is the attainment ratio of "all". Lower
// uses the attainment's upper bound and Upper its lower bound, so Upper is the
// pessimistic burn rate that paging alerts should use (an alert on it can
// fire on a histogram's uncertainty; an alert on Lower fires only when the
// burn is certain). ok is false when goal is not in (0, 1).
func BurnRate(all Bounded, goal float64) (Bounded, bool) {
	if !(goal > 0 && goal < 1) {
		return Bounded{}, false
	}
	burn := func(a float64) float64 {
		return math.Max(0, 1-math.Min(a, 1)) / (1 - goal)
	}
	return Bounded{Estimate: burn(all.Estimate), Lower: burn(all.Upper), Upper: burn(all.Lower)}, true
}

// ErrorBudgetRemaining is the share of the error budget left over an SLO
// period: 1 − burn rate over the whole period, where all is the attainment of
// "all" over the period. It is 1 with no bad request, 0 when the budget is
// exactly spent, and negative when it is overspent (−1: spent twice); it is
// not clamped, because an operator needs to know by how much. Lower comes
// from the pessimistic burn. All fields are NaN when goal is not in (0, 1),
// which a valid configuration never allows.
func ErrorBudgetRemaining(all Bounded, goal float64) Bounded {
	b, ok := BurnRate(all, goal)
	if !ok {
		nan := math.NaN()
		return Bounded{Estimate: nan, Lower: nan, Upper: nan}
	}
	return Bounded{Estimate: 1 - b.Estimate, Lower: 1 - b.Upper, Upper: 1 - b.Lower}
}

// CostPerMillion is the cost of a million tokens at hourlyCost per hour of
// the server, given the tokens per second delivered: hourlyCost/3600/rate·1e6.
// The bounds carry through inverted: the lower cost uses the upper rate. A
// rate bound of 0 makes the cost unbounded above (+Inf); ok is false when
// the estimated rate is not positive (the cost is not defined) or the cost is
// negative or not finite.
func CostPerMillion(hourlyCost float64, tokensPerSecond Bounded) (Bounded, bool) {
	if !(hourlyCost >= 0) || math.IsInf(hourlyCost, 0) || !(tokensPerSecond.Estimate > 0) {
		return Bounded{}, false
	}
	perSecond := hourlyCost / 3600 * 1e6
	cost := func(rate float64) float64 {
		if !(rate > 0) {
			return math.Inf(1)
		}
		return perSecond / rate
	}
	return Bounded{
		Estimate: cost(tokensPerSecond.Estimate),
		Lower:    cost(tokensPerSecond.Upper),
		Upper:    cost(tokensPerSecond.Lower),
	}, true
}

// Price fills the report's costs per million generation tokens at
// hourlyCost per hour of the server (CostPerMillion): at the token
// counters' rate, at the finished requests' rate and, for each SLO with
// "all", at its goodput. A cost of 0 or less prices nothing. The SLO results
// are copied first, so a report sharing them with another is left alone.
func (r *WindowReport) Price(hourlyCost float64) {
	if !(hourlyCost > 0) {
		return
	}
	if r.HasThroughput {
		r.ThroughputCost, r.HasThroughputCost = CostPerMillion(hourlyCost, Exact(r.GenerationTokensPerSecond))
	}
	if r.HasFinishedTokens {
		r.FinishedCost, r.HasFinishedCost = CostPerMillion(hourlyCost, Exact(r.FinishedTokensPerSecond))
	}
	r.SLOs = slices.Clone(r.SLOs)
	for i := range r.SLOs {
		s := &r.SLOs[i]
		if _, ok := s.Objectives[AllKey]; ok && s.HasGoodputTokens {
			s.GoodputCost, s.HasGoodputCost = CostPerMillion(hourlyCost, s.GoodputTokensPerSecond)
		}
	}
}
