package pipeline

import (
	"fmt"
	"maps"
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
//     estimated from the objectives' histograms, taken as independent, with
//     the unserved requests (abandoned at their estimate, rejected exactly)
//     added as bad; slo.EvidenceOf says why independence, and what the
//     abandoned estimate leaves.
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
// objectives' bad shares and the unserved requests, for the evidence
// annotation.
func describeEvidence(e slo.Evidence) string {
	parts := make([]string, 0, len(e.BadShares))
	for _, m := range slices.Sorted(maps.Keys(e.BadShares)) {
		parts = append(parts, m+" "+shortNumber(100*e.BadShares[m])+"%")
	}
	return fmt.Sprintf("bad %s of %s first tokens; unserved %s, abandoned %s (ledger %s [%s, %s])", strings.Join(parts, ", "),
		shortNumber(e.FirstTokens), shortNumber(e.Unserved), shortNumber(e.Abandoned),
		shortNumber(e.Ledger.Estimate), shortNumber(e.Ledger.Lower), shortNumber(e.Ledger.Upper))
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
