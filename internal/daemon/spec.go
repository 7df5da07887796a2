package daemon

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// PipelineSpec translates a validated configuration into the pipeline's
// spec: what the daemon evaluates, and what replay evaluates over a
// recording.
func PipelineSpec(cfg *config.Config) pipeline.Spec {
	spec := pipeline.Spec{
		Quantiles: cfg.Global.Quantiles,
		Currency:  cfg.Cost.Currency,
		MaxModels: cfg.Global.MaxModelsPerTarget,

		HistoryLimit:      int64(cfg.Global.HistorySizeLimit),
		HistoryTotalLimit: int64(cfg.Global.HistoryTotalSizeLimit),
	}
	var longestWindow time.Duration
	for _, w := range cfg.Global.Windows {
		spec.Windows = append(spec.Windows, time.Duration(w))
		longestWindow = max(longestWindow, time.Duration(w))
	}
	for _, t := range cfg.Targets {
		profile, err := scrape.LookupProfile(t.Profile)
		if err != nil {
			continue // config validation already refused unknown profiles
		}
		spec.Targets = append(spec.Targets, pipeline.TargetSpec{
			Name:       t.Name,
			URL:        t.URL,
			Profile:    profile,
			Labels:     t.Labels,
			Warmup:     time.Duration(t.Warmup),
			HourlyCost: t.HourlyCost(cfg.Cost),
			Interval:   t.Interval(cfg.Global),
		})
	}
	for _, s := range cfg.SLOs {
		spec.SLOs = append(spec.SLOs, sloFromConfig(s))
		for _, a := range s.Alerts {
			spec.Alerts = append(spec.Alerts, pipeline.BurnAlert{
				SLO:        s.Name,
				Severity:   a.Severity,
				Long:       time.Duration(a.LongWindow),
				Short:      time.Duration(a.ShortWindow),
				Factor:     a.BurnFactor(time.Duration(s.Period)),
				For:        time.Duration(a.For),
				RunbookURL: s.RunbookURL,
			})
		}
	}
	spec.Retention = history.NewRetention(longestWindow, cfg.LongestPeriod())
	return spec
}

// sloFromConfig translates one configured SLO into package slo's terms.
func sloFromConfig(s config.SLO) slo.SLO {
	out := slo.SLO{Name: s.Name, Goal: s.Goal, Period: time.Duration(s.Period), Abandoned: s.AbandonedPopulation(), Rejected: s.RejectedPopulation()}
	for _, o := range s.ObjectiveList() {
		out.Objectives = append(out.Objectives, slo.Objective{Metric: o.Metric, Threshold: o.Threshold.Seconds()})
	}
	return out
}

// pipelineSpec is PipelineSpec with the daemon's trace store, which lives as
// long as the daemon: a reload keeps the received spans.
func (d *Daemon) pipelineSpec(cfg *config.Config) pipeline.Spec {
	spec := PipelineSpec(cfg)
	spec.Intervals = d.capacity
	if d.exact != nil {
		spec.Traces = d.exact.Store
		spec.TraceDelay = time.Duration(cfg.OTLP.SpanDelay)
		spec.TraceLateness = time.Duration(cfg.OTLP.MaxLateness)
	}
	return spec
}
