package rules

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Names of the per-interval ledger series: one sample per evaluation of the
// SLO's group, each the change over one group interval, summed over windows
// with sum_over_time.
const (
	recIntFinished   = "model_name:vllm_slo_finished_requests:interval_increase"
	recIntFirst      = "model_name:vllm_slo_first_tokens:interval_increase"
	recIntTTFTGoodLo = "model_name:vllm_slo_ttft_good_first_tokens_lower:interval_increase"
	recIntTTFTGoodHi = "model_name:vllm_slo_ttft_good_first_tokens_upper:interval_increase"
	recIntObserved   = "model_name:vllm_slo_observed_requests:interval_increase"
	recIntObjGoodLo  = "model_name:vllm_slo_observed_good_lower:interval_increase"
	recIntObjGoodHi  = "model_name:vllm_slo_observed_good_upper:interval_increase"
	recIntFinGoodLo  = "model_name:vllm_slo_finished_good_lower:interval_increase"
	recIntFinGoodHi  = "model_name:vllm_slo_finished_good_upper:interval_increase"
	recIntJointLo    = "model_name:vllm_slo_joint_good_lower:interval_increase"
	recIntJointHi    = "model_name:vllm_slo_joint_good_upper:interval_increase"
	recIntRejected   = "model_name:vllm_slo_rejected_requests:interval_increase"
)

// Names of the windowed ledger series (the window is appended).
const (
	recFinished    = "model_name:vllm_slo_finished_requests:increase"
	recJointGoodLo = "model_name:vllm_slo_good_requests_lower:increase"
	recJointGoodHi = "model_name:vllm_slo_good_requests_upper:increase"
	recAbandonedLo = "model_name:vllm_slo_abandoned_requests_lower:increase"
	recAbandonedHi = "model_name:vllm_slo_abandoned_requests_upper:increase"
	recAbandoned   = "model_name:vllm_slo_abandoned_requests:increase"
	recRejected    = "model_name:vllm_slo_rejected_requests:increase"
	recAttainHi    = "model_name:vllm_slo_attainment_upper:ratio_rate"
	recBurnObs     = "model_name:vllm_slo_burn_rate_observed:ratio_rate"
	recBurnLo      = "model_name:vllm_slo_burn_rate_lower:ratio_rate"
)

// ledgerPlan is what the ledger rules of one SLO need: the family names of
// the histograms and gauges, the group interval and the objectives judged at
// the finish.
type ledgerPlan struct {
	slo      config.SLO
	interval time.Duration
	ttft     []string // TTFT histogram names
	e2e      []string // e2e histogram names: their count is the finished requests
	running  []string
	waiting  []string
	// rejected are the admission-rejection counters' names (vLLM's
	// admission_rejections_total); empty when no target's profile has one.
	rejected []string
	// ttftPlan is the SLO's TTFT objective; nil when it has none.
	ttftPlan *objectivePlan
	// finish are the objectives observed at the finish (all per-request
	// objectives but TTFT).
	finish []objectivePlan
	// spans are the hierarchy's levels in group intervals (levelSpans);
	// none for the flat rules.
	spans []int
	// long is the long group's interval (longInterval); 0: one group.
	long time.Duration
	// reach is what the bounds on an interval's finishers of each TTFT
	// kind read per server (reach.go); set with a TTFT objective.
	reach reachPlan
}

