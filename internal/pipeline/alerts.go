package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/alerting"
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

// AlertState is the state of an alert, as Prometheus names it
// (alerting.State).
type AlertState = alerting.State

// The alert states.
const (
	StatePending  = alerting.StatePending
	StateFiring   = alerting.StateFiring
	StateResolved = alerting.StateResolved
)

// Alert is one alert instance: a set of labels and its state over time. A
// burn-rate alert does not carry its target as a label (so that it matches
// the generated rule's alert); its annotations name it.
type Alert = alerting.Alert

// Amender adds to each report what a part of the daemon outside the
// pipeline learns from it, before the report's alerts are decided, and
// raises its own alerts through the same state machine as the pipeline's:
// the capacity learners refit on the report, put their estimates in
// Report.Capacity and return the headroom tickets whose condition holds.
type Amender interface {
	// Amend may set the fields of rep that the pipeline leaves to an
	// amender (Capacity), and returns the conditions of its alerts that
	// hold at rep.Time.
	Amend(rep *Report) []alerting.Condition
}

// AddAmender has every later evaluation amended by a, after the amenders
// added before it. Evaluate calls it with the alerts' lock held, one
// evaluation at a time.
func (p *Pipeline) AddAmender(a Amender) {
	p.alertMu.Lock()
	defer p.alertMu.Unlock()
	p.alerts.amenders = append(p.alerts.amenders, a)
}

// BurnCheck is the evaluation of one BurnAlert for one model.
type BurnCheck struct {
	Alert       BurnAlert
	Long, Short slo.Bounded
	// LongEvidence and ShortEvidence say what each window rests on.
	LongEvidence, ShortEvidence slo.Evidence
	// Known is false when either window holds no finished request, or when
	// the spec defines no SLO of the alert's name.
	Known bool
	// Reason says why Known is false; empty when it is true.
	Reason string
}

// Active reports whether the alert's condition holds: over both windows,
// the upper bound of the SLO's burn rate exceeds the factor, and so does its
// evidence (slo.Evidence.Burn): the burn rate of what the window has seen bad,
// over the population the SLO itself judges. The generated rules page on the
// same two numbers, computed the same way from the same counter changes.
//
// The burn rate is the SLO's own: the bad share of its population, finished
// requests plus, with `abandoned: bad`, the requests abandoned after their
// first token and, with `rejected: bad`, those turned away at admission
// (slo.EvidenceOf), each request bad when it missed any objective.
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
//   - the observed burn rate (slo.Evidence.Observed): the joint's bad share
//     estimated from the objectives' histograms, taken as independent, the
//     slow first tokens charged to the abandoned streams before the
//     finishers, with the unserved requests (abandoned at their estimate,
//     rejected exactly) added as bad; slo.EvidenceOf says why independence,
//     why the abandoned streams first (the observed burn rate is then never
//     above the reading that charged every slow first token to the
//     finishers alike, so the gate pages nowhere it did not before), and
//     what the abandoned estimate leaves.
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
func (c BurnCheck) Active() bool {
	f := c.Alert.Factor
	return c.Known && c.Long.Upper > f && c.Short.Upper > f &&
		c.LongEvidence.Burn(c.Long) > f && c.ShortEvidence.Burn(c.Short) > f
}

// describeEvidence writes what the observed burn rate rests on: the
// objectives' bad shares, the TTFT share charged to the finished requests
// (the slow first tokens beyond the abandoned streams'), and the unserved
// requests, for the evidence annotation.
func describeEvidence(e slo.Evidence) string {
	parts := make([]string, 0, len(e.BadShares))
	for _, m := range slices.Sorted(maps.Keys(e.BadShares)) {
		parts = append(parts, m+" "+shortNumber(100*e.BadShares[m])+"%")
	}
	charged := ""
	if _, ok := e.BadShares[string(slo.TTFT)]; ok {
		charged = ", of finishers' " + shortNumber(100*e.FinisherTTFT) + "%"
	}
	return fmt.Sprintf("bad %s of %s first tokens%s; unserved %s, abandoned %s (ledger %s [%s, %s])", strings.Join(parts, ", "),
		shortNumber(e.FirstTokens), charged, shortNumber(e.Unserved), shortNumber(e.Abandoned),
		shortNumber(e.Ledger.Estimate), shortNumber(e.Ledger.Lower), shortNumber(e.Ledger.Upper))
}

