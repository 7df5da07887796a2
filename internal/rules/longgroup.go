package rules

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// The long group. Every rule of an SLO group is evaluated every scrape
// interval, its queries with it (BENCHMARKS.md §12): most of the group's
// rules are the hierarchy's levels and the windows it serves, whose values
// change little in an interval. With
// Options.LongInterval, those rules go to a second group per SLO, the long
// group, evaluated every long interval, and the SLO group keeps what must
// run every interval: the per-interval ledger, the windows summed flat and
// the alerts.
//
// Which rule goes where: every level of the hierarchy, and every rule that
// records a series of a window the hierarchy serves (hierarchical), is the
// long group's, except those that read the raw histograms (an ITL
// objective's increase()); the rest, the window start's gauges of those
// windows (presentAtStartRules) and the alerts stay in the SLO group.
//
// Proof that the long group's series equal the one-group rules'. Let the
// SLO group evaluate at t_j = t_0 + j·i (i its interval; timestamps in
// whole milliseconds, Prometheus and vmalert stamp every evaluation of a
// group exactly one interval after the one before), and the long group at
// T, with whatever phase between the two (Prometheus offsets each group by
// a hash of its name, vmalert aligns both to multiples of their
// intervals). Let t* be the last t_j at or before T − lag.
//   - A range of i − 1 ms ending lag + k·i before T, [T − lag − k·i − i +
//     1 ms, T − lag − k·i], holds i consecutive milliseconds and so exactly
//     one t_j: t* − k·i (fastAt). A range of n·i − 1 ms ending there
//     holds the n evaluations ending at t* − k·i (rangeSum).
//   - A window's rules read the SLO group's series of the window's end
//     evaluation (running + waiting now) with a bare selector, the latest
//     sample within the engine's lookback; the long group reads it lag
//     back (now). The SLO group's samples lie at the t_j only, so the
//     latest at or before T − lag is the latest at or before t*: the same
//     sample. On vmalert T − lag is t* itself, so the lookback is the same
//     too; on Prometheus it starts up to i later, which only matters for a
//     series whose latest sample is a lookback old with no staleness
//     marker after it, and Prometheus marks a rule's series stale at the
//     first evaluation that lacks it.
//   - The long group's own series are read at offsets m·L (L the long
//     interval; every level span and every term offset of a window's sum
//     is a multiple of L, longInterval makes sure of it) over a range of
//     L − 1 ms, which holds exactly its own sample at T − m·L, recorded as
//     of t*(T − m·L) = t* − m·L: the t_j are invariant under shifts by a
//     multiple of i, and L is one.
//
// By induction over the levels and then over a window's terms, every
// series the long group records at T is the one-group rules' series at
// t*, term by term the same samples, so the same number (and the flat
// rules', by the hierarchy's own proof). The conditions: the SLO group's
// evaluation at t* has written its series, searchable, by T (lag is two
// SLO-group intervals, so an SLO group that finishes within one interval
// and a remote write that flushes within the next, vmalert's 5 s default,
// meet it), and no long evaluation is missed (as for the levels in one
// group, a missed one loses its level samples and narrows the windows
// that read them to fewer requests, never wrong ones).
//
// What it costs: the long windows' series describe the evaluation t*, at
// most lag + i before T, and are read for up to L after T, so an alert
// reading a long window sees it up to L + lag + i old (1m45s with the
// defaults).

// longLag is how many SLO-group intervals behind its evaluation the long
// group reads the SLO group's series (the proof above).
const longLag = 2

// longInterval is the long group's interval for the hierarchy's spans (in
// group intervals): the longest multiple k·interval of the group interval
// with 2 <= k <= want/interval that divides the first level's span, so
// that every level span and every offset a window's sum reads a level at
// is a multiple of it; 0 (one group) when there is no such k, no level,
// or want is 0.
func longInterval(want, interval time.Duration, spans []int) time.Duration {
	if len(spans) == 0 || want <= 0 {
		return 0
	}
	for k := int(want / interval); k >= 2; k-- {
		if spans[0]%k == 0 {
			return time.Duration(k) * interval
		}
	}
	return 0
}

