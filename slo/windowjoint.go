package slo

import (
	"math"
	"slices"
	"time"
)

// Joint is one SLO's "all" over a window as a per-interval ledger judges it
// (package ledger): the requests that finished between two scrapes, those
// among them that met every objective, their tokens and the requests
// abandoned after their first token, each bounded interval by interval.
type Joint struct {
	// Start and End are the scrapes the joint runs between.
	Start, End time.Time
	// Finished is the number of requests that finished in (Start, End].
	Finished float64
	// Good bounds those that met every objective.
	Good Bounded
	// Tokens bounds their generation tokens; HasTokens is false when an
	// interval lacked the token histogram.
	Tokens    Bounded
	HasTokens bool
	// Abandoned bounds the requests that left after their first token.
	Abandoned Bounded
	// Unknown lists the objectives an interval could not judge: the joint
	// is then absent, not guessed.
	Unknown []Metric
	// FinishedTokens are the generation tokens of all finished requests.
	FinishedTokens float64
	// Objectives bounds, where spans made some of the joint's intervals
	// exact, the Finished requests meeting each per-request objective, in
	// the SLO's order with ITL left out (nil otherwise): sums of exact and
	// bounded scrape intervals that narrow the window's own per-objective
	// counts (narrowObjectives).
	Objectives []ObjectiveGood
}

// ObjectiveGood is one per-request objective's good finishers over a joint.
type ObjectiveGood struct {
	Objective Objective
	// Good bounds the joint's finishers meeting the objective.
	Good Bounded
}

// HasPerRequestObjective reports whether s has an objective other than
// ITL: its "all" is then over requests, and a ledger judges it interval by
// interval (Evaluate); an SLO of ITL objectives only is judged over token
// gaps.
func HasPerRequestObjective(s SLO) bool {
	for _, o := range s.Objectives {
		if o.Metric != ITL {
			return true
		}
	}
	return false
}

// evaluateJoint is evaluateSLO for an SLO whose "all" a ledger judged: the
// per-objective results come from the window, "all", goodput, the burn rate
// and the abandoned requests from j, over j's span (the same scrapes). A
// nil j, or one without length, leaves them absent; a j that could not
// judge an objective replaces Unknown. j's per-objective sums, when it
// carries them, narrow the per-objective results (narrowObjectives).
//
// Goodput tokens are the ledger's, intersected with the window's joint
// bound over its token histogram when that histogram counts the same
// finishers (a warm-up can leave the two with different ones): both hold
// the truth, the per-interval one is usually tighter, the whole window's
// wins when the bad requests may be spread over many intervals.
func evaluateJoint(w Window, s SLO, nB, secs float64, e Estimator, j *Joint) SLOResult {
	res := evaluateObjectives(w, s, nB, secs, e)
	if j == nil {
		return res
	}
	narrowObjectives(&res, w, nB, j.Finished, j.Objectives)
	if len(j.Unknown) > 0 {
		res.Unknown = j.Unknown
		return res
	}
	span := j.End.Sub(j.Start).Seconds()
	if !(span > 0) {
		return res
	}
	res.Requests = j.Finished
	res.Abandoned, res.HasAbandoned = j.Abandoned, true
	res.GoodRequests[AllKey] = j.Good
	res.GoodputRequestsPerSecond = Divide(j.Good, span)
	if j.HasTokens {
		tokens := j.Tokens
		if whole, ok := GoodputTokens(j.Good, w.GenerationTokens); ok && w.GenerationTokens.Total() == j.Finished {
			tokens = tokens.Intersect(whole)
		}
		res.GoodputTokensPerSecond, res.HasGoodputTokens = Divide(tokens, span), true
	}
	res.FinishedTokensPerSecond, res.HasFinishedTokens = j.FinishedTokens/span, true
	res.Rejected, res.HasRejected = rejectedIn(w)
	all, ok := AttainmentOver(j.Good, j.Finished, Unserved(s, j.Abandoned, res.Rejected), AbandonedBad)
	if !ok {
		return res
	}
	res.Objectives[AllKey] = all
	res.BurnRate, res.HasBurnRate = BurnRate(all, s.Goal)
	return res
}

// narrowObjectives narrows r's per-objective good requests by a ledger's
// sums of exact and bounded scrape intervals over the same scrapes (goods,
// of finished requests: Joint.Objectives), and the attainment of each
// objective observed at the finish with them. Both bound the same requests,
// the window's nB finishers, so goods narrow only when they count them
// (finished == nB, nB the e2e histogram's count); their intersection then
// holds them.
//
// TTFT's attainment is over the window's first tokens, which no span
// describes (spans are finished requests): it keeps the histograms'. Its
// good requests (over the finishers) are the ledger's alone: the whole
// window's carried histogram bound can be one too high per stream
// cancelled after a first token in the window (see evaluateSLO), while
// each interval's TTFT-good bound accounts for those streams, so the two
// can exclude each other and only the ledger's holds. An SLO naming one
// metric twice has one entry per metric, the last objective's (as
// evaluateObjectives keeps it), so only that objective narrows it. A
// caller without a joint for the window (a server observing TTFT at the
// finish gets none) narrows nothing.
func narrowObjectives(r *SLOResult, w Window, nB, finished float64, goods []ObjectiveGood) {
	if _, ok := observations(w.Latency[E2E]); !ok || finished != nB {
		return
	}
	for j, g := range goods {
		m := g.Objective.Metric
		if slices.ContainsFunc(goods[j+1:], func(o ObjectiveGood) bool { return o.Objective.Metric == m }) {
			continue
		}
		key := string(m)
		b, ok := r.GoodRequests[key]
		if !ok {
			continue
		}
		n := g.Good
		if m.ObservedAtFinish() {
			n = b.Intersect(g.Good)
			n.Estimate = math.Min(math.Max(g.Good.Estimate, n.Lower), n.Upper)
		}
		r.GoodRequests[key] = n
		if a, ok := r.Objectives[key]; ok && m.ObservedAtFinish() {
			if nm, valid := observations(w.Latency[m]); valid && nm == nB && nm > 0 {
				r.Objectives[key] = a.Intersect(Divide(n, nm))
			}
		}
	}
}

// rejectedIn is the window's requests turned away at admission: 0 and
// false on a server without admission control (which turns none away).
func rejectedIn(w Window) (float64, bool) {
	if !w.HasRequestRejected || !finite(w.RequestRejected) {
		return 0, false
	}
	return math.Max(0, w.RequestRejected), true
}

// FinishersOf describes the requests that finished in w: their count (the
// e2e histogram's; see finished) and their lag from first token to finish
// (decode time, else the e2e time as an upper bound). Without e2e, or when
// the caller marked the count unknown, Known is false, N is 0 and nothing
// is known of the lag: a caller must not read that 0 as "none finished".
func FinishersOf(w Window) Finishers {
	fin := Finishers{Start: w.Start, End: w.End}
	fin.N, fin.Known = finished(w)
	if !fin.Known {
		return fin
	}
	if h, ok := w.Latency[Decode]; ok && h.Valid() && h.Total() == fin.N {
		fin.Lag = h
	} else if h, ok := w.Latency[E2E]; ok && h.Valid() {
		fin.Lag, fin.LagUpperOnly = h, true
	}
	return fin
}
