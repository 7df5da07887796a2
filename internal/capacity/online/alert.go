package online

import (
	"maps"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/alerting"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// HeadroomPolicy is when the VLLMSLOCapacityHeadroomLow ticket is raised:
// while capacity.HeadroomLow holds at Margin (0: never), after it has held
// for Hold.
type HeadroomPolicy struct {
	Margin float64
	Hold   time.Duration
}

// Stage is the capacity learners' part of every evaluation of a pipeline
// (a pipeline.Amender): it refits the learners on the report, puts their
// estimates in the report (Report.Capacity), whatever renders the report
// then shows them with the rest, and returns the headroom tickets whose
// condition holds, which the pipeline's alert state machine carries with
// its own alerts (package alerting). The daemon and replay add it alike.
type Stage struct {
	Learners *Learners
	// Policy returns the headroom policy in force at each evaluation (a
	// reload may change it).
	Policy func() HeadroomPolicy
}

// Amend refits the learners on rep, sets rep.Capacity to their estimates
// and returns the headroom tickets' conditions.
func (s Stage) Amend(rep *pipeline.Report) []alerting.Condition {
	s.Learners.Refit(rep)
	rep.Capacity = s.Learners.Reports()
	return HeadroomConditions(rep.Capacity, s.Policy())
}

// HeadroomConditions are the VLLMSLOCapacityHeadroomLow tickets whose
// condition holds for the estimates under p. Their labels are the rule's
// (target, the target's labels, model_name, slo, alertname, severity),
// so that Alertmanager merges the daemon's and Prometheus's ticket.
func HeadroomConditions(reps []capacity.Report, p HeadroomPolicy) []alerting.Condition {
	var out []alerting.Condition
	for _, r := range reps {
		if !capacity.HeadroomLow(r.Estimate, p.Margin) {
			continue
		}
		labels := maps.Clone(r.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, map[string]string{
			"alertname": capacity.AlertHeadroomLow, "severity": "ticket",
			"target": r.Target, "model_name": r.Model, "slo": r.SLO,
		})
		summary, description := capacity.HeadroomAlertText(r.Target, r.Model, r.SLO, p.Margin)
		out = append(out, alerting.Condition{Target: r.Target, Labels: labels, For: p.Hold,
			Annotations: map[string]string{"summary": summary, "description": description}})
	}
	return out
}
