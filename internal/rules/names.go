package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Names of the recorded series. They follow Prometheus's level:metric:operations
// convention; the SLO, objective and window are also labels on every series.
const (
	recRequests  = "model_name:vllm_slo_requests:increase"
	recGood      = "model_name:vllm_slo_good_requests:increase"
	recAttain    = "model_name:vllm_slo_attainment_lower:ratio_rate"
	recBurn      = "model_name:vllm_slo_burn_rate_upper:ratio_rate"
	recBudget    = "model_name:vllm_slo_error_budget_remaining_lower:ratio"
	recFleetGood = "slo_objective:vllm_slo_good_requests:rate"
	recFleetBurn = "slo_window:vllm_slo_burn_rate_upper:max"
)

// Alert names; the same names as the alerts the daemon evaluates and pushes
// itself, so that routes and inhibitions work for both.
const (
	AlertBurnRate      = "VLLMSLOBurnRateHigh"
	AlertTargetDown    = "VLLMSLOTargetDown"
	AlertFamilyMissing = "VLLMMetricFamilyMissing"
	// AlertExporterAbsent fires in Prometheus only: the exporter cannot
	// report its own absence.
	AlertExporterAbsent = "VLLMSLOExporterAbsent"
)

// allObjective is the `objective` label of the joint attainment.
const allObjective = "all"

// windowed appends a window to a record-name prefix: "...:ratio_rate" + "5m".
func windowed(prefix string, w model.Duration) string {
	return prefix + w.String()
}

// selector writes a PromQL instant selector with equality matchers in the
// given order; values are quoted as PromQL strings.
func selector(name string, kv ...string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(strconv.Quote(kv[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// histogramNames lists the histogram family names that measure a metric on
// the configured targets, in target order without repeats, newest generation
// of each profile first.
func histogramNames(cfg *config.Config, m slo.Metric) ([]string, error) {
	var names []string
	for _, t := range cfg.Targets {
		p, err := scrape.LookupProfile(t.Profile)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", t.Name, err)
		}
		spec, ok := p.Spec(scrape.Family(m))
		if !ok || spec.Kind != scrape.KindHistogram || len(spec.Names) == 0 {
			return nil, fmt.Errorf("target %q: profile %q has no histogram for %s", t.Name, t.Profile, m)
		}
		for _, n := range spec.Names {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no target measures %s", m)
	}
	return names, nil
}

// templateText escapes text for an alert annotation, which Prometheus
// expands as a Go template.
func templateText(s string) string {
	return strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
}
