package rules

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// Names of the bounds on Q, the requests past their first token in flight.
const (
	// recStreamingNow is the most requests past their first token in
	// flight now, per model (streamingNowRule).
	recStreamingNow = "model_name:vllm_slo_streaming_requests_upper:sum"
	// recStreamingAtStart (the window appended) is the most at a
	// window's start (streamingAtStart).
	recStreamingAtStart = "model_name:vllm_slo_streaming_requests_at_start_upper:sum"
)

// streamingLookbacks are the spans streamingNowRule looks back over: a
// short one, where few requests were abandoned since, and longer ones that
// reach back before a queue built up. Each costs four reads of per-model
// series (no raw series), the longest 240 samples of each.
var streamingLookbacks = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// streamingReach is the longest window whose edges' Q the rules bound by
// streamingNowRule's series: the windows of the SLO group with the default
// options. Longer windows take running + waiting at their edges: there it
// is a small part of the window's requests.
const streamingReach = time.Hour

// streamingBounded reports whether a window's edges are bounded by
// streamingNowRule's series: a window up to streamingReach. The rule for a
// window depends on its length only, so the flat rules and the hierarchy
// record the same.
func (lp ledgerPlan) streamingBounded(w model.Duration) bool {
	return time.Duration(w) <= streamingReach
}

// streamingNowRule records Q's upper bound now, per model: the least of
// running + waiting now and, for each span L of streamingLookbacks, running
// + waiting L ago (the series present then) + the running + waiting at
// their first sample of the series that began since + the first tokens −
// the finishers since, at least 0. It reads the per-interval series of the
// same evaluation, so it follows intervalRules and precedes the windows.
//
// Proof. Per series, with S the sample L ago (or a new series' first
// sample), F and N the first tokens and finishers counted since and A the
// requests abandoned since past their first token, Q_now = Q_S + F − N − A
// (windowRules' proof) <= R_S + F − N, and summed over the model's series
// these are the terms above; Q_now >= 0, and Q_now <= running + waiting
// now. Running + waiting counts the queue's waiting requests, which have no
// first token; a span that reaches back before a queue built up counts only
// those that got one since, so in a burst this is far below running +
// waiting (the daemon carries the same bound from scrape to scrape,
// slo.InFlightQueue). A term needs every evaluation of its span: a missed
// one would leave out its interval's first tokens, some of them still in
// flight, so the term is kept only where each per-interval series it sums
// has all L / interval samples and running + waiting was recorded L ago;
// otherwise it is left out, which only widens the bound.
func (lp ledgerPlan) streamingNowRule() Rule {
	now := lp.sel(recInFlightNow, "")
	terms := []string{now}
	for _, l := range streamingLookbacks {
		r := model.Duration(l - time.Millisecond)
		sum := func(name string) string {
			return fmt.Sprintf("sum without (slo) (sum_over_time(%s[%s]))", lp.sel(name, ""), r)
		}
		then := fmt.Sprintf("last_over_time(%s[%s] offset %s)", now, model.Duration(lp.interval-time.Millisecond), model.Duration(l))
		whole := ""
		for _, name := range []string{recIntNewInFlight, recIntFirst, recIntFinished} {
			whole += fmt.Sprintf(" and on (model_name) (count_over_time(%s[%s]) == %d)", lp.sel(name, ""), r, int(l/lp.interval))
		}
		terms = append(terms, fmt.Sprintf("clamp_min(%s + on (model_name) (%s + %s - %s), 0)%s",
			then, sum(recIntNewInFlight), sum(recIntFirst), sum(recIntFinished), whole))
	}
	return Rule{Record: recStreamingNow, Labels: lp.labels(""), Expr: "min by (model_name) (" + minAll(terms...) + ")",
		Comment: "The most requests past their first token in flight now, per model: the least of running + waiting\n" +
			"now and, 1m, 5m, 15m and 1h back, running + waiting then (and at the first sample of the servers\n" +
			"that began since) + first tokens - finishers since: each request past its first token was in\n" +
			"flight then or got its first token since, and has not finished."}
}

// streamingAtStart bounds Q at the start S of a window over w: the least of
// running + waiting there (inFlightAtStart) and streamingNowRule's series as
// the evaluation at S recorded it, for the series present at S, plus the
// running + waiting at their first sample of the series that began inside
// the window, as inFlightAtStart adds them. Writing P for the present
// series' part and M for the new ones', inFlightAtStart is P + M, so the
// least of it and (recorded bound at S) + M is min(P, bound at S) + M. The
// recorded bound at S describes the same samples as the window's start:
// the range of an interval less a millisecond ending windowStart(w) back
// holds exactly that evaluation of the group (as reachPlan.past; in the
// long group, fastAt). Where it has no sample (the group's first
// evaluations), the bound is inFlightAtStart.
func (lp ledgerPlan) streamingAtStart(w model.Duration) string {
	start := lp.windowStart(w)
	past := fmt.Sprintf("last_over_time(%s[%s] offset %s)", lp.sel(recStreamingNow, ""),
		model.Duration(lp.interval-time.Millisecond), model.Duration(start))
	if lp.inLong(w) {
		past = lp.fastAt(lp.sel(recStreamingNow, ""), int(start/lp.interval))
	}
	newSeries := fmt.Sprintf("sum without (slo) (%s)", lp.sumOver(recIntNewInFlight, "", w))
	return fmt.Sprintf("min by (model_name) (\n  %s\n  or\n  (%s + on (model_name) %s)\n)",
		lp.sel(windowed(recInFlightAtStart, w), ""), past, newSeries)
}
