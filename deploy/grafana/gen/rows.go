//lint:file-ignore SA1019 The dashboard is built with the v1 builder: the v1 dashboard JSON is what Grafana 10 and 11 import; the v2 schema would drop them.

package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Every row fills whole 24-column lines, because the SDK's layout places a
// panel at the next free column without wrapping it first.

// sloStatus answers "are we keeping the promise?": attainment with its band,
// burn rates, remaining error budget and alerts.
func sloStatus(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("SLO status"))
	b.WithPanel(band(timeSeries("Attainment of $slo (all objectives, worst selected series)",
		"Share of requests meeting every objective of the SLO over the window. The band is the interval the true share cannot leave (vLLM's histograms are separate, so joint attainment is bounded, not known). With several targets or models, the worst one: its true value lies between the smallest lower and the smallest upper bound.",
		"percentunit", 12, 8).
		Min(0).Max(1).
		Repeat("slo").RepeatDirection(dashboard.PanelRepeatDirectionV).
		WithTarget(query("A", `min(vllm_slo_attainment_lower_ratio{`+selW+`, slo="$slo", objective="all"})`, "lower")).
		WithTarget(query("B", `min(vllm_slo_attainment_upper_ratio{`+selW+`, slo="$slo", objective="all"})`, "upper")).
		WithTarget(query("C", `min(vllm_slo_attainment_ratio{`+selW+`, slo="$slo", objective="all"})`, "estimate")),
		"lower", "upper"))
	b.WithPanel(timeSeries("Attainment per objective",
		"Estimated share of requests meeting each objective on its own (objective=\"all\": every objective).",
		"percentunit", 12, 8).
		Min(0).Max(1).
		WithTarget(query("A", `vllm_slo_attainment_ratio{`+selW+`, slo=~"$slo"}`, "{{slo}}/{{objective}} {{target}} {{model_name}}")))
	b.WithPanel(timeSeries("Burn rate (all windows)",
		"Error-budget burn rate: (1 - attainment of all objectives) / (1 - goal). 1 spends the budget exactly over the SLO period. Alerts page on the upper bound, drawn dashed against the estimate.",
		"none", 8, 8).
		Min(0).
		WithTarget(query("A", `vllm_slo_burn_rate{`+sel+`, slo=~"$slo"}`, "{{slo}} {{window}} estimate {{target}} {{model_name}}")).
		WithTarget(query("B", `vllm_slo_burn_rate_upper{`+sel+`, slo=~"$slo"}`, "{{slo}} {{window}} upper {{target}} {{model_name}}")))
	b.WithPanel(timeSeries("Error budget remaining",
		"Share of the SLO period's error budget not yet spent; negative when overspent. The lower bound is the pessimistic reading.",
		"percentunit", 8, 8).
		WithTarget(query("A", `vllm_slo_error_budget_remaining_ratio{`+sel+`, slo=~"$slo"}`, "{{slo}} estimate {{target}} {{model_name}}")).
		WithTarget(query("B", `vllm_slo_error_budget_remaining_lower_ratio{`+sel+`, slo=~"$slo"}`, "{{slo}} lower {{target}} {{model_name}}")))
	b.WithPanel(valueTable("Alerts",
		"Burn-rate alerts evaluated by the sidecar: firing, or pending while their for duration runs.",
		8, 8, map[string]any{"Value": "state"}).
		Mappings(valueText([3]string{"1", "firing", "red"}, [3]string{"0", "pending", "orange"})).
		WithTarget(instant("A", `vllm_slo_alert_firing{`+sel+`, slo=~"$slo"}`)))
}

// goodput compares what the machine produced with what it produced within
// the SLO, in tokens and in requests.
func goodput(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Goodput vs throughput"))
	b.WithPanel(band(timeSeries("Generated tokens/s: finished requests vs goodput of $slo",
		"Finished counts the generated tokens of the requests that finished in the window; goodput only those of the finished requests that met every objective of the SLO, the same population, so goodput never exceeds it. The band bounds the true goodput. Summed over the selected targets and models.",
		"tokens/s", 12, 8).
		Min(0).
		Repeat("slo").RepeatDirection(dashboard.PanelRepeatDirectionV).
		WithTarget(query("A", `sum(vllm_slo_throughput_tokens_per_second{`+selW+`, kind="finished"})`, "finished")).
		WithTarget(query("B", `sum(vllm_slo_goodput_lower_tokens_per_second{`+selW+`, slo="$slo"})`, "goodput lower")).
		WithTarget(query("C", `sum(vllm_slo_goodput_upper_tokens_per_second{`+selW+`, slo="$slo"})`, "goodput upper")).
		WithTarget(query("D", `sum(vllm_slo_goodput_tokens_per_second{`+selW+`, slo="$slo"})`, "goodput estimate")),
		"goodput lower", "goodput upper"))
	b.WithPanel(band(timeSeries("Requests/s: throughput vs goodput of $slo",
		"Finished requests per second, and those that met every objective of the SLO, with the band that bounds the true goodput. Summed over the selected targets and models.",
		"reqps", 12, 8).
		Min(0).
		Repeat("slo").RepeatDirection(dashboard.PanelRepeatDirectionV).
		WithTarget(query("A", `sum(vllm_slo_requests_per_second{`+selW+`})`, "throughput")).
		WithTarget(query("B", `sum(vllm_slo_goodput_lower_requests_per_second{`+selW+`, slo="$slo"})`, "goodput lower")).
		WithTarget(query("C", `sum(vllm_slo_goodput_upper_requests_per_second{`+selW+`, slo="$slo"})`, "goodput upper")).
		WithTarget(query("D", `sum(vllm_slo_goodput_requests_per_second{`+selW+`, slo="$slo"})`, "goodput estimate")),
		"goodput lower", "goodput upper"))
}

