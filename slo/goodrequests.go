package slo

// GoodRequestsOf is SLO s's good requests per objective key over w, as
// Evaluate(w, []SLO{s}, []*Joint{nil}, Options{}) reports them in its
// result's GoodRequests (a ledger's caller without the window's joint, not
// the whole-window fallback of nil joints), without the rest of the
// window's evaluation: each
// objective's good count carried onto the finished requests, and "all"
// only for an SLO of ITL objectives alone (a ledger judges every other
// SLO's "all", interval by interval, and Evaluate leaves it to the joint
// it is handed). ok is false when w has no length or holds no finished
// request, where Evaluate reports no SLO result. It is what a running total
// of good requests adds for one scrape interval.
func GoodRequestsOf(w Window, s SLO) (good map[string]Bounded, ok bool) {
	secs := w.Seconds()
	if !(secs > 0) {
		return nil, false
	}
	nB, ok := finished(w)
	if !ok || nB <= 0 {
		return nil, false
	}
	var e Estimator // Options{}'s, as Evaluate uses it
	if HasPerRequestObjective(s) {
		return evaluateObjectives(w, s, nB, secs, e).GoodRequests, true
	}
	return evaluateSLO(w, s, nB, secs, e).GoodRequests, true
}
