//lint:file-ignore SA1019 The dashboard is built with the v1 builder: the v1 dashboard JSON is what Grafana 10 and 11 import; the v2 schema would drop them.

package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// capacityRow answers "how much more load can it take?": the headroom with
// its prediction interval, the time to breach at the load's trend, and the
// capacity against the load. The capacity is a prediction learned online
// (docs/capacity.md), not a bound, and the panels say so.
func capacityRow(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Capacity headroom"))
	b.WithPanel(band(timeSeries("Headroom before $slo breaks (worst selected series)",
		"1 − load over the last 10 minutes / capacity, the capacity being the highest sustained arrival rate at which the SLO's attainment stays at its goal for the mix observed. The band is the 90% prediction interval (a prediction, not a bound); kind=\"lower_only\" answers have no upper end. VLLMSLOCapacityHeadroomLow tickets when the upper end stays below capacity.headroom_margin. With several targets or models, the worst one.",
		"percentunit", 12, 8).
		Max(1).
		Repeat("slo").RepeatDirection(dashboard.PanelRepeatDirectionV).
		WithTarget(query("A", `min(vllm_slo_capacity_headroom_lower_ratio{`+sel+`, slo="$slo"})`, "lower")).
		WithTarget(query("B", `min(vllm_slo_capacity_headroom_upper_ratio{`+sel+`, slo="$slo"})`, "upper")).
		WithTarget(query("C", `min(vllm_slo_capacity_headroom_ratio{`+sel+`, slo="$slo"})`, "estimate")),
		"lower", "upper"))
	b.WithPanel(timeSeries("Time to breach at the load's trend",
		"When the load, growing at its least-squares trend of the last 30 minutes, reaches the predicted capacity (earliest: the lower end of its interval). Absent while the trend does not point there or the capacity is not bounded.",
		"s", 12, 8).
		Min(0).
		WithTarget(query("A", `vllm_slo_capacity_time_to_breach_seconds{`+sel+`, slo=~"$slo"}`, "{{slo}} {{target}} {{model_name}}")).
		WithTarget(query("B", `vllm_slo_capacity_time_to_breach_earliest_seconds{`+sel+`, slo=~"$slo"}`, "{{slo}} earliest {{target}} {{model_name}}")))
	b.WithPanel(timeSeries("Capacity and load (req/s)",
		"The predicted capacity with the ends of its 90% prediction interval, and the arrival rate over the last 10 minutes the headroom is taken at. kind says whether the history bounds the capacity (bounded) or only supports a lower end (lower_only: the highest load seen with the SLO met).",
		"reqps", 16, 8).
		Min(0).
		WithTarget(query("A", `vllm_slo_capacity_requests_per_second{`+sel+`, slo=~"$slo"}`, "{{slo}} capacity ({{kind}}) {{target}} {{model_name}}")).
		WithTarget(query("B", `vllm_slo_capacity_lower_requests_per_second{`+sel+`, slo=~"$slo"}`, "{{slo}} lower {{target}} {{model_name}}")).
		WithTarget(query("C", `vllm_slo_capacity_upper_requests_per_second{`+sel+`, slo=~"$slo"}`, "{{slo}} upper {{target}} {{model_name}}")).
		WithTarget(query("D", `max by (target, model_name) (vllm_slo_capacity_load_requests_per_second{`+sel+`, slo=~"$slo"})`, "load {{target}} {{model_name}}")))
	b.WithPanel(valueTable("Capacity now",
		"The latest capacity per target, model and SLO, with its kind (bounded, lower_only, unknown) and the concurrency at the knee (Little's law), which is what --max-num-seqs should be compared with.",
		8, 8, map[string]any{"Value #A": "req/s", "Value #B": "concurrency"}).
		WithTarget(instant("A", `vllm_slo_capacity_requests_per_second{`+sel+`, slo=~"$slo"}`)).
		WithTarget(instant("B", `vllm_slo_capacity_concurrency{`+sel+`, slo=~"$slo"}`)))
}