// lag is how far before its evaluation the long group reads the SLO
// group's series; 0 with one group.
func (lp ledgerPlan) lag() time.Duration {
	if lp.long == 0 {
		return 0
	}
	return longLag * lp.interval
}

// step is the spacing of the level series' samples: the long interval, or
// the group interval with one group.
func (lp ledgerPlan) step() time.Duration {
	if lp.long == 0 {
		return lp.interval
	}
	return lp.long
}

// inLong reports whether the long group records the window's series.
func (lp ledgerPlan) inLong(w model.Duration) bool {
	return lp.long > 0 && lp.hierarchical(w)
}

// now reads, for a window's rules, a series the SLO group records at every
// evaluation (no window), as the one-group rules do, with a bare selector
// (the latest sample within the engine's lookback), moved back by lag
// where the long group records the window.
func (lp ledgerPlan) now(name string, w model.Duration) string {
	sel := lp.sel(name, "")
	if !lp.inLong(w) {
		return sel
	}
	return sel + " offset " + model.Duration(lp.lag()).String()
}

// fastAt selects, in the long group, the sample of a series of the SLO
// group recorded offset group intervals before t* (the proof above).
func (lp ledgerPlan) fastAt(sel string, offset int) string {
	return fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, model.Duration(lp.interval-time.Millisecond),
		model.Duration(lp.lag()+time.Duration(offset)*lp.interval))
}

// Names of the gauges' sums at a long window's start (the window
// appended), recorded by the SLO group, whose evaluations the raw gauges'
// samples are read from: the long group cannot read those exactly as of
// t*, as its evaluations lie at another phase.
const (
	recInFlightPresentAtStart = "model_name:vllm_slo_in_flight_requests_present_at_start:sum"
	recRunningPresentAtStart  = "model_name:vllm_slo_running_requests_present_at_start:sum"
)

// presentAtStartRules record, in the SLO group, for a window the long
// group records, running + waiting and running alone at the window's
// start over the gauge series present then (presentSum): the parts of
// inFlightAtStart and runningAtStart that read the raw gauges.
func (lp ledgerPlan) presentAtStartRules(w model.Duration, first bool) []Rule {
	start := lp.windowStart(w)
	// Running first: running + waiting adds waiting to its record of this
	// evaluation, so each target's running gauge at the start is read once.
	running := fmt.Sprintf("sum by (model_name) (%s)", selector(windowed(recRunningPresentAtStart, w), "slo", lp.slo.Name, "window", w.String()))
	rs := []Rule{
		{Record: windowed(recRunningPresentAtStart, w), Labels: lp.windowLabels("", w), Expr: lp.presentSum(lp.running, start)},
		{Record: windowed(recInFlightPresentAtStart, w), Labels: lp.windowLabels("", w),
			Expr: "(" + running + " + " + lp.presentSum(lp.waiting, start) + ")"},
	}
	if first {
		rs[0].Comment = "Running + waiting, and running alone, at the start of each window the long group records, over the\n" +
			"gauge series present then: read from the raw gauges here, at every evaluation, and by the long\n" +
			"group two evaluations later (its windows describe that evaluation)."
	}
	return rs
}

// longGroup is the long group of the SLO group named name, empty.
func (lp ledgerPlan) longGroup(name string) Group {
	return Group{
		Name:     name + "-long",
		Interval: model.Duration(lp.long),
		Lag:      model.Duration(lp.lag()),
		Comment: fmt.Sprintf("The hierarchy's levels and the windows it serves (longer than %s), every %s: each series here\n"+
			"describes the SLO group's last evaluation at least %s before this one (it reads the SLO group's\n"+
			"series that far back), and is the number the one-group rules record at that evaluation\n"+
			"(the rules package's documentation proves it). Alerts reading these windows see them up to %s old.",
			model.Duration(time.Duration(lp.spans[min(1, len(lp.spans)-1)])*lp.interval), model.Duration(lp.long),
			model.Duration(lp.lag()), model.Duration(lp.long+lp.lag()+lp.interval)),
	}
}
