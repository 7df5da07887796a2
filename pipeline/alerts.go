package pipeline

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BurnAlert is one multiwindow, multi-burn-rate alert of an SLO (Google SRE
// workbook): it is active while the burn rate over both the long and the short
// window exceeds Factor.
type BurnAlert struct {
	SLO      string
	Severity string
	Long     time.Duration
	Short    time.Duration
	// Factor is the burn rate threshold: budget share consumed × period / Long.
	Factor float64
	// For is how long the condition must hold before the alert fires.
	For        time.Duration
	RunbookURL string
}

// Alert names.
const (
	AlertBurnRate      = "VLLMSLOBurnRateHigh"
	AlertTargetDown    = "VLLMSLOTargetDown"
	AlertFamilyMissing = "VLLMMetricFamilyMissing"
)

// AlertState is the state of an alert, as Prometheus names it.
type AlertState string

// The alert states.
const (
	StatePending  AlertState = "pending"
	StateFiring   AlertState = "firing"
	StateResolved AlertState = "resolved"
)

// Alert is one alert instance: a set of labels and its state over time.
type Alert struct {
	// Target is the target whose evaluation raised the alert. A burn-rate
	// alert does not carry it as a label (so that it matches the generated
	// rule's alert); its annotations name it.
	Target      string
	Labels      map[string]string
	Annotations map[string]string
	State       AlertState
	// ActiveAt is when the condition began to hold; FiredAt when the alert
	// started firing; ResolvedAt when a firing alert's condition stopped.
	ActiveAt, FiredAt, ResolvedAt time.Time
}

// Name is the alertname label.
func (a Alert) Name() string { return a.Labels["alertname"] }

// Fingerprint identifies the alert by its labels.
func (a Alert) Fingerprint() string { return a.Target + "\x00" + alertKey(a.Labels) }

// BurnCheck is the evaluation of one BurnAlert for one model.
type BurnCheck struct {
	Alert       BurnAlert
	Long, Short slo.Bounded
	// LongEvidence and ShortEvidence say what each window rests on.
	LongEvidence, ShortEvidence Evidence
	// Known is false when either window holds no finished request, or when
	// the spec defines no SLO of the alert's name.
	Known bool
	// Reason says why Known is false; empty when it is true.
	Reason string
}

// Active reports whether the alert's condition holds: over both windows,
// the upper bound of the SLO's burn rate exceeds the factor, and so does its
// evidence (Evidence.Burn): the burn rate of what the window has seen bad,
// over the population the SLO itself judges. The generated rules page on the
// same two numbers, computed the same way from the same counter changes.
//
// The burn rate is the SLO's own: the bad share of its population, finished
// requests plus, with `abandoned: bad`, the requests abandoned after their
// first token and, with `rejected: bad`, those turned away at admission
// (see unservedBad), each request bad when it missed any objective.
//
// Why the upper bound: the truth cannot exceed it, so a window whose upper
// bound is under the factor is surely not burning that fast.
//
// Why the evidence as well: the upper bound alone pages on nothing. Right
// after a start or a restart, or over a 1m window, it is wide only because
// of requests the window cannot see yet (in flight, first token without a
// finish), and it paged with no bad request behind it ("estimate 0, bounds
// [0, 95]"). The evidence is the larger of two numbers, each of which rests
// on observations only:
//   - the joint burn rate's lower bound (the truth is at least this): when
//     it exceeds the factor, the breach is proven;
//   - the observed burn rate (Evidence.Observed): the joint's bad share
//     estimated from the objectives' histograms, with the unserved requests
//     (abandoned at their estimate, rejected exactly) added as bad.
//
// Why a vacuous upper bound still cannot page. The upper bound is wide by
// what the window has not seen: requests in flight at its edges, first
// tokens whose finish is not yet observed, abandoned requests at the most
// the gauges allow. None of these enters the evidence. Each objective's bad
// share is 1 − its attainment's lower bound over its histogram's own
// observations (a request not yet observed adds to no count); the abandoned
// requests enter at their estimate from the running gauge, not at their
// upper bound (whose width is the requests in decode at the window's end);
// the rejected ones are the server's own count. So with no bad request
// observed and none abandoned or rejected the evidence is 0, whatever the
// upper bound says, and the gate stays shut. The lower bound, the other
// half of the evidence, is proven, so it never exceeds the truth.
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
func (c BurnCheck) Active() bool {
	f := c.Alert.Factor
	return c.Known && c.Long.Upper > f && c.Short.Upper > f &&
		c.LongEvidence.Burn(c.Long) > f && c.ShortEvidence.Burn(c.Short) > f
}

// Evidence is what one window's burn rate rests on.
type Evidence struct {
	// Requests is the number of requests that finished in the window.
	Requests float64
	// Coverage is the share of the window's nominal length that the history
	// spans (scrapes since start, since a restart's warm-up, or since a gap
	// the window may not cross), in [0, 1].
	Coverage float64
	// Observed is the burn rate of the requests seen bad, over the SLO's
	// population: with b_i each joint objective's bad share (1 − its
	// attainment lower bound, over its own histogram's population), s = 1 −
	// Π(1 − b_i) the joint's bad share taking the objectives as independent
	// (see Active for why), N the finished requests and U the requests the
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
	// PromQL cannot follow: the annotation gives both.
	Abandoned float64
	Ledger    slo.Bounded
}

// describe writes what the observed burn rate rests on: the objectives' bad
// shares and the unserved requests, for the evidence annotation.
func (e Evidence) describe() string {
	parts := make([]string, 0, len(e.BadShares))
	for _, m := range slices.Sorted(maps.Keys(e.BadShares)) {
		parts = append(parts, m+" "+shortNumber(100*e.BadShares[m])+"%")
	}
	return fmt.Sprintf("bad %s of %s first tokens; unserved %s, abandoned %s (ledger %s [%s, %s])", strings.Join(parts, ", "),
		shortNumber(e.FirstTokens), shortNumber(e.Unserved), shortNumber(e.Abandoned),
		shortNumber(e.Ledger.Estimate), shortNumber(e.Ledger.Lower), shortNumber(e.Ledger.Upper))
}

// Burn is the evidence that the window burns its budget: the larger of the
// observed burn rate and the burn rate's lower bound b.Lower (see Active).
func (e Evidence) Burn(b slo.Bounded) float64 { return math.Max(e.Observed, b.Lower) }

// objectiveEvidence computes the observed burn rate of an SLO result over
// window w (see Evidence.Observed): the per-request objectives of the
// joint, or ITL when it is the SLO's only kind of objective, as the joint
// counts them. An objective the window holds no attainment for (no
// observation) counts none bad, as in the rules, where its series is absent.
func objectiveEvidence(r slo.SLOResult, s slo.SLO, w slo.Window) Evidence {
	var joint []slo.Metric
	for _, o := range s.Objectives {
		if o.Metric != slo.ITL {
			joint = append(joint, o.Metric)
		}
	}
	if len(joint) == 0 {
		joint = []slo.Metric{slo.ITL}
	}
	var ev Evidence
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
	if ttft, ok := w.Latency[slo.TTFT]; ok && ttft.Valid() {
		ev.FirstTokens = ttft.Total()
	}
	ev.Ledger = r.Abandoned
	ev.Unserved, ev.Abandoned = unservedBad(r, s, w)
	n := r.Requests
	if joint[0] == slo.ITL || !(n+ev.Unserved > 0) {
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
func unservedBad(r slo.SLOResult, s slo.SLO, w slo.Window) (unserved, abandoned float64) {
	rejected := 0.0
	if r.HasRejected && s.Rejected == slo.RejectedBad {
		rejected = r.Rejected // exact: the server's own count
	}
	if !r.HasAbandoned {
		return rejected, 0
	}
	a, ok := abandonedEstimate(w, r.Requests)
	if !ok {
		a = math.Max(0, r.Abandoned.Lower)
	}
	if s.Abandoned != slo.AbandonedBad {
		return rejected, a
	}
	return rejected + a, a
}

// abandonedEstimate estimates the requests abandoned after their first
// token over w, with n of them finished, as the generated rules do
// (model_name:vllm_slo_abandoned_requests:increase<window>): first tokens
// − finished + running at the window's start − running at its end, at
// least 0. It is the conservation identity of slo.Abandoned with the
// requests past their first token in flight taken to be the running ones
// (the ledger's queue estimate, see ledger.queueEstimate). The ledger
// clamps each edge's running count into bounds it proves from the intervals
// before (slo.InFlightQueue, slo.SurelyBefore), a recursion PromQL cannot
// follow; the evidence leaves that clamp out so that both paths count the
// same requests (they differed by one request at a few evaluations). ok is
// false without the TTFT histogram or the running gauge.
func abandonedEstimate(w slo.Window, n float64) (float64, bool) {
	ttft, okF := w.Latency[slo.TTFT]
	if !okF || !ttft.Valid() || !w.Running.Known || math.IsNaN(w.Running.AtStart) || math.IsNaN(w.Running.AtEnd) {
		return 0, false
	}
	return math.Max(0, ttft.Total()-n+math.Max(0, w.Running.AtStart)-math.Max(0, w.Running.AtEnd)), true
}

// resolvedRetention keeps a resolved alert in the report long enough for a
// notifier to send the resolve more than once, as Prometheus does.
const resolvedRetention = 15 * time.Minute

// condition is one alert that should be active now.
type condition struct {
	target      string
	labels      map[string]string
	annotations map[string]string
	hold        time.Duration
}

// alertBook remembers alert states between evaluations. It needs evaluation
// times in order; an earlier time is treated as the latest one.
type alertBook struct {
	alerts map[string]*Alert
	last   time.Time
}

func alertKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	return b.String()
}

// update applies the conditions that hold at now and returns every alert that
// is pending, firing or recently resolved, sorted by labels.
func (b *alertBook) update(now time.Time, conds []condition) []Alert {
	if b.alerts == nil {
		b.alerts = map[string]*Alert{}
	}
	if now.Before(b.last) {
		now = b.last
	}
	b.last = now
	seen := map[string]bool{}
	for _, c := range conds {
		key := c.target + "\x00" + alertKey(c.labels)
		seen[key] = true
		a, ok := b.alerts[key]
		if !ok || a.State == StateResolved {
			a = &Alert{Target: c.target, Labels: c.labels, State: StatePending, ActiveAt: now}
			b.alerts[key] = a
		}
		a.Annotations = c.annotations
		if a.State == StatePending && now.Sub(a.ActiveAt) >= c.hold {
			a.State = StateFiring
			a.FiredAt = now
		}
	}
	for key, a := range b.alerts {
		if seen[key] {
			continue
		}
		switch {
		case a.State == StatePending:
			delete(b.alerts, key)
		case a.State == StateFiring:
			a.State = StateResolved
			a.ResolvedAt = now
		case now.Sub(a.ResolvedAt) > resolvedRetention:
			delete(b.alerts, key)
		}
	}
	out := make([]Alert, 0, len(b.alerts))
	for _, key := range slices.Sorted(maps.Keys(b.alerts)) {
		out = append(out, *b.alerts[key])
	}
	return out
}

// alertConditions lists the alerts whose condition holds in a report.
func alertConditions(rep *Report, spec Spec) []condition {
	var out []condition
	for _, t := range rep.Targets {
		base := map[string]string{"target": t.Name}
		for k, v := range t.Labels {
			base[k] = v
		}
		hold := 3 * spec.targetInterval(t.Name)
		if t.Tried && !t.Up {
			out = append(out, condition{
				labels: withLabels(base, "alertname", AlertTargetDown, "severity", "page"),
				annotations: map[string]string{
					"summary":     fmt.Sprintf("vLLM target %s cannot be scraped", t.Name),
					"description": "Last error: " + t.LastError,
				},
				hold:   hold,
				target: t.Name,
			})
		}
		if needed := neededMissing(t.Missing, spec.SLOs); len(needed) > 0 {
			out = append(out, condition{
				labels: withLabels(base, "alertname", AlertFamilyMissing, "severity", "ticket"),
				annotations: map[string]string{
					"summary":     fmt.Sprintf("vLLM target %s lacks metric families the SLOs need: %s", t.Name, strings.Join(needed, ", ")),
					"description": "Renamed by a vLLM upgrade, or vLLM runs with --disable-log-stats. SLO series for these objectives are absent, not zero.",
				},
				hold:   hold,
				target: t.Name,
			})
		}
		for _, m := range t.Models {
			for _, c := range m.Burns {
				if c.Active() {
					out = append(out, burnCondition(base, m.Name, c))
				}
			}
		}
	}
	return out
}

// burnCondition is the condition of an active burn alert. Its labels are
// exactly those of the generated rule's alert (alertname, severity, slo,
// model_name, long_window, short_window), so that Alertmanager merges the
// daemon's and Prometheus's alert for one breach; the target is named in the
// annotations.
func burnCondition(base map[string]string, modelName string, c BurnCheck) condition {
	a := c.Alert
	labels := map[string]string{"alertname": AlertBurnRate, "severity": a.Severity, "slo": a.SLO, "model_name": modelName,
		"long_window": model.Duration(a.Long).String(), "short_window": model.Duration(a.Short).String()}
	summary, description := BurnAlertText(a.SLO, modelName, a)
	ann := map[string]string{
		"summary":     summary,
		"description": description,
		"evidence": fmt.Sprintf("Burn rate over %s: observed %s (%s), estimate %s, bounds [%s, %s], from %s finished requests over %s%% of the window; "+
			"over %s: observed %s (%s), estimate %s, bounds [%s, %s], from %s finished requests over %s%% of the window; threshold %s.",
			model.Duration(a.Long), shortNumber(c.LongEvidence.Observed), c.LongEvidence.describe(), shortNumber(c.Long.Estimate), shortNumber(c.Long.Lower), shortNumber(c.Long.Upper),
			shortNumber(c.LongEvidence.Requests), shortNumber(100*c.LongEvidence.Coverage),
			model.Duration(a.Short), shortNumber(c.ShortEvidence.Observed), c.ShortEvidence.describe(), shortNumber(c.Short.Estimate), shortNumber(c.Short.Lower), shortNumber(c.Short.Upper),
			shortNumber(c.ShortEvidence.Requests), shortNumber(100*c.ShortEvidence.Coverage), shortNumber(a.Factor)),
		"target":          base["target"],
		"burn_rate":       shortNumber(c.Long.Upper),
		"burn_rate_short": shortNumber(c.Short.Upper),
		"coverage":        shortNumber(c.LongEvidence.Coverage),
		"coverage_short":  shortNumber(c.ShortEvidence.Coverage),
	}
	if a.RunbookURL != "" {
		ann["runbook_url"] = a.RunbookURL
	}
	return condition{target: base["target"], labels: labels, annotations: ann, hold: a.For}
}

func shortNumber(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func withLabels(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// neededMissing lists the missing families that evaluating the SLOs needs
// (slo.NeededMetrics).
func neededMissing(missing []string, slos []slo.SLO) []string {
	var out []string
	for _, f := range missing {
		if slices.Contains(slo.NeededMetrics(slos), slo.Metric(f)) {
			out = append(out, f)
		}
	}
	return out
}

// targetInterval is the scrape interval of a target, for alert hold times.
func (s Spec) targetInterval(name string) time.Duration {
	for _, t := range s.Targets {
		if t.Name == name && t.Interval > 0 {
			return t.Interval
		}
	}
	return 15 * time.Second
}
