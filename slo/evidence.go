package slo

import "math"

// Evidence is what one window's burn rate rests on, for a burn-rate alert
// that pages only on what the window has seen bad: not an estimate of the
// truth with bounds, but the observed counts the generated Prometheus
// rules read too (EvidenceOf).
type Evidence struct {
	// Requests is the number of requests that finished in the window
	// (SLOResult.Requests).
	Requests float64
	// Coverage is the share of the window's nominal length that the history
	// spans (scrapes since start, since a restart's warm-up, or since a gap
	// the window may not cross), in [0, 1] (Window.Coverage).
	Coverage float64
	// Observed is the burn rate of the requests seen bad, over the SLO's
	// population: with b_i each joint objective's bad share (1 − its
	// attainment lower bound, over its own histogram's population), s = 1 −
	// Π(1 − b_i) the joint's bad share taking the objectives as independent
	// (see EvidenceOf for why), N the finished requests and U the requests the
	// population counts bad without a finish observation (unservedBad),
	// (s·N + U) / (N + U) / (1 - goal). It is what the generated rules
	// compute (model_name:vllm_slo_burn_rate_observed:...), without the
	// allowance the daemon's bounds make for requests the window cannot see.
	Observed float64
	// Unserved is U: the requests of the population that reached no finish
	// and count bad (abandoned ones under `abandoned: bad`, rejected ones
	// under `rejected: bad`).
	Unserved float64
	// BadShares are the b_i Observed rests on, by objective, for each joint
	// objective the window holds an attainment for (the alert's evidence
	// annotation names them).
	BadShares map[string]float64
	// FirstTokens is the window's first tokens (the TTFT histogram's
	// observations, abandoned streams' included), the population of the
	// TTFT bad share; 0 without a TTFT histogram.
	FirstTokens float64
	// Abandoned is the window's abandoned streams at the estimate Unserved
	// counts them at under `abandoned: bad` (abandonedEstimate, or the
	// ledger's lower bound without the gauge; under `excluded` not part of
	// Unserved), and Ledger the ledger's bracket of them
	// (SLOResult.Abandoned), which clamps the running gauge into bounds
	// PromQL cannot follow: the alert's evidence annotation gives both.
	Abandoned float64
	Ledger    Bounded
}

// Burn is the evidence that the window burns its budget: the larger of the
// observed burn rate and the burn rate's lower bound b.Lower, which is
// proven (the truth is at least it), so a breach it shows pages even where
// the observed burn reads less.
func (e Evidence) Burn(b Bounded) float64 { return math.Max(e.Observed, b.Lower) }

