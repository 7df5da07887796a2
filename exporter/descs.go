package exporter

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// boundedDescs describes an estimate and its two bounds.
type boundedDescs struct {
	estimate, lower, upper *prometheus.Desc
}

// descSet holds every descriptor for one set of extra label names.
type descSet struct {
	up, scrapeDuration, failures, resets, modelsDropped, missing *prometheus.Desc
	rejections                                                   *prometheus.Desc

	historyBytes, historyDropped *prometheus.Desc

	windowRequests, windowCoverage, budgetCoverage, budgetTraces, throughput, requestRate, predicted, observed, goodTotal, objectiveUnknown *prometheus.Desc

	aborted *prometheus.Desc
	// rejected, preemptions and promptTokensBySource are the newest
	// servers' own counts over the window.
	rejected, preemptions, promptTokensBySource *prometheus.Desc
	// preempted is the share of the window's finished requests preempted at
	// least once; waitingMean and waitingMax the waiting requests by reason.
	preempted               boundedDescs
	waitingMean, waitingMax *prometheus.Desc

	alertFiring *prometheus.Desc

	latency, attainment, goodputTokens, goodputRequests, burnRate, budget, cost, abandoned boundedDescs

	traces traceDescs
}

func newDescSet(extra []string) *descSet {
	target := append([]string{"target"}, extra...)
	model := append(append([]string{}, target...), "model_name")
	with := func(base []string, more ...string) []string {
		return append(append([]string{}, base...), more...)
	}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_"+name, help, labels, nil)
	}
	bounded := func(prefix, suffix, help string, labels []string) boundedDescs {
		name := func(parts ...string) string {
			var kept []string
			for _, p := range parts {
				if p != "" {
					kept = append(kept, p)
				}
			}
			return strings.Join(kept, "_")
		}
		return boundedDescs{
			estimate: desc(name(prefix, suffix), "Estimate of the "+help, labels),
			lower:    desc(name(prefix, "lower", suffix), "Lower bound, which the true value cannot be below, of the "+help, labels),
			upper:    desc(name(prefix, "upper", suffix), "Upper bound, which the true value cannot exceed, of the "+help, labels),
		}
	}
	return &descSet{
		up:             desc("target_up", "1 if the last scrape of the target succeeded, 0 otherwise.", target),
		scrapeDuration: desc("target_scrape_duration_seconds", "Duration of the last scrape of the target.", target),
		failures:       desc("target_scrape_failures_total", "Failed scrapes of the target by reason.", with(target, "reason")),
		resets:         desc("target_resets_total", "Counter resets seen on the target (vLLM restarts).", target),
		modelsDropped:  desc("target_models_dropped_total", "Snapshots' model_name values refused by the per-target model cap.", target),
		historyBytes:   desc("target_history_bytes", "Estimated memory held by the target's history; it stays within global.history_size_limit.", target),
		historyDropped: desc("target_history_points_dropped_total", "History points dropped, oldest first, to stay within the memory limit: windows then reach less far back.", target),
		rejections:     desc("target_family_rejections_total", "Models left out of otherwise good scrapes of the target because this family failed validation for them (the other models were used), by family and reason.", with(target, "metric", "reason")),
		missing:        desc("target_metric_missing", "1 when a family the profile needs is absent from the target's last good scrape (renamed by an upgrade, or --disable-log-stats), 0 when present.", with(target, "metric")),

		windowRequests: desc("window_requests", "Observations of the latency metric in the window.", with(model, "metric", "window")),
		budgetCoverage: desc("error_budget_coverage_ratio", "Share of the SLO period that the error budget rests on; below 1 until the exporter has watched a whole period (or after a long gap).", with(model, "slo")),
		budgetTraces:   desc("error_budget_traces_coverage_ratio", "In exact mode: share of the SLO period's finished requests whose scrape interval vLLM's spans covered; the error budget, burn rates and good-request totals are exact over that share and bounded by the histograms over the rest.", with(model, "slo")),
		windowCoverage: desc("window_coverage_ratio", "Share of the window's nominal length that its data spans, at most 1: below 1 while the history is younger than the window (after a start, or a reload that lengthened it) or after a gap; every other series of the window covers exactly this span.", with(model, "window")),
		throughput:     desc("throughput_tokens_per_second", "Tokens per second over the window, exact: kind=\"generation\" and \"prompt\" from vLLM's counters (tokens produced in the window), kind=\"finished\" the generation tokens of the requests that finished in the window (the population goodput tokens are part of).", with(model, "window", "kind")),
		requestRate:    desc("requests_per_second", "Finished requests per second over the window, exact.", with(model, "window")),
		aborted:        desc("aborted_requests", abortedHelp, with(model, "window")),
		rejected: desc("rejected_requests", "Requests the server turned away at admission in the window (HTTP 503; vLLM's admission_rejections_total, every reason), exact; present only where the server has admission control. They count in objective=\"all\" as not served well under rejected: bad.",
			with(model, "window")),
		preemptions: desc("preemptions", "Preemptions of running requests by the engine in the window (vLLM's num_preemptions_total), where the server counts them: a preempted request waits again and recomputes its prefill, so a breach with preemptions is one of KV-cache capacity.",
			with(model, "window")),
		preempted: bounded("preempted", "ratio", "share of the requests that finished in the window that the engine preempted at least once (vLLM's request_num_preemptions, observed at finish): its first bucket holds 0 and 1 preemptions together, and the histogram's sum separates them, exactly while no request was preempted more than five times. A breach with preempted requests is one of KV-cache capacity.",
			with(model, "window")),
		waitingMean: desc("waiting_requests_mean", "Time-average over the window of vLLM's waiting requests by reason, sampled at scrapes (num_requests_waiting_by_reason): reason=\"capacity\" waits for the scheduler (a breach from load), reason=\"deferred\" was skipped until something else was ready (a grammar, a remote KV transfer).",
			with(model, "window", "reason")),
		waitingMax: desc("waiting_requests_max", "Largest of vLLM's waiting requests by reason sampled at any scrape in the window (num_requests_waiting_by_reason; see vllm_slo_waiting_requests_mean).",
			with(model, "window", "reason")),
		promptTokensBySource: desc("prompt_tokens_by_source", "Prompt tokens of the window by where their KV came from (vLLM's prompt_tokens_by_source_total): local_compute was prefilled here, local_cache_hit came from the prefix cache, external_kv_transfer from another server.",
			with(model, "window", "source")),
		predicted:        desc("concurrency_predicted", "Little's Law concurrency λ·W over the window (exact: increase of the latency sum / window).", with(model, "window", "stage")),
		observed:         desc("concurrency_observed", "Time-average over the window of vLLM's running/waiting gauges sampled at scrapes.", with(model, "window", "stage")),
		alertFiring:      desc("alert_firing", "1 while the alert fires, 0 while it is pending (the condition holds, its for duration has not passed).", with(model, "slo", "alertname", "severity")),
		objectiveUnknown: desc("objective_unknown", "1 when the target lacks the histogram of an SLO objective in the window: attainment of \"all\", goodput and burn rate are then absent, since nothing says the requests met it.", with(model, "slo", "objective", "window")),
		goodTotal:        desc("good_requests_total", "Estimated requests that met the objective (objective=\"all\": every per-request objective; objective=\"itl\" counts token gaps, not requests), summed over scrape intervals; merge across a fleet with sum(rate()).", with(model, "slo", "objective")),

		latency:         bounded("latency", "seconds", "latency q-quantile over the window (label q holds its level, 0.99 for p99); the bounds are the bucket that certainly holds the quantile (nearest rank).", with(model, "metric", "window", QuantileLabel)),
		attainment:      bounded("attainment", "ratio", "share of requests meeting the objective over the window.", with(model, "slo", "objective", "window")),
		goodputTokens:   bounded("goodput", "tokens_per_second", "generated tokens per second of requests that finished in the window meeting every objective.", with(model, "slo", "window")),
		goodputRequests: bounded("goodput", "requests_per_second", "requests per second that finished in the window meeting every objective.", with(model, "slo", "window")),
		burnRate:        bounded("burn_rate", "", "error-budget burn rate over the window: (1 - attainment of all objectives) / (1 - goal); page on the upper bound.", with(model, "slo", "window")),
		budget:          bounded("error_budget_remaining", "ratio", "share of the SLO period's error budget not yet spent; negative when overspent.", with(model, "slo")),
		abandoned:       bounded("abandoned", "requests", "requests that got a first token and left in the window without a finish observation (client cancellations, requests lost in a restart); the SLO's abandoned setting says whether they count as bad.", with(model, "window")),
		cost:            bounded("cost", "per_million_tokens", "GPU cost per million generated tokens over the window, on the throughput basis or on the goodput basis (tokens of requests within the SLO).", with(model, "window", "basis", "slo", "currency")),

		traces: newTraceDescs(model, desc),
	}
}

// abortedHelp is the HELP of vllm_slo_aborted_requests. The series is what
// the engine counted, not a bound: released vLLM misses client cancellations
// and the count holds requests that never got a first token, so it neither
// bounds vllm_slo_abandoned_requests from below nor from above (see
// slo.WindowReport.Aborted).
const abortedHelp = "Requests the engine itself counted as aborted in the window (vLLM: request_success_total{finished_reason=\"abort\"}; SGLang: num_aborted_requests_total), present only when the target exposes that counter. An observed count, not a bound: released vLLM does not count client cancellations there, so 0 does not mean none; it includes requests aborted before their first token. It does not narrow vllm_slo_abandoned_requests."
