package slo

import "math"

// evaluateSLO evaluates one SLO over the nB > 0 requests that finished in the
// window (population B).
//
// Per-request objectives observed at finish are counted over B directly (if
// their histogram's count differs from nB, which vLLM does not do, the
// difference widens the bounds by CarryGood). TTFT is observed at the first
// token, over population A; its good count is carried onto B by CarryGood with
// |A\B| <= in flight at the end and |B\A| <= in flight at the start (running +
// waiting gauges); with the gauges unknown the TTFT bound is the trivial
// [0, nB]. Client-aborted requests are recorded by no per-request histogram,
// so they are outside both populations, except that one with a first token in
// the window is in A and may be neither in B nor in flight at the end: each
// such abort can make the TTFT lower bound too high by one.
//
// ITL is observed per token gap, not per request, so an ITL objective is an
// attainment over gaps and is left out of "all"; an SLO with only ITL
// objectives has "all" equal to the ITL share (the product of shares for
// several, which is then not a bound-preserving joint but their only reading).
//
// An objective whose histogram is absent is listed in Unknown and absent
// from the per-objective maps, and "all" (with goodput and the burn rate) is
// absent too: nothing says its requests met it.
func evaluateSLO(w Window, s SLO, nB, secs float64, e Estimator) SLOResult {
	res := evaluateObjectives(w, s, nB, secs, e)
	if len(res.Unknown) > 0 {
		// An objective nobody measured is not met by default: no "all".
		return res
	}
	var perRequest, gapRatios []Bounded
	for _, o := range s.Objectives {
		if g, ok := res.GoodRequests[string(o.Metric)]; ok && o.Metric != ITL {
			perRequest = append(perRequest, g)
		} else if r, ok := res.Objectives[string(o.Metric)]; ok && o.Metric == ITL {
			gapRatios = append(gapRatios, r)
		}
	}
	return withFrechetAll(res, s, perRequest, gapRatios, w, nB, secs)
}

// evaluateObjectives is one SLO's per-objective results over the nB > 0
// requests that finished in the window: each objective's attainment and
// good count (carried onto the finished requests), Unknown, and the
// finished requests' token rate. "all" is left to the caller.
func evaluateObjectives(w Window, s SLO, nB, secs float64, e Estimator) SLOResult {
	res := SLOResult{
		Name:         s.Name,
		Requests:     nB,
		Objectives:   map[string]Bounded{},
		GoodRequests: map[string]Bounded{},
	}
	for _, o := range s.Objectives {
		key := string(o.Metric)
		n, valid := observations(w.Latency[o.Metric])
		if !valid {
			res.Unknown = append(res.Unknown, o.Metric)
			continue
		}
		good := e.GoodCount(o.Threshold, w.Latency[o.Metric])
		if n > 0 {
			res.Objectives[key] = Divide(good, n)
		}
		switch {
		case o.Metric == ITL:
			if n > 0 {
				res.GoodRequests[key] = good
			}
			continue
		case o.Metric == TTFT:
			leftA, joinB := n, nB
			if start, end, ok := inFlight(w.Running, w.Waiting); ok {
				leftA, joinB = end+w.InFlightAtRestarts, start
			}
			good = CarryGood(good, n, nB, leftA, joinB)
		default:
			good = CarryGood(good, n, nB, math.Max(0, n-nB), math.Max(0, nB-n))
		}
		res.GoodRequests[key] = good
	}
	if w.GenerationTokens.Valid() && finite(w.GenerationTokens.Sum) {
		res.FinishedTokensPerSecond = math.Max(0, w.GenerationTokens.Sum) / secs
		res.HasFinishedTokens = true
	}
	return res
}

// withFrechetAll adds to res the whole-window "all" of the per-request good
// counts (Fréchet's bound, JointGood) or, for an SLO of ITL objectives only,
// the product of its gap ratios, with goodput and the burn rate.
func withFrechetAll(res SLOResult, s SLO, perRequest, gapRatios []Bounded, w Window, nB, secs float64) SLOResult {
	var joint Bounded
	switch {
	case len(perRequest) == 0 && len(gapRatios) == 0:
		// Only ITL objectives, and no ITL histogram: nothing is known, and
		// "all" is absent rather than an invented 100%.
		return res
	case len(perRequest) == 0:
		joint = Exact(1)
		for _, r := range gapRatios {
			joint = Bounded{Estimate: joint.Estimate * r.Estimate, Lower: joint.Lower * r.Lower, Upper: joint.Upper * r.Upper}
		}
		joint = scale(joint, nB)
	default:
		joint = JointGood(perRequest, nB)
	}
	res.GoodRequests[AllKey] = joint
	res.Objectives[AllKey] = Divide(joint, nB)
	res.GoodputRequestsPerSecond = Divide(joint, secs)
	if tok, ok := GoodputTokens(joint, w.GenerationTokens); ok {
		res.GoodputTokensPerSecond = Divide(tok, secs)
		res.HasGoodputTokens = true
	}
	res.BurnRate, res.HasBurnRate = BurnRate(res.Objectives[AllKey], s.Goal)
	return res
}