// groupInterval is the evaluation interval of the SLO groups: the shortest
// scrape interval of the targets (15s when none is set). The per-interval
// changes telescope for any interval, so slower targets only make some
// intervals empty.
func groupInterval(cfg *config.Config) time.Duration {
	var shortest time.Duration
	for _, t := range cfg.Targets {
		if d := t.Interval(cfg.Global); d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest <= 0 {
		shortest = 15 * time.Second
	}
	return shortest
}

// familyNames lists the names of a family of the configured targets' profiles.
func familyNames(cfg *config.Config, f scrape.Family, kind scrape.Kind) ([]string, error) {
	var names []string
	for _, t := range cfg.Targets {
		p, err := scrape.LookupProfile(t.Profile)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", t.Name, err)
		}
		spec, ok := p.Spec(f)
		if !ok || spec.Kind != kind || len(spec.Names) == 0 {
			return nil, fmt.Errorf("target %q: profile %q has no %s", t.Name, t.Profile, f)
		}
		for _, n := range spec.Names {
			if !containsString(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no target exposes %s", f)
	}
	return names, nil
}

// optionalFamilyNames lists the names of a counter family that only some
// servers have (vLLM's admission rejections, from the versions with
// admission control on): those of the profiles that name it, none when no
// profile does. A server of such a profile that lacks the family (an older
// vLLM, or no admission limit set) has no series of it, and the rules
// count none there.
func optionalFamilyNames(cfg *config.Config, f scrape.Family) ([]string, error) {
	var names []string
	for _, t := range cfg.Targets {
		p, err := scrape.LookupProfile(t.Profile)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", t.Name, err)
		}
		spec, ok := p.Spec(f)
		if !ok || spec.Kind != scrape.KindCounter {
			continue
		}
		for _, n := range spec.Names {
			if !containsString(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// newLedgerPlan gathers what the ledger rules need; ok is false when the SLO
// has no per-request objective (ITL only), which the ledger cannot judge.
func newLedgerPlan(cfg *config.Config, s config.SLO, plans []objectivePlan) (ledgerPlan, bool, error) {
	lp := ledgerPlan{slo: s, interval: groupInterval(cfg)}
	for i := range plans {
		switch plans[i].obj.Metric {
		case slo.ITL:
		case slo.TTFT:
			lp.ttftPlan = &plans[i]
		default:
			lp.finish = append(lp.finish, plans[i])
		}
	}
	if lp.ttftPlan == nil && len(lp.finish) == 0 {
		return lp, false, nil
	}
	var err error
	if lp.ttft, err = histogramNames(cfg, slo.TTFT); err != nil {
		return lp, false, err
	}
	if lp.e2e, err = histogramNames(cfg, slo.E2E); err != nil {
		return lp, false, err
	}
	if lp.running, err = familyNames(cfg, scrape.Running, scrape.KindGauge); err != nil {
		return lp, false, err
	}
	if lp.waiting, err = familyNames(cfg, scrape.Waiting, scrape.KindGauge); err != nil {
		return lp, false, err
	}
	if lp.rejected, err = optionalFamilyNames(cfg, scrape.RequestRejected); err != nil {
		return lp, false, err
	}
	lp.reach, _ = newReachPlan(cfg, lp)
	return lp, true, nil
}

// intervalDelta is the exact change of a counter series over one group
// interval, summed per model_name: the latest sample now minus the latest
// sample the previous evaluation read (offset by one interval, so consecutive
// evaluations telescope to the difference of the window's edge samples,
// without increase()'s extrapolation). A reset (negative change) counts the
// new process's value, all it observed since it started; a series without
// a previous sample counts nothing, as its history before is unknown.
func intervalDelta(names []string, suffix, le string, interval time.Duration) string {
	parts := make([]string, len(names))
	for i, n := range names {
		sel := n + suffix
		if le != "" {
			sel += fmt.Sprintf("{le=~%q}", le)
		}
		now, prev := latest(sel, 0), latest(sel, interval)
		parts[i] = fmt.Sprintf("sum by (model_name) ((%[1]s - %[2]s) >= 0 or (%[1]s and %[2]s))", now, prev)
	}
	return strings.Join(parts, "\nor\n")
}

// gaugeSum sums a gauge per model_name, its latest sample offset before now. When
// the gauge has no sample there (its series began later, inside the range
// the caller sums), the largest value since then stands in: at least the
// value at the first sample, where the caller's counter changes begin.
func gaugeSum(names []string, offset time.Duration) string {
	parts := make([]string, len(names))
	for i, n := range names {
		if offset <= 0 {
			parts[i] = fmt.Sprintf("sum by (model_name) (%s)", latest(n, 0))
			continue
		}
		parts[i] = fmt.Sprintf("sum by (model_name) (%s or max_over_time(%s[%s]))", latest(n, offset), n, model.Duration(offset))
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// gaugeEstimate is a gauge summed per model_name as it was offset before
// now, for an estimate: when the gauge has no sample there, the smallest
// value since then stands in (at most the value at the first sample, so an
// estimate built on it errs low, where gaugeSum's bound errs high).
func gaugeEstimate(names []string, offset time.Duration) string {
	parts := make([]string, len(names))
	for i, n := range names {
		if offset <= 0 {
			parts[i] = fmt.Sprintf("sum by (model_name) (%s)", n)
			continue
		}
		d := model.Duration(offset).String()
		parts[i] = fmt.Sprintf("sum by (model_name) (%[1]s offset %[2]s or min_over_time(%[1]s[%[2]s]))", n, d)
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// inFlight is running + waiting per model_name at the scrape offset before
// now: an upper bound on the requests past their first token in flight then
// (every such request is running or, preempted, waiting).
func (lp ledgerPlan) inFlight(offset time.Duration) string {
	return "(" + gaugeSum(lp.running, offset) + " + " + gaugeSum(lp.waiting, offset) + ")"
}

// windowStart is how far before now the samples lie that a sum_over_time
// over w of the per-interval changes starts from: the range (now − w, now]
// holds ceil(w/interval) evaluations, each covering one interval.
func (lp ledgerPlan) windowStart(w model.Duration) time.Duration {
	n := math.Ceil(float64(w) / float64(lp.interval))
	return time.Duration(n) * lp.interval
}

// upperEdge picks the smallest default edge >= threshold: the bucket there
// counts every request that met the threshold and maybe more, so it bounds
// the good ones from above. ok is false above the largest edge, where only
// the count bounds them.
func upperEdge(edges []float64, threshold time.Duration) (float64, bool) {
	for _, e := range edges {
		if time.Duration(math.Round(e*1e9)) >= threshold {
			return e, true
		}
	}
	return 0, false
}

// goodDeltas are the interval changes of the observations at or under the
// lower edge (good lower bound) and at or under the upper edge (good upper
// bound) of an objective.
func goodDeltas(p objectivePlan, names []string, interval time.Duration) (lo, hi string) {
	count := intervalDelta(names, "_count", "", interval)
	lo = "0 * (" + count + ")"
	if !p.edge.None {
		lo = intervalDelta(names, "_bucket", leRegex(p.edge.Edge), interval)
	}
	hi = count
	if e, ok := upperEdge(p.edges, p.obj.Threshold); ok {
		hi = intervalDelta(names, "_bucket", leRegex(e), interval)
	}
	return lo, hi
}

// sel selects a series of this SLO, with an objective when given.
func (lp ledgerPlan) sel(name, objective string) string {
	if objective == "" {
		return selector(name, "slo", lp.slo.Name)
	}
	return selector(name, "slo", lp.slo.Name, "objective", objective)
}

func (lp ledgerPlan) labels(objective string) map[string]string {
	l := map[string]string{"slo": lp.slo.Name}
	if objective != "" {
		l["objective"] = objective
	}
	return l
}

func (lp ledgerPlan) windowLabels(objective string, w model.Duration) map[string]string {
	l := lp.labels(objective)
	l["window"] = w.String()
	return l
}

// intervalRules are the ledger's per-interval recording rules.
//
// Proof of the per-interval bounds, for the N requests that finished in the
// interval (t−i, t]:
//   - Each objective observed at the finish (TPOT, e2e, ...) observed C of
//     them, g at or under the edge below its threshold, h at or under the
//     edge above it. The g are good; at most C − N of them are not among
//     the N, and N − C finishers went unobserved: at least g − max(0, C−N)
//     and at most h + max(0, N−C) of the N met the objective (at most N).
//   - Every finisher got its first token in the interval or was past it and
//     in flight at t−i, where running + waiting R bounds those requests. So
//     at most (first tokens − TTFT-good lower) + R of them missed TTFT, and
//     at most (TTFT-good upper) + R met it; finisherRules (reach.go)
//     tightens both per server (the carried in-flight bound and the
//     decode-time reach), with these as their upper limit.
//   - Fréchet over the same N: those meeting them all are at least Σ lower −
//     (m−1)·N and at most the least upper bound.
func (lp ledgerPlan) intervalRules() []Rule {
	i := lp.interval
	rs := []Rule{
		{Record: recIntFinished, Expr: intervalDelta(lp.e2e, "_count", "", i), Labels: lp.labels(""),
			Comment: fmt.Sprintf("Per-interval ledger (the group runs every %s, the shortest scrape interval): exact counter\n"+
				"changes (now minus one interval ago), summed over windows with sum_over_time. The\n"+
				"bounds of every step are proven in the rules package's documentation (Go doc of intervalRules).\n"+
				"Requests that finished in the interval: the e2e histogram's count.", model.Duration(i))},
		{Record: recIntFirst, Expr: intervalDelta(lp.ttft, "_count", "", i), Labels: lp.labels(""),
			Comment: "First tokens in the interval, cancelled streams included: the TTFT histogram's count."},
	}
	if lp.ttftPlan != nil {
		lo, hi := goodDeltas(*lp.ttftPlan, lp.ttft, i)
		rs = append(rs,
			Rule{Record: recIntTTFTGoodLo, Expr: lo, Labels: lp.labels("")},
			Rule{Record: recIntTTFTGoodHi, Expr: hi, Labels: lp.labels("")})
	}
	n := lp.sel(recIntFinished, "")
	for _, p := range lp.finish {
		obj := string(p.obj.Metric)
		lo, hi := goodDeltas(p, p.names, i)
		c, g, h := lp.sel(recIntObserved, obj), lp.sel(recIntObjGoodLo, obj), lp.sel(recIntObjGoodHi, obj)
		rs = append(rs,
			Rule{Record: recIntObserved, Expr: intervalDelta(p.names, "_count", "", i), Labels: lp.labels(obj)},
			Rule{Record: recIntObjGoodLo, Expr: lo, Labels: lp.labels(obj)},
			Rule{Record: recIntObjGoodHi, Expr: hi, Labels: lp.labels(obj)},
			Rule{Record: recIntFinGoodLo, Labels: lp.labels(obj),
				Expr: fmt.Sprintf("clamp_min(%s - ignoring (objective) clamp_min(%s - ignoring (objective) %s, 0), 0)", g, c, n)},
			Rule{Record: recIntFinGoodHi, Labels: lp.labels(obj),
				Expr: minOf(fmt.Sprintf("(%s + ignoring (objective) clamp_min(%s - ignoring (objective) %s, 0))", h, n, c), n, "ignoring (objective)")},
		)
	}
	rs = append(rs, lp.newInFlightRules()...)
	rs = append(rs, lp.sharedInFlightRules()...)
	rs = append(rs, lp.streamingNowRule())
	if len(lp.rejected) > 0 {
		rs = append(rs, Rule{Record: recIntRejected, Expr: intervalDelta(lp.rejected, "", "", i), Labels: lp.labels(""),
			Comment: "Requests turned away at admission in the interval (HTTP 503 when the queue is full), every reason:\n" +
				"the server's own counter, exact; absent on servers without admission control."})
	}
	finLo, finHi := lp.finishJoint()
	prev := lp.sel(recIntInFlightBefore, "")
	if lp.ttftPlan == nil {
		return append(rs,
			Rule{Record: recIntJointLo, Expr: finLo, Labels: lp.labels(allObjective)},
			Rule{Record: recIntJointHi, Expr: finHi, Labels: lp.labels(allObjective)})
	}
	bad := fmt.Sprintf("(%s - %s)", lp.sel(recIntFirst, ""), lp.sel(recIntTTFTGoodLo, ""))
	badOld := fmt.Sprintf("(%s + on (model_name) group_left () %s)", bad, prev)
	goodOld := minOf(fmt.Sprintf("(%s + on (model_name) group_left () %s)", lp.sel(recIntTTFTGoodHi, ""), prev), n, "")
	rs = append(rs, lp.reach.serverRules()...)
	rs = append(rs, lp.reach.finisherRules(lp, badOld, true)...)
	rs = append(rs, lp.reach.finisherRules(lp, goodOld, false)...)
	ttftLo := fmt.Sprintf("clamp_min(%s - %s, 0)", n, lp.sel(recIntTTFTBadFin, ""))
	ttftHi := lp.sel(recIntTTFTGoodFin, "")
	return append(rs,
		Rule{Record: recIntJointLo, Labels: lp.labels(allObjective),
			Expr: fmt.Sprintf("clamp_min(\n  (%s)\n  + %s\n  - %s,\n  0\n)", finLo, ttftLo, n),
			Comment: "Requests of the interval that met every objective, lower bound: Frechet of the finish-observed\n" +
				"objectives and TTFT, where at most (TTFT-bad first tokens of the interval) + (running + waiting\n" +
				"one interval ago) finishers can have missed TTFT."},
		Rule{Record: recIntJointHi, Labels: lp.labels(allObjective),
			Expr: minOf("("+finHi+")", ttftHi, "")},
	)
}

// finishJoint is the Fréchet bracket of the finishers meeting every
// finish-observed objective (all of them when the SLO has none). It is
// absent unless every objective's series is present.
func (lp ledgerPlan) finishJoint() (lo, hi string) {
	n := lp.sel(recIntFinished, "")
	m := len(lp.finish)
	if m == 0 {
		return n, n
	}
	if m == 1 {
		obj := string(lp.finish[0].obj.Metric)
		return "sum without (objective) (" + lp.sel(recIntFinGoodLo, obj) + ")", "sum without (objective) (" + lp.sel(recIntFinGoodHi, obj) + ")"
	}
	complete := fmt.Sprintf("and on (model_name) (count without (objective) (%s) == %d)", lp.sel(recIntFinGoodLo, ""), m)
	lo = fmt.Sprintf("clamp_min(sum without (objective) (%s) - %d * %s, 0) %s", lp.sel(recIntFinGoodLo, ""), m-1, n, complete)
	hi = fmt.Sprintf("min without (objective) (%s) %s", lp.sel(recIntFinGoodHi, ""), complete)
	return lo, hi
}

// minOf is the element-wise minimum of two vectors with the same labels.
func minOf(a, b, matching string) string {
	if matching != "" {
		matching += " "
	}
	return fmt.Sprintf("(%s <= %s%s or %s%s)", a, matching, b, matching, b)
}

// maxOf is the element-wise maximum of two vectors with the same labels.
func maxOf(a, b string) string {
	return fmt.Sprintf("(%s >= %s or %s)", a, b, b)
}

// sumOver sums a per-interval series of this SLO over a window. The range
// is a millisecond short of the window: Prometheus 2 includes a sample at
// the range's start and Prometheus 3 does not, and the group records its
// samples exactly one interval apart, so both then hold the window's
// ceil(w/interval) evaluations and no more.
func (lp ledgerPlan) sumOver(name, objective string, w model.Duration) string {
	return lp.sumOverSelector(name, objective, w)
}

// windowRules are the ledger's recording rules over one window.
//
// Proof. Let N be the requests that finished in the window (the sum of the
// intervals' N), S the samples the window starts from and R_S, R_E running
// + waiting at its start and end; for a series that began inside the
// window, R_S takes its running + waiting at its first sample, where its
// counter changes begin (inFlightAtStart).
//   - Good requests: the sum of the intervals' bounds holds. So does the
//     whole window's: every TTFT-bad finisher got its first token in the
//     window or was past it and in flight at S, so at most (TTFT-bad first
//     tokens) + R_S missed TTFT and at most (TTFT-good upper) + R_S met it;
//     Fréchet with the finish-observed objectives' summed bounds. Both hold,
//     so their intersection (larger lower, smaller upper) does.
//   - Abandoned requests (a first token, no finish): every request past its
//     first token at S or with a first token in the window finished in it,
//     left unfinished, or is in flight at the end: Q_S + F = N + A + Q_E
//     with 0 <= Q <= R, so A lies in [F − N − R_E, F − N + R_S], and >= 0.
//     For a window up to streamingReach, Q has tighter bounds at both
//     edges, Q̂_S (streamingAtStart) and Q̂_E (streamingNowRule), and A
//     lies in [F − N − Q̂_E, F − N + Q̂_S]; the whole window's joint above
//     takes Q̂_S for R_S too, since the TTFT-bad (or TTFT-good) requests
//     past their first token at S are some of Q_S.
//   - Rejected requests J (turned away at admission, never served): the sum
//     of the intervals' exact counter changes, 0 where the server has no
//     such counter (it turns none away).
//   - Attainment: the population is the N finished requests plus U, the
//     unserved ones it counts (none of them good): A with `abandoned: bad`
//     and J with `rejected: bad`. good / (N + U) falls as U grows, so it
//     lies in [good.lo / (N + U.hi), good.hi / (N + U.lo)], where U's bounds
//     are A's (or 0) plus J (or 0), J being exact; at most 1.
func (lp ledgerPlan) windowRules(w model.Duration, first bool) []Rule {
	rStart, rEnd := lp.sel(windowed(recInFlightAtStart, w), ""), lp.now(recInFlightNow, w)
	qStart := rStart
	n := lp.sumOver(recIntFinished, "", w)
	f := lp.sumOver(recIntFirst, "", w)
	qEnd := rEnd
	rs := lp.windowStartRules(w, first)
	if lp.streamingBounded(w) {
		qStart, qEnd = lp.sel(windowed(recStreamingAtStart, w), ""), lp.now(recStreamingNow, w)
		rs = append(rs, Rule{Record: windowed(recStreamingAtStart, w), Labels: lp.windowLabels("", w), Expr: lp.streamingAtStart(w)})
		if first {
			rs[len(rs)-1].Comment = "The most requests past their first token in flight at the window's start: the least of running +\n" +
				"waiting there and the bound recorded then (model_name:vllm_slo_streaming_requests_upper:sum)."
		}
	}
	sumLo := "sum without (objective) (" + lp.sumOver(recIntJointLo, allObjective, w) + ")"
	sumHi := "sum without (objective) (" + lp.sumOver(recIntJointHi, allObjective, w) + ")"
	winLo, winHi := lp.windowJoint(w, qStart)
	lo, hi := sumLo, sumHi
	if winLo != "" {
		lo, hi = maxOf(sumLo, winLo), minOf(sumHi, winHi, "")
	}
	base := len(rs)
	rs = append(rs, []Rule{
		{Record: windowed(recFinished, w), Expr: n, Labels: lp.windowLabels("", w)},
		{Record: windowed(recJointGoodLo, w), Expr: lo, Labels: lp.windowLabels(allObjective, w)},
		{Record: windowed(recJointGoodHi, w), Expr: hi, Labels: lp.windowLabels(allObjective, w)},
		{Record: windowed(recAbandonedLo, w), Labels: lp.windowLabels("", w),
			Expr: fmt.Sprintf("clamp_min(%s - %s - on (model_name) group_left () %s, 0)", f, n, qEnd)},
		{Record: windowed(recAbandonedHi, w), Labels: lp.windowLabels("", w),
			Expr: fmt.Sprintf("clamp_min(%s - %s + on (model_name) group_left () %s, 0)", f, n, qStart)},
	}...)
	// The estimate, as the daemon's: Q at a scrape taken to be the running
	// gauge there (at the window's start, when the series began inside the
	// window, its value at its first sample: runningAtStart). With
	// running + waiting at both edges it lies within the bounds without
	// clamping (0 <= running <= running + waiting); with the tighter bounds
	// on Q of a window up to streamingReach it is clamped into them, which
	// changes it only where it is impossible (running also counts prompts
	// still in prefill).
	est := fmt.Sprintf("clamp_min(%s - %s + on (model_name) group_left () (%s - on (model_name) %s), 0)",
		f, n, lp.sel(windowed(recRunningAtStart, w), ""), lp.now(recRunningNow, w))
	if lp.streamingBounded(w) {
		lo, hi := lp.sel(windowed(recAbandonedLo, w), ""), lp.sel(windowed(recAbandonedHi, w), "")
		est = fmt.Sprintf("((%s <= on (model_name) %s or on (model_name) %s) >= on (model_name) %s or on (model_name) %s)", est, hi, hi, lo, lo)
	}
	rs = append(rs, Rule{Record: windowed(recAbandoned, w), Labels: lp.windowLabels("", w), Expr: est})
	rs = append(rs, lp.rejectedRule(w, first))
	if first {
		rs[len(rs)-2].Comment = "Their estimate: first tokens - finished + running at the window's start - running at its end\n" +
			"(the requests past their first token in flight taken to be the running ones), clamped into the bounds."
		rs[base+1].Comment = "Requests of the window that met every objective: the per-interval bounds summed, intersected\n" +
			"with the whole window's (Frechet, at most TTFT-bad first tokens + the requests past their first\n" +
			"token in flight at the window's start of the finishers missed TTFT)."
		rs[base+3].Comment = "Requests abandoned after their first token (no finish): first tokens - finished, give or\n" +
			"take the requests past their first token in flight at the window's edges."
	}
	return append(rs, lp.attainmentRules(w, first)...)
}

// rejectedRule records the requests turned away at admission over a window:
// the intervals' exact changes summed, 0 where the server has no admission
// counter (or no target's profile names one), so that the population and
// the evidence can add it everywhere.
func (lp ledgerPlan) rejectedRule(w model.Duration, first bool) Rule {
	zero := "0 * " + lp.sumOver(recIntFinished, "", w)
	expr := zero
	if len(lp.rejected) > 0 {
		expr = lp.sumOver(recIntRejected, "", w) + "\nor\n" + zero
	}
	r := Rule{Record: windowed(recRejected, w), Expr: expr, Labels: lp.windowLabels("", w)}
	if first {
		r.Comment = "Requests turned away at admission over the window (vllm_slo_rejected_requests), 0 without admission control."
	}
	return r
}

// unserved is the population's unserved requests over a window, bad by the
// SLO's policies, as PromQL terms to add to the finished requests: the
// abandoned ones (the bound or estimate named by abandoned) under
// `abandoned: bad`, the rejected ones under `rejected: bad`; empty when the
// population holds neither.
func (lp ledgerPlan) unserved(w model.Duration, abandoned string) string {
	var terms []string
	if lp.slo.AbandonedPopulation() == slo.AbandonedBad {
		terms = append(terms, lp.sel(windowed(abandoned, w), ""))
	}
	if lp.slo.RejectedPopulation() == slo.RejectedBad {
		terms = append(terms, lp.sel(windowed(recRejected, w), ""))
	}
	return strings.Join(terms, " + ")
}

// windowJoint is the whole window's bracket of the good requests; empty
// when the SLO has no TTFT objective (the interval sums are then exact
// Fréchet sums already).
func (lp ledgerPlan) windowJoint(w model.Duration, rStart string) (lo, hi string) {
	if lp.ttftPlan == nil {
		return "", ""
	}
	bad := fmt.Sprintf("(%s - %s)", lp.sumOver(recIntFirst, "", w), lp.sumOver(recIntTTFTGoodLo, "", w))
	finLo, finHi := lp.sumOver(recIntFinished, "", w), lp.sumOver(recIntFinished, "", w)
	if len(lp.finish) > 0 {
		finLo, finHi = lp.sumOver(recIntFinGoodLo, "", w), lp.sumOver(recIntFinGoodHi, "", w)
		if len(lp.finish) > 1 {
			// Fréchet of the finish-observed objectives over the window,
			// from their own summed per-interval bounds.
			n := lp.sumOver(recIntFinished, "", w)
			finLo = fmt.Sprintf("clamp_min(sum without (objective) (%s) - %d * %s, 0)", finLo, len(lp.finish)-1, n)
			finHi = fmt.Sprintf("min without (objective) (%s)", finHi)
		} else {
			finLo = fmt.Sprintf("sum without (objective) (%s)", finLo)
			finHi = fmt.Sprintf("sum without (objective) (%s)", finHi)
		}
	}
	lo = fmt.Sprintf("clamp_min(%s - %s - on (model_name) group_left () %s, 0)", finLo, bad, rStart)
	hi = minOf(finHi, fmt.Sprintf("(%s + on (model_name) group_left () %s)", lp.sumOver(recIntTTFTGoodHi, "", w), rStart), "")
	return lo, hi
}

// attainmentRules are the joint attainment's bounds over a window, over the
// population the SLO judges.
func (lp ledgerPlan) attainmentRules(w model.Duration, first bool) []Rule {
	n := lp.sel(windowed(recFinished, w), "")
	denLo, denHi := n, n
	if u := lp.unserved(w, recAbandonedHi); u != "" {
		denLo = fmt.Sprintf("(%s + %s)", n, u)
		denHi = fmt.Sprintf("(%s + %s)", n, lp.unserved(w, recAbandonedLo))
	}
	goodLo := fmt.Sprintf("sum without (objective) (%s)", lp.sel(windowed(recJointGoodLo, w), allObjective))
	goodHi := fmt.Sprintf("sum without (objective) (%s)", lp.sel(windowed(recJointGoodHi, w), allObjective))
	lo := Rule{Record: windowed(recAttain, w), Labels: lp.windowLabels(allObjective, w),
		Expr: fmt.Sprintf("clamp_max(%s / (%s > 0), 1)", goodLo, denLo)}
	hi := Rule{Record: windowed(recAttainHi, w), Labels: lp.windowLabels(allObjective, w),
		Expr: fmt.Sprintf("clamp_max(%s / (%s > 0), 1)", goodHi, denHi)}
	if first {
		pop := "finished + abandoned requests (abandoned: bad)"
		if lp.slo.AbandonedPopulation() == slo.AbandonedExcluded {
			pop = "finished requests, abandoned ones excluded"
		}
		if lp.slo.RejectedPopulation() == slo.RejectedBad {
			pop += " + rejected requests (rejected: bad)"
		} else {
			pop += ", rejected ones excluded"
		}
		lo.Comment = "Joint attainment (objective=\"all\") over the " + pop + ": lower bound good.lo / (most requests)."
		hi.Comment = "Joint attainment's upper bound: good.hi / (fewest requests)."
	}
	return []Rule{lo, hi}
}