// latency shows one quantile of every latency metric with its bracket, and
// a table of every quantile.
func latency(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Latency quantile $quantile with brackets"))
	for _, m := range latencyMetrics {
		b.WithPanel(band(timeSeries(m.title+" p$quantile",
			"The band is the histogram bucket that certainly holds the quantile (nearest rank); the estimate lies inside it. An upper bound of +Inf means the quantile is beyond vLLM's last bucket. With several targets or models, the worst one: its true quantile lies between the largest lower and the largest upper bound.",
			"s", 8, 7).
			Min(0).
			WithTarget(query("A", `max(vllm_slo_latency_lower_seconds{`+selW+`, metric="`+m.metric+`", q="$quantile"})`, "lower")).
			WithTarget(query("B", `max(vllm_slo_latency_upper_seconds{`+selW+`, metric="`+m.metric+`", q="$quantile"})`, "upper")).
			WithTarget(query("C", `max(vllm_slo_latency_seconds{`+selW+`, metric="`+m.metric+`", q="$quantile"})`, "estimate")),
			"lower", "upper"))
	}
	b.WithPanel(timeSeries("Observations in the window",
		"How many observations each latency metric has in the window: quantiles of few observations are wide brackets. A metric with none has no latency series.",
		"short", 8, 7).
		Min(0).
		WithTarget(query("A", `vllm_slo_window_requests{`+selW+`}`, "{{metric}} {{target}} {{model_name}}")))
	b.WithPanel(timeSeries("Window coverage",
		"Span of the window's data over its length: below 100% while the sidecar's history is younger than the window (after a start, or a reload that lengthened it), so every series of that window covers less time than its label says.",
		"percentunit", 8, 7).
		Min(0).
		WithTarget(query("A", `vllm_slo_window_coverage_ratio{`+selW+`}`, "{{target}} {{model_name}}")))
	b.WithPanel(valueTable("Every quantile with its bracket (now)",
		"Estimate and the bucket (lower, upper] that certainly holds each quantile, at the end of the time range.",
		24, 9, map[string]any{"Value #A": "estimate", "Value #B": "lower", "Value #C": "upper"}).
		Unit("s").
		WithTarget(instant("A", `vllm_slo_latency_seconds{`+selW+`}`)).
		WithTarget(instant("B", `vllm_slo_latency_lower_seconds{`+selW+`}`)).
		WithTarget(instant("C", `vllm_slo_latency_upper_seconds{`+selW+`}`)))
}

// littlesLaw sets Little's Law's prediction against the concurrency vLLM
// reports: a gap means the windows are not in steady state, or requests are
// aborted (they appear in no histogram).
func littlesLaw(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Little's Law"))
	b.WithPanel(timeSeries("Concurrency: predicted (λ·W) vs observed",
		"Predicted: arrival rate × mean latency over the window, exact from the histograms' sums (total: e2e, queue: queue time, running: inference time). Observed: the time-average of vLLM's running and waiting gauges at scrapes.",
		"short", 16, 8).
		Min(0).
		WithTarget(query("A", `vllm_slo_concurrency_predicted{`+selW+`}`, "{{stage}} predicted {{target}} {{model_name}}")).
		WithTarget(query("B", `vllm_slo_concurrency_observed{`+selW+`}`, "{{stage}} observed {{target}} {{model_name}}")))
	b.WithPanel(timeSeries("KV-cache usage (vLLM)",
		"vLLM's own KV-cache gauge, scraped by Prometheus from vLLM directly: near 1 the scheduler queues or preempts, and latency grows.",
		"percentunit", 8, 8).
		Min(0).Max(1).
		WithTarget(query("A", `max by (model_name) (vllm:kv_cache_usage_perc{model_name=~"$model_name"})`, "{{model_name}}")))
}

