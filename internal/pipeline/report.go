package pipeline

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Report is one evaluation of every target, model, window and SLO. It is
// immutable once built: the collector, the landing page, the alert evaluator
// and replay read it concurrently without locks.
type Report struct {
	// Time is the evaluation time.
	Time time.Time
	// Currency labels the cost series.
	Currency string
	// Targets are in configuration order.
	Targets []TargetReport
	// Alerts are the pending, firing and recently resolved alerts: the
	// pipeline's and its amenders' (Pipeline.AddAmender), which went
	// through one state machine (package alerting).
	Alerts []Alert
	// Capacity holds the capacity estimates an amender learned from the
	// report (the daemon's capacity learners, package capacity/online),
	// ordered as they return them; nil without one. The exporter renders
	// them with the rest of the report.
	Capacity []capacity.Report
	// Replicas holds the replica signal of each model and SLO, computed by
	// the same amender from Capacity (capacity.ModelNeeds); nil without
	// one. The exporter and the console render it.
	Replicas []capacity.ModelNeed
}

// Firing returns the alerts that are firing.
func (r *Report) Firing() []Alert {
	var out []Alert
	for _, a := range r.Alerts {
		if a.State == StateFiring {
			out = append(out, a)
		}
	}
	return out
}

// TargetReport is the state of one target and its models.
type TargetReport struct {
	Name string
	// Labels are the target's extra labels from the configuration.
	Labels map[string]string
	// Tried is true once a scrape of the target has completed (success or failure).
	Tried bool
	// Up is true when the last scrape succeeded.
	Up bool
	// LastScrape is when the last scrape finished; LastError its error, if any.
	LastScrape time.Time
	LastError  string
	// ScrapeDuration is the last scrape's duration in seconds.
	ScrapeDuration float64
	// Failures counts failed scrapes by reason since start.
	Failures map[string]float64
	// Rejections counts, by family and reason, the models left out of
	// otherwise good scrapes because that family failed validation for them
	// (see scrape.Snapshot.Rejected); LastError then names the first.
	Rejections map[FamilyRejection]float64
	// Resets counts counter resets (vLLM restarts) seen since start.
	Resets float64
	// Missing lists the profile families absent from the last good scrape, and
	// Found the exposed name each present family was read from.
	Missing []string
	Found   map[string]string
	// Warnings are lasting remarks about the configuration against what the
	// target serves, such as thresholds that are not bucket edges.
	Warnings []string
	// ModelsDropped counts model_name values refused by the cardinality cap.
	ModelsDropped float64
	// History is the memory the target's history holds against its limit,
	// and what the limit dropped.
	History history.Usage
	// HourlyCost is the target's GPU cost per hour (0: no cost series).
	HourlyCost float64
	// Models are sorted by name.
	Models []ModelReport
}

// ModelReport is every window's numbers for one model_name of one target.
type ModelReport struct {
	Name string
	// Windows are in configured order. Latency, throughput and concurrency
	// include warm-up observations; the SLO results exclude them.
	Windows []slo.WindowReport
	// Budgets holds each SLO's error budget over its period, in SLO order.
	Budgets []Budget
	// Burns holds the evaluation of each burn-rate alert, in Spec.Alerts order.
	Burns []BurnCheck
	// GoodRequests holds the running totals of estimated good requests per SLO
	// and objective: a counter, mergeable across a fleet with sum(rate()).
	GoodRequests []GoodTotal
	// Traces holds, when exact mode is on, the trace side of each window in
	// Windows order: coverage, and for covered windows the exact numbers
	// (already in Windows), the per-adapter numbers and the calibration.
	Traces []traces.Result
	// Calibration sums the calibration of the covered windows over every
	// evaluation since the start, by window length (exact mode).
	Calibration []traces.CalibrationTotal
}

// Budget is one SLO's error budget over its period.
type Budget struct {
	SLO string
	// Remaining is the share of the period's error budget not yet spent;
	// negative when overspent. Its bounds follow the joint attainment's.
	Remaining slo.Bounded
	// Covered is how much of the period the history holds: the budget's
	// window is shorter than the period until the history has filled it.
	Covered time.Duration
	// Known is false when the period holds no finished request.
	Known bool
	// End is the scrape the budget's window ends at: the newest one at or
	// before the evaluation time, which the burn-rate checks read too
	// (zero when the history holds no window). In exact mode it is later
	// than the end of a window the spans covered, which lags by the trace
	// delay.
	End time.Time
	// Coverage is the share of the period the history spans (see
	// slo.Window.Coverage): an overspent budget after nine minutes of a day rests
	// on those nine minutes.
	Coverage float64
	// TracesCoverage is, in exact mode, the share of the period's finished
	// requests whose scrape interval the spans covered (exact there).
	TracesCoverage    float64
	HasTracesCoverage bool
}

// GoodTotal is a counter of estimated good requests.
type GoodTotal = store.GoodTotal

// FamilyRejection is a logical family (as in TargetReport.Missing) and the
// reason (a scrape failure reason) it was rejected for.
type FamilyRejection = store.Rejection
