// Package config is the exporter's YAML configuration: the types, their
// defaults, strict loading and validation.
//
// Loading is strict: an unknown key, a bad value or a setting the rest of the
// program could not honour is an error naming the file, the line and the field,
// so that a bad file is rejected before it can replace a running one. The
// package only reads and checks configuration; it never scrapes, serves or
// computes anything.
package config

import (
	"time"

	"github.com/alecthomas/units"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Config is a whole configuration file after defaults and validation.
type Config struct {
	// Global holds the settings that apply to every target unless overridden.
	Global Global `yaml:"global"`
	// Targets are the vLLM servers to scrape; at least one.
	Targets []Target `yaml:"targets"`
	// SLOs are the service-level objectives evaluated for every target and model.
	SLOs []SLO `yaml:"slos"`
	// Cost prices the GPU time so that cost per token can be exported.
	Cost Cost `yaml:"cost"`
	// Alerting configures pushing alerts to Alertmanager directly.
	Alerting Alerting `yaml:"alerting"`
	// StateFile, when set, is where the history is saved so that it survives
	// restarts.
	StateFile string `yaml:"state_file"`
	// Warnings are remarks on values that are valid but implausible (see
	// plausibility), each as "file:line: field: message"; check-config
	// prints them. They are not part of the file.
	Warnings []string `yaml:"-"`
	// OTLP configures exact mode from vLLM's OpenTelemetry traces.
	OTLP OTLP `yaml:"otlp"`
	// Capacity configures the capacity headroom alert.
	Capacity Capacity `yaml:"capacity"`
}

// Global holds the settings shared by all targets.
type Global struct {
	// ScrapeInterval is how often each target is scraped.
	ScrapeInterval model.Duration `yaml:"scrape_interval"`
	// ScrapeTimeout bounds one scrape; never longer than ScrapeInterval.
	ScrapeTimeout model.Duration `yaml:"scrape_timeout"`
	// BodySizeLimit is the largest exposition accepted from a target, so that a
	// misbehaving target cannot exhaust memory.
	BodySizeLimit units.Base2Bytes `yaml:"body_size_limit"`
	// Windows are the rolling windows evaluated, ascending and unique.
	Windows []model.Duration `yaml:"windows"`
	// Quantiles are the latency quantiles reported, ascending, unique, in (0,1).
	Quantiles []float64 `yaml:"quantiles"`
	// EvaluationInterval is how often the windows are evaluated; it defaults to
	// ScrapeInterval.
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	// StateSaveInterval is how often Config.StateFile is written.
	StateSaveInterval model.Duration `yaml:"state_save_interval"`
	// MaxModelsPerTarget caps the distinct model_name values kept per target,
	// bounding our own series' cardinality.
	MaxModelsPerTarget int `yaml:"max_models_per_target"`
	// HistorySizeLimit caps the memory one target's history may hold; past it
	// the oldest points are dropped (windows then reach less far back, and
	// say so), whatever the target sends.
	HistorySizeLimit units.Base2Bytes `yaml:"history_size_limit"`
	// HistoryTotalSizeLimit caps the histories of all targets together: each
	// target then gets at most an equal share. 0 means no total cap.
	HistoryTotalSizeLimit units.Base2Bytes `yaml:"history_total_size_limit"`
	// HistogramBuckets are the latency bucket edges given to vLLM's
	// --custom-histogram-buckets, per family (request_latency,
	// time_to_first_token, inter_token_latency); a family left out has
	// vLLM's defaults. The daemon reads edges from every scrape and never
	// needs this; the generated rules cannot, and use it (see BucketEdges).
	HistogramBuckets map[string][]float64 `yaml:"histogram_buckets,omitempty"`
}

// Target is one server to scrape.
type Target struct {
	// Name is the value of the `target` label; unique, [a-zA-Z0-9_.:-]+.
	Name string `yaml:"name"`
	// URL is the absolute http or https URL of the target's /metrics.
	URL string `yaml:"url"`
	// Profile names the built-in engine profile mapping metric names (see
	// scrape.LookupProfile); "vllm" by default.
	Profile string `yaml:"profile"`
	// Labels are extra labels put on every series of this target.
	Labels map[string]string `yaml:"labels,omitempty"`
	// Warmup keeps the first Warmup after a (re)start of the engine out of the
	// SLO windows, so that cold caches do not count against the objectives.
	Warmup model.Duration `yaml:"warmup"`
	// ScrapeInterval overrides Global.ScrapeInterval when non-zero.
	ScrapeInterval model.Duration `yaml:"scrape_interval,omitempty"`
	// ScrapeTimeout overrides Global.ScrapeTimeout when non-zero.
	ScrapeTimeout model.Duration `yaml:"scrape_timeout,omitempty"`
	// GPUHourlyCost overrides Cost.GPUHourlyCost for this target when set.
	GPUHourlyCost *float64 `yaml:"gpu_hourly_cost,omitempty"`
	// HTTPClientConfig holds authentication, TLS and proxy settings for
	// scraping the target.
	HTTPClientConfig commoncfg.HTTPClientConfig `yaml:"http_client_config"`
}

// SLO is one service-level objective: every request must meet all objectives,
// and at least Goal of the requests must do so over Period.
type SLO struct {
	// Name is the value of the `slo` label; unique.
	Name string `yaml:"name"`
	// Objectives maps a latency metric to the threshold a request must meet.
	Objectives map[slo.Metric]model.Duration `yaml:"objectives"`
	// Goal is the share of requests that must meet every objective, in (0,1).
	Goal float64 `yaml:"goal"`
	// Period is the error-budget period.
	Period model.Duration `yaml:"period"`
	// Abandoned is "bad" (the default) or "excluded": whether a request
	// whose client gave up after its first token counts as a request that
	// did not meet the SLO, or is left out of the SLO's population. An SRE
	// usually reads a request its user abandoned as not served well.
	Abandoned string `yaml:"abandoned,omitempty"`
	// Rejected is "bad" (the default) or "excluded": whether a request the
	// server turned away at admission (HTTP 503, vLLM's
	// --max-num-queued-reqs) counts in the population as not served well.
	// A user turned away was served within no objective.
	Rejected string `yaml:"rejected,omitempty"`
	// RunbookURL, when set, is put in the annotations of this SLO's alerts.
	RunbookURL string `yaml:"runbook_url,omitempty"`
	// Alerts is the multi-window burn-rate alert policy; when absent it is
	// DefaultAlertPolicy, keeping the entries whose long window fits the period.
	Alerts []AlertPolicy `yaml:"alerts"`
}

// AlertPolicy is one multi-window, multi-burn-rate alert (Google SRE workbook
// ch. 5): it fires when both windows burn faster than BurnFactor, that is when
// BudgetConsumed of the period's error budget would be spent within LongWindow.
type AlertPolicy struct {
	// Severity is the `severity` label of the alert (page, ticket, ...).
	Severity string `yaml:"severity"`
	// LongWindow is the window that measures the burn.
	LongWindow model.Duration `yaml:"long_window"`
	// ShortWindow is the window that confirms the burn is still going on, so
	// that the alert resets quickly once it stops.
	ShortWindow model.Duration `yaml:"short_window"`
	// BudgetConsumed is the share of the budget spent in LongWindow that
	// fires the alert, in (0,1].
	BudgetConsumed float64 `yaml:"budget_consumed"`
	// For is how long the condition must hold before the alert fires.
	For model.Duration `yaml:"for"`
}

// Objective is one latency threshold of an SLO.
type Objective struct {
	// Metric is the latency histogram the threshold applies to.
	Metric slo.Metric
	// Threshold is the largest latency that meets the objective.
	Threshold time.Duration
}

// Cost prices GPU time.
type Cost struct {
	// GPUHourlyCost is the price of one target for one hour; 0 means cost
	// series are not exported.
	GPUHourlyCost float64 `yaml:"gpu_hourly_cost"`
	// Currency is the value of the `currency` label.
	Currency string `yaml:"currency"`
}

// Alerting configures the built-in Alertmanager notifier.
type Alerting struct {
	// Alertmanagers receive firing alerts; none means alerts are only exported
	// as series.
	Alertmanagers []Alertmanager `yaml:"alertmanagers"`
	// ResendDelay is how often a still-firing alert is sent again.
	ResendDelay model.Duration `yaml:"resend_delay"`
	// ExternalLabels are added to every pushed alert.
	ExternalLabels map[string]string `yaml:"external_labels,omitempty"`
	// PerTarget adds the target label to the pushed burn-rate alerts: one
	// Alertmanager alert per target serving a model, for teams that route
	// on the target, instead of one per breach of the model's SLO (which
	// merges with the generated rule's alert; per-target alerts do not).
	PerTarget bool `yaml:"per_target,omitempty"`
}

// Alertmanager is one Alertmanager to push alerts to.
type Alertmanager struct {
	// URL is the base URL; alerts are posted to <URL>/api/v2/alerts.
	URL string `yaml:"url"`
	// Timeout bounds one push.
	Timeout model.Duration `yaml:"timeout"`
	// HTTPClientConfig holds authentication, TLS and proxy settings.
	HTTPClientConfig commoncfg.HTTPClientConfig `yaml:"http_client_config"`
}
