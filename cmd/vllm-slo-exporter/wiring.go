package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// specFromConfig translates a validated configuration into the pipeline's spec.
func specFromConfig(cfg *config.Config) pipeline.Spec {
	spec := pipeline.Spec{
		Quantiles: cfg.Global.Quantiles,
		Currency:  cfg.Cost.Currency,
		MaxModels: cfg.Global.MaxModelsPerTarget,
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

func sloFromConfig(s config.SLO) slo.SLO {
	out := slo.SLO{Name: s.Name, Goal: s.Goal, Period: time.Duration(s.Period), Abandoned: s.AbandonedPopulation()}
	for _, o := range s.ObjectiveList() {
		out.Objectives = append(out.Objectives, slo.Objective{Metric: o.Metric, Threshold: o.Threshold.Seconds()})
	}
	return out
}

// printRules is the rules command.
func printRules(out io.Writer, logger *slog.Logger, file string) int {
	cfg, err := config.Load(file)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	rf, err := rules.Generate(cfg)
	if err != nil {
		return fail(logger, "generate rules", err)
	}
	b, err := rf.YAML()
	if err != nil {
		return fail(logger, "generate rules", err)
	}
	if _, err := out.Write(b); err != nil {
		return fail(logger, "write rules", err)
	}
	return 0
}

// checkConfigFile is the check-config command.
func checkConfigFile(stdout, stderr io.Writer, file string) int {
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK (%d targets, %d SLOs)\n", file, len(cfg.Targets), len(cfg.SLOs))
	return 0
}
