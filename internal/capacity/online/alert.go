package online

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// resolvedRetention keeps a resolved ticket in the alerts long enough for
// the notifier to send the resolve more than once, as the pipeline keeps
// its own.
const resolvedRetention = 15 * time.Minute

// HeadroomAlerts keeps the state of the VLLMSLOCapacityHeadroomLow tickets
// between evaluations: pending while capacity.HeadroomLow holds, firing
// once it has held for the configured time, resolved when it stops. Its
// labels are the rule's (target, the target's labels, model_name, slo),
// so that Alertmanager merges the daemon's and Prometheus's ticket. It is
// not safe for concurrent use: the daemon evaluates one report at a time.
type HeadroomAlerts struct {
	alerts map[string]*pipeline.Alert
}

// NewHeadroomAlerts returns alerts with none active.
func NewHeadroomAlerts() *HeadroomAlerts {
	return &HeadroomAlerts{alerts: map[string]*pipeline.Alert{}}
}

// Update applies the estimates at now, under margin and hold, and returns
// every ticket pending, firing or recently resolved, ordered by labels. A
// margin of 0 raises none (and resolves those firing).
func (h *HeadroomAlerts) Update(now time.Time, reps []capacity.Report, margin float64, hold time.Duration) []pipeline.Alert {
	seen := map[string]bool{}
	for _, r := range reps {
		if !capacity.HeadroomLow(r.Estimate, margin) {
			continue
		}
		labels := map[string]string{}
		maps.Copy(labels, r.Labels)
		maps.Copy(labels, map[string]string{
			"alertname": capacity.AlertHeadroomLow, "severity": "ticket",
			"target": r.Target, "model_name": r.Model, "slo": r.SLO,
		})
		k := labelsKey(labels)
		seen[k] = true
		a := h.alerts[k]
		if a == nil || a.State == pipeline.StateResolved {
			a = &pipeline.Alert{Target: r.Target, Labels: labels, State: pipeline.StatePending, ActiveAt: now}
			h.alerts[k] = a
		}
		summary, description := capacity.HeadroomAlertText(r.Target, r.Model, r.SLO, margin)
		a.Annotations = map[string]string{"summary": summary, "description": description}
		if a.State == pipeline.StatePending && now.Sub(a.ActiveAt) >= hold {
			a.State, a.FiredAt = pipeline.StateFiring, now
		}
	}
	for k, a := range h.alerts {
		switch {
		case seen[k]:
		case a.State == pipeline.StatePending:
			delete(h.alerts, k)
		case a.State == pipeline.StateFiring:
			a.State, a.ResolvedAt = pipeline.StateResolved, now
		case now.Sub(a.ResolvedAt) > resolvedRetention:
			delete(h.alerts, k)
		}
	}
	out := make([]pipeline.Alert, 0, len(h.alerts))
	for _, k := range slices.Sorted(maps.Keys(h.alerts)) {
		out = append(out, *h.alerts[k])
	}
	return out
}

// labelsKey identifies an alert by its labels.
func labelsKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "\x00" + labels[k] + "\x00")
	}
	return b.String()
}

// Publish refits ls on rep and returns rep with the headroom tickets h
// raises (at margin, after hold) beside its alerts, so that whatever
// renders the report sees them as it sees the pipeline's. rep is not
// changed: the result is a copy when there is a ticket. The daemon and
// replay publish through it alike.
func Publish(ls *Learners, h *HeadroomAlerts, rep *pipeline.Report, margin float64, hold time.Duration) *pipeline.Report {
	ls.Refit(rep)
	tickets := h.Update(rep.Time, ls.Reports(), margin, hold)
	if len(tickets) == 0 {
		return rep
	}
	out := *rep
	out.Alerts = append(slices.Clone(rep.Alerts), tickets...)
	return &out
}
