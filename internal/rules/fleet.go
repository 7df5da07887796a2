package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// fleetGroup builds the rules on the exporter's own vllm_slo_* series: good
// request rates and the worst burn rate across a fleet of sidecars, and the
// alerts about targets the exporters cannot read.
func fleetGroup(cfg *config.Config) Group {
	g := Group{
		Name: "vllm-slo-exporter",
		Comment: "Rules on the exporter's own series, for a fleet of sidecars: vllm_slo_good_requests_total\n" +
			"is a counter, so sum(rate()) merges it across targets; burn rates are not additive, so\n" +
			"the fleet view is the worst one.",
	}
	var windows []model.Duration
	for _, s := range cfg.SLOs {
		for _, a := range s.Alerts {
			windows = append(windows, a.LongWindow, a.ShortWindow)
		}
	}
	slices.Sort(windows)
	for _, w := range slices.Compact(windows) {
		g.Rules = append(g.Rules, Rule{
			Record: windowed(recFleetGood, w),
			Expr:   fmt.Sprintf("sum by (slo, objective) (rate(vllm_slo_good_requests_total[%s]))", w),
		})
	}
	g.Rules = append(g.Rules,
		Rule{
			Record: recFleetBurn,
			Expr:   "max by (slo, window) (vllm_slo_burn_rate_upper)",
		},
		Rule{
			Alert:  AlertTargetDown,
			Expr:   "max without (instance, job) (vllm_slo_target_up) == 0",
			For:    model.Duration(targetDownHold(cfg)),
			Labels: map[string]string{"severity": "page"},
			Annotations: map[string]string{
				"summary":     "vLLM target {{ $labels.target }} cannot be scraped by vllm-slo-exporter",
				"description": "The exporter has failed to scrape target {{ $labels.target }} for three scrape intervals; its SLO series are stale. See vllm_slo_target_scrape_failures_total for the reason.",
			},
			Comment: "The daemon's own alert: same labels (target and the target's labels) and the same hold, three scrape intervals.",
		},
		Rule{
			Alert:  AlertExporterAbsent,
			Expr:   "absent(vllm_slo_target_up)",
			For:    model.Duration(exporterAbsentHold),
			Labels: map[string]string{"severity": "page"},
			Annotations: map[string]string{
				"summary":     "vllm-slo-exporter is gone: Prometheus has no vllm_slo_target_up series",
				"description": "No exporter is scraped, or it serves no target: neither its burn-rate alerts nor its target-down alerts can fire.",
			},
			Comment: "Nothing else would say that the exporter itself stopped: its own alerts stop with it.",
		},
	)
	if needed := neededFamilies(cfg); len(needed) > 0 {
		quoted := make([]string, len(needed))
		for i, n := range needed {
			quoted[i] = regexp.QuoteMeta(n)
		}
		g.Rules = append(g.Rules, Rule{
			Alert:  AlertFamilyMissing,
			Expr:   fmt.Sprintf("vllm_slo_target_metric_missing{metric=~%q} == 1", strings.Join(quoted, "|")),
			For:    model.Duration(10 * time.Minute),
			Labels: map[string]string{"severity": "ticket"},
			Annotations: map[string]string{
				"summary":     "vLLM target {{ $labels.target }} lacks the {{ $labels.metric }} histogram the SLOs need",
				"description": "Renamed by a vLLM upgrade, or vLLM runs with --disable-log-stats. SLO series for this objective are absent, not zero.",
			},
			Comment: "Only the families some SLO needs: its objectives, and e2e, which counts finished requests.",
		})
	}
	return g
}

// exporterAbsentHold is how long vllm_slo_target_up must be absent before
// the exporter is declared gone.
const exporterAbsentHold = 2 * time.Minute

// targetDownHold is the hold of the target-down alert: three scrape
// intervals of the slowest target, as the daemon holds its own alert.
func targetDownHold(cfg *config.Config) time.Duration {
	var longest time.Duration
	for _, t := range cfg.Targets {
		longest = max(longest, t.Interval(cfg.Global))
	}
	if longest <= 0 {
		longest = 15 * time.Second
	}
	return 3 * longest
}

// neededFamilies lists the latency metrics some SLO needs, exactly as the
// daemon's alert does (slo.NeededMetrics).
func neededFamilies(cfg *config.Config) []string {
	var slos []slo.SLO
	for _, s := range cfg.SLOs {
		var objs []slo.Objective
		for _, o := range s.ObjectiveList() {
			objs = append(objs, slo.Objective{Metric: o.Metric})
		}
		slos = append(slos, slo.SLO{Objectives: objs})
	}
	var out []string
	for _, m := range slo.NeededMetrics(slos) {
		out = append(out, string(m))
	}
	return out
}
