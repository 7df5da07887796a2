package rules

import (
	"fmt"
	"strconv"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

// capacityGroup builds the capacity headroom ticket on the exporter's own
// vllm_slo_capacity_headroom_upper_ratio series, when capacity.headroom_margin
// is set. The capacity itself cannot be computed in PromQL: it is the
// crossing of a monotone (isotonic) fit of attainment against load over a
// day of two-minute windows, with a bootstrap for its interval, which no
// PromQL function expresses; so the rule reads what the daemon exported and
// compares it with the margin, as the daemon's own ticket does. It needs
// the daemon to be scraped: where only the rules run (no sidecar), there
// is no capacity ticket.
func capacityGroup(cfg *config.Config) (Group, bool) {
	margin := cfg.Capacity.HeadroomMargin
	if margin <= 0 {
		return Group{}, false
	}
	summary, description := capacity.HeadroomAlertText("{{ $labels.target }}", "{{ $labels.model_name }}", "{{ $labels.slo }}", margin)
	return Group{
		Name: "vllm-slo-capacity",
		Comment: "The capacity headroom ticket on the exporter's vllm_slo_capacity_* series: the capacity is an\n" +
			"isotonic fit with a bootstrapped prediction interval, which PromQL cannot compute, so this rule\n" +
			"reads the exporter's headroom and compares it with capacity.headroom_margin.",
		Rules: []Rule{{
			Alert: capacity.AlertHeadroomLow,
			// Only kind="bounded" has an upper end; without it the labels
			// are the daemon's ticket's (target and its labels, model_name, slo).
			Expr:        fmt.Sprintf("max without (instance, job, kind) (vllm_slo_capacity_headroom_upper_ratio) < %s", strconv.FormatFloat(margin, 'g', -1, 64)),
			For:         cfg.Capacity.HeadroomFor,
			Labels:      map[string]string{"severity": "ticket"},
			Annotations: map[string]string{"summary": summary, "description": description},
			Comment:     "The daemon's own ticket: same labels, margin and hold; it fires when even the upper end of the headroom's 90% prediction interval is below the margin.",
		}},
	}, true
}
