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
	// population: with b_i each joint objective's bad share among the
	// finished requests (1 − its attainment lower bound, over its own
	// histogram's population; for TTFT, whose histogram also holds the
	// abandoned streams' first tokens, FinisherTTFT), s = 1 − Π(1 − b_i)
	// the joint's bad share taking the objectives as independent (see
	// EvidenceOf for why), N the finished requests and U the requests the
	// population counts bad without a finish observation (unservedBad),
	// (s·N + U) / (N + U) / (1 - goal). It is what the generated rules
	// compute (model_name:vllm_slo_burn_rate_observed:...), without the
	// allowance the daemon's bounds make for requests the window cannot see.
	Observed float64
	// Unserved is U: the requests of the population that reached no finish
	// and count bad (abandoned ones under `abandoned: bad`, rejected ones
	// under `rejected: bad`).
	Unserved float64
	// BadShares are the objectives' bad shares over their own histograms'
	// populations, by objective, for each joint objective the window holds
	// an attainment for (the alert's evidence annotation names them).
	BadShares map[string]float64
	// FinisherTTFT is the TTFT bad share Observed charges the finished
	// requests: the window's TTFT-bad first tokens beyond the abandoned
	// streams' (FinisherTTFTShare); the TTFT bad share itself without a
	// TTFT objective's share or abandoned streams.
	FinisherTTFT float64
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
// Why the slow first tokens are charged to the abandoned streams first.
// The TTFT histogram holds every first token of the window, the abandoned
// streams' among them, while the population's TTFT-bad requests are
// finishers (under `abandoned: bad` an abandoned stream counts bad once, in
// U, whatever its TTFT). Of the window's t·F TTFT-bad first tokens (t the
// TTFT bad share, F the first tokens) at most A belong to the A abandoned
// streams, so at least t·F − A belong to finishers: FinisherTTFTShare
// charges the finishers max(0, t·F − A) / (F − A), the least TTFT-bad share
// the counts allow them, where the independence reading before it charged
// them t (N/F of every slow first token, the abandoned streams' too). Clients
// abandon slow streams more often than fast ones (a stream with no first
// token for seconds is closed), and then the slow first tokens are largely
// the abandoned streams': the independence reading counted them bad twice
// under `abandoned: bad` (in U and, by N/F, as TTFT-bad finishers) and as
// finishers' under `excluded`, and paged falsely near the factor (the
// alert-quality harness's cancel-burn scenario at 1d: a 5m/1m page 3
// minutes after the true 1m burn fell to 13.7x, read 15.8x from 8 slow
// first tokens that were all abandoned streams'; under `excluded` 14.5x
// over 5m against a true 13.4x). Charged first to the abandoned streams, the TTFT
// term is a count-based lower bound of the finishers' TTFT-bad share (up to
// the abandoned estimate's edge error below), so the observed burn rate is
// never above the independence reading (t′ ≤ t whenever t ≤ 1, and U is
// the same): the gate cannot page falsely where it did not before. What it
// can do is page later where slow first tokens finish and the abandoned
// streams were fast (abandonment unrelated to TTFT): there the TTFT term
// reads low by up to min(A, t·F)/(F − A) of the finishers, and the page
// rests on the objectives observed at the finish, the abandoned streams
// under `bad`, and the proven lower bound, which still pages any breach it
// proves. Over the alert-quality library it removes the false pages the
// independence reading gave in the cancellation scenarios, misses none, and
// pages at most one evaluation later than it (docs/alert-quality.md).
//
// The abandoned estimate itself is off by the prompts in prefill at the
// window's edges, which the running gauge counts before their first token:
// one at the start counts one too many, one at the end one too few, the two
// equal in the mean (on the simulator the estimate is exactly the truth plus
// that difference, which in the cancellation scenario is not 0 in half the
// windows, up to 5 requests). No series vLLM exposes tells them apart at a
// scrape (the waiting gauge holds neither; the prefill histogram is observed
// at the finish), and the ledger's clamp reads the same count. So where the
// truth lies within a request of the factor (over 1m at
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
	if ttft, ok := w.Latency[TTFT]; ok && ttft.Valid() {
		ev.FirstTokens = ttft.Total()
	}
	ev.Ledger = r.Abandoned
	ev.Unserved, ev.Abandoned = unservedBad(r, s, w)
	good := 1.0
	ev.BadShares = map[string]float64{}
	for _, m := range joint {
		a, ok := r.Objectives[string(m)]
		if !ok {
			continue
		}
		share := 1 - math.Min(1, math.Max(0, a.Lower))
		ev.BadShares[string(m)] = share
		if m == TTFT {
			share = FinisherTTFTShare(share, ev.FirstTokens, ev.Abandoned)
			ev.FinisherTTFT = share
		}
		good *= 1 - share
	}
	bad := 1 - good
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

// FinisherTTFTShare is the TTFT bad share a window's finished requests are
// charged with: of the window's t·f TTFT-bad first tokens (t the TTFT bad
// share over its f first tokens), those beyond its a abandoned streams',
// max(0, t·f − a), over the f − a first tokens of the other requests; t
// itself when a is not positive or not less than f (no abandoned stream,
// or no first token left to share). It is at most t (for t ≤ 1), and at
// least the share the counts prove the finishers' (every TTFT-bad first
// token is an abandoned stream's or another request's): EvidenceOf argues
// why the evidence charges the slow first tokens to the abandoned streams
// first. The generated rules compute the same from the same counts.
func FinisherTTFTShare(t, f, a float64) float64 {
	if !(a > 0) || !(f > a) {
		return t
	}
	return math.Max(0, t*f-a) / (f - a)
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