// cost prices a million tokens on the throughput basis (every token) and on
// the goodput basis (tokens delivered within the SLO).
func cost(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Cost per million tokens"))
	b.WithPanel(timeSeries("Cost per million generated tokens",
		"GPU cost per million tokens: on the throughput basis every generated token counts, on the finished basis the tokens of the requests that finished, on the goodput basis only those of the finished requests within the SLO (compare goodput with finished: the same population). The bounds follow from goodput's bounds.",
		"none", 16, 8).
		Min(0).
		WithTarget(query("A", `vllm_slo_cost_per_million_tokens{`+selW+`}`, "{{basis}} {{slo}} estimate ({{currency}}) {{target}}")).
		WithTarget(query("B", `vllm_slo_cost_lower_per_million_tokens{`+selW+`, basis="goodput"}`, "{{basis}} {{slo}} lower ({{currency}}) {{target}}")).
		WithTarget(query("C", `vllm_slo_cost_upper_per_million_tokens{`+selW+`, basis="goodput"}`, "{{basis}} {{slo}} upper ({{currency}}) {{target}}")))
	b.WithPanel(singleStat("Cost per million tokens now",
		"Latest estimate per basis and SLO, in the configured currency.",
		"none", 8, 8).
		WithTarget(query("A", `vllm_slo_cost_per_million_tokens{`+selW+`}`, "{{basis}} {{slo}} ({{currency}})")))
}

// health is the sidecar's own state: is it scraping vLLM, how fast, why it
// fails, whether vLLM restarted or renamed a metric, and whether its last
// configuration reload worked.
func health(b *dashboard.DashboardBuilder) {
	b.WithRow(dashboard.NewRowBuilder("Sidecar health"))
	b.WithPanel(singleStat("Target up", "1 if the sidecar's last scrape of vLLM succeeded.", "none", 6, 6).
		Mappings(valueText([3]string{"1", "up", "green"}, [3]string{"0", "down", "red"})).
		Thresholds(thresholds("red", 1.0, "green")).
		WithTarget(query("A", `vllm_slo_target_up{target=~"$target"}`, "{{target}}")))
	b.WithPanel(timeSeries("Scrape duration", "Duration of the sidecar's last scrape of each target.", "s", 6, 6).
		Min(0).
		WithTarget(query("A", `vllm_slo_target_scrape_duration_seconds{target=~"$target"}`, "{{target}}")))
	b.WithPanel(timeSeries("Scrape failures by reason", "Failed scrapes per second by reason.", "ops", 6, 6).
		Min(0).
		WithTarget(query("A", `sum by (target, reason) (rate(vllm_slo_target_scrape_failures_total{target=~"$target"}[$__rate_interval]))`, "{{target}} {{reason}}")))
	b.WithPanel(singleStat("vLLM restarts in range", "Counter resets seen on the target (vLLM restarts) over the dashboard's time range.", "none", 6, 6).
		Thresholds(thresholds("green", 1.0, "orange")).
		WithTarget(query("A", `increase(vllm_slo_target_resets_total{target=~"$target"}[$__range])`, "{{target}}")))
	b.WithPanel(valueTable("Missing metric families",
		"Families the profile needs that the target does not serve (renamed by a vLLM upgrade, or --disable-log-stats). Empty is good.",
		8, 6, map[string]any{"Value": "missing"}).
		WithTarget(instant("A", `vllm_slo_target_metric_missing{target=~"$target"} == 1`)))
	b.WithPanel(singleStat("Last config reload", "Whether the sidecar's last configuration reload succeeded.", "none", 4, 6).
		Mappings(valueText([3]string{"1", "ok", "green"}, [3]string{"0", "failed", "red"})).
		Thresholds(thresholds("red", 1.0, "green")).
		WithTarget(query("A", `vllm_slo_exporter_config_last_reload_successful`, "{{instance}}")))
	b.WithPanel(singleStat("Models dropped in range", "model_name values refused by the per-target cap (max_models_per_target).", "none", 4, 6).
		Thresholds(thresholds("green", 1.0, "orange")).
		WithTarget(query("A", `increase(vllm_slo_target_models_dropped_total{target=~"$target"}[$__range])`, "{{target}}")))
	b.WithPanel(timeSeries("Sidecar memory", "Resident memory of each sidecar process.", "bytes", 4, 6).
		Min(0).
		WithTarget(query("A", `process_resident_memory_bytes * on (job, instance) group_left (version) vllm_slo_exporter_build_info`, "{{instance}} {{version}}")))
	b.WithPanel(timeSeries("Sidecar CPU", "CPU used by each sidecar process, in cores.", "none", 4, 6).
		Min(0).
		WithTarget(query("A", `rate(process_cpu_seconds_total[$__rate_interval]) * on (job, instance) group_left (version) vllm_slo_exporter_build_info`, "{{instance}} {{version}}")))
}