// alertBook is every alert of the pipeline's reports between evaluations:
// the one state machine (alerting.Book) that the pipeline's conditions and
// its amenders' go through.
type alertBook struct {
	book     alerting.Book
	amenders []Amender
}

// decide amends rep, and sets its alerts from the conditions that hold in
// it, the pipeline's and its amenders'. The pipeline's alert lock must be
// held.
func (b *alertBook) decide(rep *Report, spec Spec) {
	conds := alertConditions(rep, spec)
	for _, a := range b.amenders {
		conds = append(conds, a.Amend(rep)...)
	}
	rep.Alerts = b.book.Update(rep.Time, conds)
}

// alertConditions lists the alerts whose condition holds in a report.
func alertConditions(rep *Report, spec Spec) []alerting.Condition {
	var out []alerting.Condition
	for _, t := range rep.Targets {
		base := map[string]string{"target": t.Name}
		for k, v := range t.Labels {
			base[k] = v
		}
		hold := 3 * spec.targetInterval(t.Name)
		if t.Tried && !t.Up {
			out = append(out, alerting.Condition{
				Labels: withLabels(base, "alertname", AlertTargetDown, "severity", "page"),
				Annotations: map[string]string{
					"summary":     fmt.Sprintf("vLLM target %s cannot be scraped", t.Name),
					"description": "Last error: " + t.LastError,
				},
				For:    hold,
				Target: t.Name,
			})
		}
		if needed := neededMissing(t.Missing, spec.SLOs); len(needed) > 0 {
			out = append(out, alerting.Condition{
				Labels: withLabels(base, "alertname", AlertFamilyMissing, "severity", "ticket"),
				Annotations: map[string]string{
					"summary":     fmt.Sprintf("vLLM target %s lacks metric families the SLOs need: %s", t.Name, strings.Join(needed, ", ")),
					"description": "Renamed by a vLLM upgrade, or vLLM runs with --disable-log-stats. SLO series for these objectives are absent, not zero.",
				},
				For:    hold,
				Target: t.Name,
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
func burnCondition(base map[string]string, modelName string, c BurnCheck) alerting.Condition {
	a := c.Alert
	labels := map[string]string{"alertname": AlertBurnRate, "severity": a.Severity, "slo": a.SLO, "model_name": modelName,
		"long_window": model.Duration(a.Long).String(), "short_window": model.Duration(a.Short).String()}
	summary, description := BurnAlertText(a.SLO, modelName, a)
	ann := map[string]string{
		"summary":     summary,
		"description": description,
		"evidence": fmt.Sprintf("Burn rate over %s: observed %s (%s), estimate %s, bounds [%s, %s], from %s finished requests over %s%% of the window; "+
			"over %s: observed %s (%s), estimate %s, bounds [%s, %s], from %s finished requests over %s%% of the window; threshold %s.",
			model.Duration(a.Long), shortNumber(c.LongEvidence.Observed), describeEvidence(c.LongEvidence), shortNumber(c.Long.Estimate), shortNumber(c.Long.Lower), shortNumber(c.Long.Upper),
			shortNumber(c.LongEvidence.Requests), shortNumber(100*c.LongEvidence.Coverage),
			model.Duration(a.Short), shortNumber(c.ShortEvidence.Observed), describeEvidence(c.ShortEvidence), shortNumber(c.Short.Estimate), shortNumber(c.Short.Lower), shortNumber(c.Short.Upper),
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
	return alerting.Condition{Target: base["target"], Labels: labels, Annotations: ann, For: a.For}
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
