package config

import (
	"time"

	"github.com/alecthomas/units"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// The defaults of single settings. Lists and policies have functions instead,
// so that no caller can change a shared default.
const (
	DefaultScrapeInterval     = model.Duration(15 * time.Second)
	DefaultScrapeTimeout      = model.Duration(10 * time.Second)
	DefaultBodySizeLimit      = 10 * units.MiB
	DefaultStateSaveInterval  = model.Duration(time.Minute)
	DefaultMaxModelsPerTarget = 100
	// DefaultHistorySizeLimit holds 30 days of a target serving about 20
	// models (one model's 30 days take about 1.5 MiB); twice it (the Go
	// collector's headroom) still fits the shipped 128 MiB Kubernetes limit.
	DefaultHistorySizeLimit    = 32 * units.MiB
	DefaultProfile             = "vllm"
	DefaultPeriod              = model.Duration(30 * 24 * time.Hour)
	DefaultCurrency            = "USD"
	DefaultResendDelay         = model.Duration(time.Minute)
	DefaultAlertmanagerTimeout = model.Duration(10 * time.Second)
)

// DefaultWindows returns the rolling windows used when none are configured.
func DefaultWindows() []model.Duration {
	return []model.Duration{
		model.Duration(time.Minute),
		model.Duration(5 * time.Minute),
		model.Duration(30 * time.Minute),
		model.Duration(time.Hour),
	}
}

// DefaultQuantiles returns the quantiles reported when none are configured.
func DefaultQuantiles() []float64 {
	return []float64{0.5, 0.9, 0.95, 0.99}
}

// DefaultAlertPolicy returns the burn-rate alerts of the Google SRE workbook
// (ch. 5, "multiwindow, multi-burn-rate alerts"): page when 2% of the budget
// goes in 1h or 5% in 6h, open a ticket when 10% goes in 3d. For a 30d period
// the burn factors are 14.4, 6 and 1.
//
// Why the 6h/30m page holds for 15s, one evaluation at the default
// interval: the workbook's alert has no hold, its two windows are the
// guard (the long one against a blip, 5% of a month's budget gone; the
// short one against a burn already over), and a hold only delays every
// true page by its length: at 15m, a breach with the truth, the estimate,
// the upper bound and the evidence all above 6x over both windows paged 15
// minutes after it began, on both paths. A hold of one evaluation still
// keeps a single evaluation above the factor (a request's worth of
// evidence over the 30m window at low traffic) from paging; Prometheus's
// `for` resets at any evaluation under it, so a longer hold also misses a
// burn that dips under the factor once every hold. Scaled to a 1d period it
// is 1s (rounded up from 0.5s), still one evaluation. The other alerts keep
// their holds.
func DefaultAlertPolicy() []AlertPolicy {
	return []AlertPolicy{
		{Severity: "page", LongWindow: model.Duration(time.Hour), ShortWindow: model.Duration(5 * time.Minute), BudgetConsumed: 0.02, For: model.Duration(2 * time.Minute)},
		{Severity: "page", LongWindow: model.Duration(6 * time.Hour), ShortWindow: model.Duration(30 * time.Minute), BudgetConsumed: 0.05, For: model.Duration(15 * time.Second)},
		{Severity: "ticket", LongWindow: model.Duration(3 * 24 * time.Hour), ShortWindow: model.Duration(6 * time.Hour), BudgetConsumed: 0.10, For: model.Duration(time.Hour)},
	}
}

// defaultAlertPolicyFor scales the workbook's policy to the period: windows
// and hold times shrink or grow with period/30d, so the burn factors stay
// 14.4, 6 and 1 whatever the period (keeping the 30d windows for a 7d period
// would give the ticket a factor of 0.23: it would fire while the SLO is
// within budget). Windows are rounded to the second, at least 1m short and 5m
// long, and the budget share is recomputed from the factor after rounding.
func defaultAlertPolicyFor(period model.Duration) []AlertPolicy {
	const workbookPeriod = 30 * 24 * time.Hour
	scale := float64(period) / float64(workbookPeriod)
	var out []AlertPolicy
	for _, a := range DefaultAlertPolicy() {
		factor := a.BurnFactor(workbookPeriod)
		long := scaled(a.LongWindow, scale, 5*time.Minute)
		short := min(scaled(a.ShortWindow, scale, time.Minute), long/2)
		budget := factor * float64(long) / float64(period)
		if long > period || budget > 1 {
			continue // the period is too short for this alert's floor windows
		}
		out = append(out, AlertPolicy{
			Severity:       a.Severity,
			LongWindow:     long,
			ShortWindow:    short,
			BudgetConsumed: budget,
			For:            model.Duration(time.Duration(float64(a.For) * scale).Round(time.Second)),
		})
	}
	return out
}

func scaled(d model.Duration, scale float64, floor time.Duration) model.Duration {
	return model.Duration(max(time.Duration(float64(d)*scale).Round(time.Second), floor))
}

// applyDefaults fills every unset setting. present reports whether a field
// path appeared in the file, which tells an absent http_client_config (that
// must get prometheus/common's defaults) from an explicit one.
func applyDefaults(c *Config, present func(path string) bool) {
	applyGlobalDefaults(&c.Global)
	for i := range c.Targets {
		t := &c.Targets[i]
		if t.Profile == "" {
			t.Profile = DefaultProfile
		}
		if !present(indexPath("targets", i) + ".http_client_config") {
			t.HTTPClientConfig = commoncfg.DefaultHTTPClientConfig
		}
	}
	for i := range c.SLOs {
		s := &c.SLOs[i]
		if s.Period == 0 {
			s.Period = DefaultPeriod
		}
		if s.Alerts == nil {
			s.Alerts = defaultAlertPolicyFor(s.Period)
		}
	}
	if c.Cost.Currency == "" {
		c.Cost.Currency = DefaultCurrency
	}
	if c.Alerting.ResendDelay == 0 {
		c.Alerting.ResendDelay = DefaultResendDelay
	}
	for i := range c.Alerting.Alertmanagers {
		am := &c.Alerting.Alertmanagers[i]
		if am.Timeout == 0 {
			am.Timeout = DefaultAlertmanagerTimeout
		}
		if !present(indexPath("alerting.alertmanagers", i) + ".http_client_config") {
			am.HTTPClientConfig = commoncfg.DefaultHTTPClientConfig
		}
	}
	applyOTLPDefaults(&c.OTLP, present)
	applyCapacityDefaults(&c.Capacity, present)
}

// applyGlobalDefaults fills the unset global settings.
func applyGlobalDefaults(g *Global) {
	if g.ScrapeInterval == 0 {
		g.ScrapeInterval = DefaultScrapeInterval
	}
	if g.ScrapeTimeout == 0 {
		// As Prometheus does: an unset timeout never exceeds the interval.
		g.ScrapeTimeout = min(DefaultScrapeTimeout, g.ScrapeInterval)
	}
	if g.BodySizeLimit == 0 {
		g.BodySizeLimit = DefaultBodySizeLimit
	}
	if g.Windows == nil {
		g.Windows = DefaultWindows()
	}
	if g.Quantiles == nil {
		g.Quantiles = DefaultQuantiles()
	}
	if g.EvaluationInterval == 0 {
		g.EvaluationInterval = g.ScrapeInterval
	}
	if g.StateSaveInterval == 0 {
		g.StateSaveInterval = DefaultStateSaveInterval
	}
	if g.MaxModelsPerTarget == 0 {
		g.MaxModelsPerTarget = DefaultMaxModelsPerTarget
	}
	if g.HistorySizeLimit == 0 {
		g.HistorySizeLimit = DefaultHistorySizeLimit
	}
}