// EvidenceOf is the evidence of SLO s's result r over window w: its
// finished requests, the window's coverage and the observed burn rate (see
// Evidence.Observed) of the per-request objectives of the joint, or ITL
// when it is the SLO's only kind of objective, as the joint counts them. An
// objective the window holds no attainment for (no observation) counts
// none bad, as in the rules, where its series is absent. With no bad
// request observed and none abandoned or rejected, Observed is 0.
//
// Why the independence estimate of the joint, and not the Fréchet sum of
// the objectives' bad shares. The page must see a breach of the joint that
// no objective shows alone (8% bad TTFT and 8% bad TPOT on different
// requests is 16% bad: 16x, over 8x per objective): the lower bound cannot
// (for it the 8% may be the same requests), so the observed burn must read
// the joint. The Fréchet sum Σ b_i is the joint's bad share only when the
// objectives' bad requests never overlap, and counts a request bad on two
// objectives twice; near the factor that paged where the truth did not
// (about 0.8x over it with 1.1% of the requests bad on both). Latency
// objectives are positively associated: a busy batch or an overload slows
// a request's first token and its decode together, so a request bad on one
// is more likely bad on the other. For positively associated events (for
// two, positively correlated; for more, associated in the sense of Esary,
// Proschan and Walkup) the share good on all is at least the product of
// the shares good on each,
// so the joint's bad share is at most 1 − Π(1 − b_i), which is itself at
// most Σ b_i: the product still reads the truth or above it, missing no
// breach that the sum would catch, while counting a request bad on two
// objectives once. It can read below the truth only where the objectives'
// bad requests overlap less than independence says, for two objectives by
// at most b_1·b_2, the overlap independence assumes (0.56% of the requests
// at 7.5% each, 0.56x at goal 0.99). The ledger's estimate of the joint
// (the burn rate's Estimate) was closer still on the joint-only breach
// (14.27x against a true 14.15x, where the product read 14.44x), but it
// matches first tokens to finishers by their decode
// lag, which PromQL cannot, and the two paths must page on the same
// numbers: the product needs only each objective's attainment, which both
// compute identically (the alert-quality harness checks that they agree).
// TTFT counts requests at their first token, not at their finish, so the
// evidence can trail the truth by a scrape at the edges of a burn.
//
// Why abandonment joins by independence too, and what that leaves. The TTFT
// bad share is over first tokens, abandoned streams' included, so s·N
// charges the finishers N/F of each slow first token (F the first tokens),
// and under `abandoned: bad` a slow abandoned stream counts once in U and
// again, by N/F, as a TTFT-bad finisher. Clients abandon slow streams more
// often than fast ones, so this reads high: toward a false page, never a
// missed one. The other extreme, the slow first tokens charged to the
// abandoned streams first (TTFT's good share G/(F − A), at most 1, with G
// the TTFT-good first tokens and A the abandoned: the largest overlap the
// counts allow), reads low wherever a slow stream finishes. Over the
// alert-quality library, both policies, it is nearer the truth (mean
// absolute error 0.36x against 0.51x), yet falls under the factor with the
// truth above it in 51 windows against 37 and fires later (1:45 in all
// after the truth, against 0:30 before it), with the same pages: 1 false,
// 0 missed. A miss costs more than a page, so the product
// stays. The abandoned estimate itself is off by the prompts in prefill at
// the window's edges, which the running gauge counts before their first
// token: one at the start counts one too many, one at the end one too few,
// the two equal in the mean (on the simulator the estimate is exactly the
// truth plus that difference, which in the cancellation scenario is not 0
// in half the windows, up to 5 requests). No series vLLM exposes tells them
// apart at a scrape (the waiting gauge holds neither; the prefill histogram
// is observed at the finish), and the ledger's clamp reads the same count.
// So where the truth lies within a request of the factor (over 1m at
// about 5 req/s a request is 0.3x) any evidence from these counters can
// page or miss; the one false page the harness records is such a step
// (44 abandoned of 306, 14.38x, read as 45). The alert-quality harness
// measures all of this.
func EvidenceOf(r SLOResult, s SLO, w Window) Evidence {
	var joint []Metric
	for _, o := range s.Objectives {
		if o.Metric != ITL {
			joint = append(joint, o.Metric)
		}
	}
	if len(joint) == 0 {
		joint = []Metric{ITL}
	}
	ev := Evidence{Requests: r.Requests}
	ev.Coverage, _ = w.Coverage()
	if !(s.Goal < 1) {
		return ev
	}
	good := 1.0
	ev.BadShares = map[string]float64{}
	for _, m := range joint {
		if a, ok := r.Objectives[string(m)]; ok {
			share := math.Min(1, math.Max(0, a.Lower))
			good *= share
			ev.BadShares[string(m)] = 1 - share
		}
	}
	bad := 1 - good
	if ttft, ok := w.Latency[TTFT]; ok && ttft.Valid() {
		ev.FirstTokens = ttft.Total()
	}
	ev.Ledger = r.Abandoned
	ev.Unserved, ev.Abandoned = unservedBad(r, s, w)
	n := r.Requests
	if joint[0] == ITL || !(n+ev.Unserved > 0) {
		// ITL's share is over token gaps, not requests: no population to
		// add the unserved requests to.
		ev.Observed = bad / (1 - s.Goal)
		return ev
	}
	ev.Observed = (bad*n + ev.Unserved) / (n + ev.Unserved) / (1 - s.Goal)
	return ev
}

// unservedBad is how many requests the SLO's population counts bad although
// they reached no finish observation, and the abandoned streams' estimate
// whichever the policy: the requests abandoned after their
// first token under `abandoned: bad` (none under `excluded`), at
// abandonedEstimate, plus those rejected at admission (SLOResult.Rejected,
// exact) under `rejected: bad`. The abandoned ones count only when the
// ledger judged the window (SLOResult.HasAbandoned); where the running
// gauge is unknown they fall back to the ledger's lower bound, which never
// counts a request that may not exist.
func unservedBad(r SLOResult, s SLO, w Window) (unserved, abandoned float64) {
	rejected := 0.0
	if r.HasRejected && s.Rejected == RejectedBad {
		rejected = r.Rejected // exact: the server's own count
	}
	if !r.HasAbandoned {
		return rejected, 0
	}
	a, ok := abandonedEstimate(w, r.Requests)
	if !ok {
		a = math.Max(0, r.Abandoned.Lower)
	}
	if s.Abandoned != AbandonedBad {
		return rejected, a
	}
	return rejected + a, a
}

// abandonedEstimate estimates the requests abandoned after their first
// token over w, with n of them finished, as the generated rules do
// (model_name:vllm_slo_abandoned_requests:increase<window>): first tokens
// − finished + running at the window's start − running at its end, at
// least 0. It is the conservation identity of Abandoned with the
// requests past their first token in flight taken to be the running ones
// (the ledger's queue estimate, see ledger.queueEstimate). The ledger
// clamps each edge's running count into bounds it proves from the intervals
// before (InFlightQueue, SurelyBefore), a recursion PromQL cannot
// follow; the evidence leaves that clamp out so that both paths count the
// same requests (they differed by one request at a few evaluations). ok is
// false without the TTFT histogram or the running gauge.
func abandonedEstimate(w Window, n float64) (float64, bool) {
	ttft, okF := w.Latency[TTFT]
	if !okF || !ttft.Valid() || !w.Running.Known || math.IsNaN(w.Running.AtStart) || math.IsNaN(w.Running.AtEnd) {
		return 0, false
	}
	return math.Max(0, ttft.Total()-n+math.Max(0, w.Running.AtStart)-math.Max(0, w.Running.AtEnd)), true
}
