package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// recIntNewInFlight is the per-interval ledger series of the running +
// waiting requests, per model, of the gauge series whose first sample
// falls in the interval (a server, engine or process that appeared).
const recIntNewInFlight = "model_name:vllm_slo_new_series_in_flight:interval"

// recIntNewRunning is the running gauge alone of the same series, for the
// abandoned requests' estimate.
const recIntNewRunning = "model_name:vllm_slo_new_series_running:interval"

// Names of the in-flight bounds the ledger's rules share, each recorded once
// per evaluation (or once per window) and read by every rule that needs it:
// written out in each rule, the same per-target gauge reads were evaluated
// up to sixteen times per window (minOf repeats both of its operands), and
// at 100 targets the window rules took 332 of the SLO group's 553 ms on
// Prometheus 2.42 (BENCHMARKS.md §12).
const (
	// recInFlightNow is running + waiting now, per model (a window's end).
	recInFlightNow = "model_name:vllm_slo_in_flight_requests:sum"
	// recRunningNow is running alone now, for the abandoned estimate.
	recRunningNow = "model_name:vllm_slo_running_requests:sum"
	// recIntInFlightBefore is running + waiting one interval ago, the
	// interval's own joint bound reads it.
	recIntInFlightBefore = "model_name:vllm_slo_in_flight_requests_before:interval"
	// recInFlightAtStart and recRunningAtStart (the window appended) are
	// inFlightAtStart and runningAtStart of a window.
	recInFlightAtStart = "model_name:vllm_slo_in_flight_requests_at_start:sum"
	recRunningAtStart  = "model_name:vllm_slo_running_requests_at_start:sum"
	// recGaugeNow is one gauge family's latest sample within lookback,
	// summed per model (label vllm_slo_gauge: the family): what running +
	// waiting now sums, and the models present now for every window's
	// start (presentSum).
	recGaugeNow = "model_name:vllm_slo_gauge_latest:sum"
)

// gaugeLabel names the gauge family of a recGaugeNow series.
const gaugeLabel = "vllm_slo_gauge"

// sharedInFlightRules record the in-flight bounds at the evaluation's own
// scrapes once per evaluation: running + waiting now and one interval ago,
// and running now. Each is exactly the expression its readers wrote out
// before, evaluated at the same instant, so every bound built on it is the
// same number.
//
// Each gauge family's latest sample is read from the targets once
// (recGaugeNow) and running + waiting now sums those records: the same
// per-model sums (gaugeSum at offset 0 is the families' sums joined by or),
// and the windows' starts take from them the models present now, which
// they read from every target's gauges once per window and family before.
func (lp ledgerPlan) sharedInFlightRules() []Rule {
	var rs []Rule
	for _, n := range slices.Concat(lp.running, lp.waiting) {
		l := lp.labels("")
		l[gaugeLabel] = n
		rs = append(rs, Rule{Record: recGaugeNow, Labels: l, Expr: fmt.Sprintf("sum by (model_name) (%s)", latest(n, 0))})
	}
	if len(rs) > 0 {
		rs[0].Comment = "Each gauge family's latest sample per model, running + waiting now, the same one interval ago, and\n" +
			"running alone now: recorded once per evaluation for every rule that bounds the requests in flight\n" +
			"at an interval's or a window's edges."
	}
	return append(rs,
		Rule{Record: recInFlightNow, Labels: lp.labels(""), Expr: "(" + lp.gaugeNow(lp.running) + " + " + lp.gaugeNow(lp.waiting) + ")"},
		Rule{Record: recIntInFlightBefore, Labels: lp.labels(""), Expr: lp.inFlight(lp.interval)},
		Rule{Record: recRunningNow, Labels: lp.labels(""), Expr: gaugeEstimate(lp.running, 0)},
	)
}

