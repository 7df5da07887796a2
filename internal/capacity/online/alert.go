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
// estimates in the report (Report.Capacity) and the replica signal of each
// model and SLO computed from them (Report.Replicas, under
// capacity.DefaultReplicaPolicy), whatever renders the report then shows
// them with the rest, and returns the headroom tickets whose
// condition holds, which the pipeline's alert state machine carries with
// its own alerts (package alerting). The daemon and replay add it alike.
type Stage struct {
	Learners *Learners
	// Policy returns the headroom policy in force at each evaluation (a
	// reload may change it).
	Policy func() HeadroomPolicy
}

// Amend refits the learners on rep, sets rep.Capacity to their estimates
// and rep.Replicas to the replica signal, and returns the headroom
// tickets' conditions.
func (s Stage) Amend(rep *pipeline.Report) []alerting.Condition {
	s.Learners.Refit(rep)
	rep.Capacity = s.Learners.Reports()
	rep.Replicas = ReplicaNeeds(rep, s.Learners.config)
	return HeadroomConditions(rep.Capacity, s.Policy())
}

// ReplicaNeeds is the replica signal of every model and SLO of
// rep.Capacity (capacity.ModelNeeds under the default policy, the loads
// averaged over config's span), each with the replicas serving its model:
// rep's targets serving it whose last scrape succeeded.
func ReplicaNeeds(rep *pipeline.Report, config func(goal float64) capacity.Config) []capacity.ModelNeed {
	needs := capacity.ModelNeeds(rep.Capacity, config, capacity.DefaultReplicaPolicy())
	serving := map[string]int{}
	for _, t := range rep.Targets {
		if !t.Up {
			continue
		}
		for _, m := range t.Models {
			serving[m.Name]++
		}
	}
	for i := range needs {
		needs[i].Serving = serving[needs[i].Model]
	}
	return needs
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