// gaugeNow is gaugeSum(names, 0) read from the families' recGaugeNow
// records of this evaluation.
func (lp ledgerPlan) gaugeNow(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = lp.gaugeNowOf(n)
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// gaugeNowOf is the recGaugeNow record of one family, by model_name only.
func (lp ledgerPlan) gaugeNowOf(name string) string {
	return fmt.Sprintf("sum by (model_name) (%s)", selector(recGaugeNow, "slo", lp.slo.Name, gaugeLabel, name))
}

// windowStartRules record, for one window, the bound on the requests in
// flight at its start (inFlightAtStart) and the running ones for the
// estimate (runningAtStart), once, before the window's rules that read
// them.
func (lp ledgerPlan) windowStartRules(w model.Duration, first bool) []Rule {
	rs := []Rule{
		{Record: windowed(recInFlightAtStart, w), Labels: lp.windowLabels("", w), Expr: lp.inFlightAtStart(w)},
		{Record: windowed(recRunningAtStart, w), Labels: lp.windowLabels("", w), Expr: lp.runningAtStart(w)},
	}
	if first {
		rs[0].Comment = "Running + waiting at the window's start (for a series that began inside the window, at its first\n" +
			"sample), and running alone there: recorded once per window for the window's rules."
	}
	return rs
}

// newInFlightRules record, every interval, running + waiting and running
// alone at their first sample for the gauge series that began in the
// interval (their latest sample within lookback is there, none an interval
// before), 0 for a model with none.
func (lp ledgerPlan) newInFlightRules() []Rule {
	return []Rule{
		{Record: recIntNewInFlight, Labels: lp.labels(""),
			Expr: "(" + newSeriesSum(lp.running, lp.interval) + " + " + newSeriesSum(lp.waiting, lp.interval) + ")",
			Comment: "Running + waiting of the gauge series that appeared in the interval, at their first sample: what\n" +
				"a window's start reads for the series that began inside it (see the windowed rules)."},
		{Record: recIntNewRunning, Labels: lp.labels(""), Expr: newSeriesSum(lp.running, lp.interval),
			Comment: "Running alone of the same series: the abandoned requests' estimate at a window's start."},
	}
}

// runningAtStart is the abandoned requests' estimate of the requests past
// their first token in flight at a window's start: the running gauge at S
// of the series present then, plus, for each series that began inside the
// window, its running gauge at its first sample (recIntNewRunning). Like
// inFlightAtStart it reads a bounded number of samples per target whatever
// the window; it lies within the bounds' terms, 0 <= running <= running +
// waiting at the same sample, so the estimate stays inside the bounds
// without clamping.
func (lp ledgerPlan) runningAtStart(w model.Duration) string {
	present := lp.presentSum(lp.running, lp.windowStart(w))
	if lp.inLong(w) {
		present = lp.fastAt(lp.sel(windowed(recRunningPresentAtStart, w), ""), 0)
	}
	return fmt.Sprintf("(%s + on (model_name) sum without (slo) (%s))", present, lp.sumOver(recIntNewRunning, "", w))
}

// newSeriesSum is, per model_name, the sum of a gauge over the series whose
// first sample lies in the last interval, and 0 over the others.
func newSeriesSum(names []string, interval time.Duration) string {
	parts := make([]string, len(names))
	for i, n := range names {
		now := latest(n, 0)
		parts[i] = fmt.Sprintf("sum by (model_name) ((%s unless %s) or 0 * %s)", now, latest(n, interval), now)
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// inFlightAtStart bounds the requests past their first token in flight at
// the start S of a window over w, per model_name: running + waiting at S of
// the gauge series present then, plus, for each series that began inside
// the window (where its counter changes begin), running + waiting at its
// first sample, summed from recIntNewInFlight. In the long group the
// present series' part is the SLO group's record of it
// (presentAtStartRules), as of the evaluation the long group describes.
//
// It reads a bounded number of samples per target whatever the window:
// the gauges within lookback of S, and one per-model series over the
// window. The bound it replaces, the largest value of the gauge since S for
// a series without a sample at S (max_over_time over the whole window, for
// every target), read the whole window of every target's gauges at every
// evaluation: at 100 targets and a one-day history, most of the samples
// the SLO group read. A series that comes back after a gap longer than
// lookback counts as new again, which only widens the bounds.
func (lp ledgerPlan) inFlightAtStart(w model.Duration) string {
	start := lp.windowStart(w)
	present := "(" + lp.presentSum(lp.running, start) + " + " + lp.presentSum(lp.waiting, start) + ")"
	if lp.inLong(w) {
		present = lp.fastAt(lp.sel(windowed(recInFlightPresentAtStart, w), ""), 0)
	}
	return fmt.Sprintf("(%s + on (model_name) sum without (slo) (%s))", present, lp.sumOver(recIntNewInFlight, "", w))
}

// presentSum is a gauge's sum per model_name at offset before now, over the
// series present then; 0 for a model present now whose series all began
// later (present now: the family's recGaugeNow record of this evaluation,
// the same per-model sum of the latest samples).
func (lp ledgerPlan) presentSum(names []string, offset time.Duration) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("(sum by (model_name) (%s) or 0 * %s)", latest(n, offset), lp.gaugeNowOf(n))
	}
	return "(" + strings.Join(parts, " or ") + ")"
}
