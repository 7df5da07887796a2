package config

import (
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// targetNameRE is what a target name may contain: it becomes a label value and
// appears in URLs and logs unquoted.
var targetNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]+$`)

// ReservedLabels lists the label names the exporter sets itself; a target's
// extra labels and the external labels may not use them (nor any name starting
// with "__").
func ReservedLabels() []string {
	return []string{"adapter", "alertname", "basis", "currency", "finish_reason", "kind", "le", "long_window", "metric", "model_name",
		"objective", "q", "reason", "severity", "short_window", "slo", "source", "stage", "target", "window"}
}

// validate checks a decoded and defaulted configuration, normalising the
// order of windows and quantiles. It returns every problem found: the first
// of each section (global, cost, otlp, alerting) and of each target and SLO.
func validate(c *Config) []*fieldError {
	var errs []*fieldError
	add := func(e *fieldError) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	add(validateGlobal(&c.Global))
	add(validateHistogramBuckets(&c.Global))
	if len(c.Targets) == 0 {
		add(errorf("targets", "at least one target is required"))
	}
	names := map[string]int{}
	for i := range c.Targets {
		add(validateTarget(&c.Targets[i], indexPath("targets", i), c.Global))
		name := c.Targets[i].Name
		if j, ok := names[name]; ok {
			add(errorf(indexPath("targets", i)+".name", "target name %q is already used by targets[%d]", name, j))
		}
		names[name] = i
	}
	sloNames := map[string]int{}
	for i := range c.SLOs {
		path := indexPath("slos", i)
		add(validateSLO(&c.SLOs[i], path, c.Targets))
		name := c.SLOs[i].Name
		if j, ok := sloNames[name]; ok {
			add(errorf(path+".name", "SLO name %q is already used by slos[%d]", name, j))
		}
		sloNames[name] = i
	}
	add(validateCost(c.Cost))
	add(validateOTLP(&c.OTLP, c.Targets))
	add(validateAlerting(&c.Alerting))
	add(validateCapacity(c.Capacity))
	return errs
}

func validateGlobal(g *Global) *fieldError {
	if g.ScrapeTimeout > g.ScrapeInterval {
		return errorf("global.scrape_timeout", "%s is longer than scrape_interval %s", g.ScrapeTimeout, g.ScrapeInterval)
	}
	if g.BodySizeLimit < 0 {
		return errorf("global.body_size_limit", "%s must not be negative", g.BodySizeLimit)
	}
	if len(g.Windows) == 0 {
		return errorf("global.windows", "at least one window is required")
	}
	slices.Sort(g.Windows)
	for i, w := range g.Windows {
		if w <= 0 {
			return errorf("global.windows", "window %s must be positive", w)
		}
		if i > 0 && w == g.Windows[i-1] {
			return errorf("global.windows", "window %s is listed twice", w)
		}
	}
	if len(g.Quantiles) == 0 {
		return errorf("global.quantiles", "at least one quantile is required")
	}
	for _, q := range g.Quantiles {
		if !(q > 0 && q < 1) {
			return errorf("global.quantiles", "quantile %v must be strictly between 0 and 1", q)
		}
	}
	slices.Sort(g.Quantiles)
	for i := 1; i < len(g.Quantiles); i++ {
		if g.Quantiles[i] == g.Quantiles[i-1] {
			return errorf("global.quantiles", "quantile %v is listed twice", g.Quantiles[i])
		}
	}
	if g.MaxModelsPerTarget < 0 {
		return errorf("global.max_models_per_target", "%d must be positive", g.MaxModelsPerTarget)
	}
	if g.HistorySizeLimit < 0 {
		return errorf("global.history_size_limit", "%s must not be negative", g.HistorySizeLimit)
	}
	if g.HistoryTotalSizeLimit < 0 {
		return errorf("global.history_total_size_limit", "%s must not be negative", g.HistoryTotalSizeLimit)
	}
	return nil
}

func validateTarget(t *Target, path string, g Global) *fieldError {
	if t.Name == "" {
		return errorf(path+".name", "a target name is required")
	}
	if !targetNameRE.MatchString(t.Name) {
		return errorf(path+".name", "%q may only contain letters, digits and _ . : -", t.Name)
	}
	if err := validateHTTPURL(t.URL, path+".url"); err != nil {
		return err
	}
	if _, err := scrape.LookupProfile(t.Profile); err != nil {
		if near := nearestProfile(t.Profile); near != "" {
			return errorf(path+".profile", "%v; did you mean %q?", err, near)
		}
		return errorf(path+".profile", "%v", err)
	}
	if err := validateLabels(t.Labels, path+".labels"); err != nil {
		return err
	}
	if t.ScrapeTimeout != 0 && time.Duration(t.ScrapeTimeout) > t.Interval(g) {
		return errorf(path+".scrape_timeout", "%s is longer than the target's scrape interval %s", t.ScrapeTimeout, model.Duration(t.Interval(g)))
	}
	if t.GPUHourlyCost != nil && !validCost(*t.GPUHourlyCost) {
		return errorf(path+".gpu_hourly_cost", "%v must be a finite number >= 0", *t.GPUHourlyCost)
	}
	return validateHTTPClient(&t.HTTPClientConfig, path+".http_client_config")
}

// validateHTTPURL checks an absolute http or https URL with a host.
func validateHTTPURL(raw, path string) *fieldError {
	if raw == "" {
		return errorf(path, "a URL is required")
	}
	if !strings.Contains(raw, "://") {
		return errorf(path, "%q is missing an \"http://\" or \"https://\" scheme", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errorf(path, "%q is not a valid URL: %v", raw, unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errorf(path, "%q has scheme %q; only http and https are supported", raw, u.Scheme)
	}
	if u.Host == "" {
		return errorf(path, "%q has no host", raw)
	}
	return nil
}

// unwrapURLError drops url.Error's repetition of the operation and URL.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// validateHTTPClient runs prometheus/common's own checks (also run while
// decoding; repeated here for configurations built in code).
func validateHTTPClient(h *commoncfg.HTTPClientConfig, path string) *fieldError {
	if err := h.Validate(); err != nil {
		return errorf(path, "%v", err)
	}
	return nil
}

// validateLabels checks extra label names and values.
func validateLabels(labels map[string]string, path string) *fieldError {
	for _, name := range slices.Sorted(maps.Keys(labels)) { // in order: the first error is always the same
		p := path + "." + name
		if !model.LegacyValidation.IsValidLabelName(name) {
			return errorf(p, "%q is not a valid label name", name)
		}
		if strings.HasPrefix(name, "__") || slices.Contains(ReservedLabels(), name) {
			return errorf(p, "label name %q is reserved for the exporter's own use", name)
		}
		if !labelValueSafe(labels[name]) {
			return errorf(p, "label value %q must be non-empty valid UTF-8 without control characters", labels[name])
		}
	}
	return nil
}

// labelValueSafe reports whether s can be a label value that reads well in
// every UI: non-empty, valid UTF-8, no control characters.
func labelValueSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

func validateSLO(s *SLO, path string, targets []Target) *fieldError {
	if s.Name == "" {
		return errorf(path+".name", "an SLO name is required")
	}
	if !labelValueSafe(s.Name) {
		return errorf(path+".name", "%q must be non-empty valid UTF-8 without control characters", s.Name)
	}
	if len(s.Objectives) == 0 {
		return errorf(path+".objectives", "at least one objective is required (keys: %s)", metricNames())
	}
	for _, o := range s.ObjectiveList() {
		p := path + ".objectives." + string(o.Metric)
		if !slices.Contains(slo.Metrics, o.Metric) {
			return errorf(p, "unknown objective %q (keys: %s)", o.Metric, metricNames())
		}
		if o.Threshold <= 0 {
			return errorf(p, "threshold %s must be positive", model.Duration(o.Threshold))
		}
		for _, t := range targets {
			prof, err := scrape.LookupProfile(t.Profile)
			if err != nil {
				continue // reported with the target
			}
			if !prof.Measures(scrape.Family(o.Metric)) {
				return errorf(p, "target %q (profile %q) does not expose %s, so this objective cannot be measured", t.Name, t.Profile, o.Metric)
			}
		}
	}
	if !(s.Goal > 0 && s.Goal < 1) {
		return errorf(path+".goal", "%v must be strictly between 0 and 1 (e.g. 0.99)", s.Goal)
	}
	if s.Period <= 0 {
		return errorf(path+".period", "%s must be positive", s.Period)
	}
	if _, ok := abandonedPolicies[s.Abandoned]; !ok {
		return errorf(path+".abandoned", "%q must be \"bad\" (the default) or \"excluded\"", s.Abandoned)
	}
	if _, ok := abandonedPolicies[s.Rejected]; !ok {
		return errorf(path+".rejected", "%q must be \"bad\" (the default) or \"excluded\"", s.Rejected)
	}
	if s.RunbookURL != "" {
		if _, err := url.Parse(s.RunbookURL); err != nil {
			return errorf(path+".runbook_url", "%q is not a valid URL: %v", s.RunbookURL, unwrapURLError(err))
		}
	}
	for i, a := range s.Alerts {
		if err := validateAlertPolicy(a, indexPath(path+".alerts", i), s.Period); err != nil {
			return err
		}
	}
	return nil
}

func validateAlertPolicy(a AlertPolicy, path string, period model.Duration) *fieldError {
	if a.Severity == "" {
		return errorf(path+".severity", "a severity is required (e.g. page, ticket)")
	}
	if !labelValueSafe(a.Severity) {
		return errorf(path+".severity", "%q must be valid UTF-8 without control characters", a.Severity)
	}
	if a.LongWindow <= 0 {
		return errorf(path+".long_window", "%s must be positive", a.LongWindow)
	}
	if a.ShortWindow <= 0 {
		return errorf(path+".short_window", "%s must be positive", a.ShortWindow)
	}
	if a.ShortWindow >= a.LongWindow {
		return errorf(path+".short_window", "%s must be shorter than long_window %s", a.ShortWindow, a.LongWindow)
	}
	if a.LongWindow > period {
		return errorf(path+".long_window", "%s is longer than the SLO period %s", a.LongWindow, period)
	}
	if !(a.BudgetConsumed > 0 && a.BudgetConsumed <= 1) {
		return errorf(path+".budget_consumed", "%v must be in (0, 1]", a.BudgetConsumed)
	}
	if a.For < 0 {
		return errorf(path+".for", "%s must not be negative", a.For)
	}
	return nil
}

func validateCost(c Cost) *fieldError {
	if !validCost(c.GPUHourlyCost) {
		return errorf("cost.gpu_hourly_cost", "%v must be a finite number >= 0", c.GPUHourlyCost)
	}
	if !labelValueSafe(c.Currency) {
		return errorf("cost.currency", "%q must be a currency code such as USD or CNY, or another non-empty label value", c.Currency)
	}
	return nil
}

// validCost reports whether v is a usable price.
func validCost(v float64) bool {
	return v >= 0 && !math.IsInf(v, 1) && !math.IsNaN(v)
}

func validateAlerting(a *Alerting) *fieldError {
	for i := range a.Alertmanagers {
		am := &a.Alertmanagers[i]
		path := indexPath("alerting.alertmanagers", i)
		if err := validateHTTPURL(am.URL, path+".url"); err != nil {
			return err
		}
		if base, ok := strings.CutSuffix(strings.TrimRight(am.URL, "/"), alertsAPIPath); ok {
			return errorf(path+".url", "%q already ends in %s, which the exporter appends itself (alerts would go to .../api/v2/alerts/api/v2/alerts and get 404): write the base URL %q",
				RedactURL(am.URL), alertsAPIPath, RedactURL(base))
		}
		if am.Timeout <= 0 {
			return errorf(path+".timeout", "%s must be positive", am.Timeout)
		}
		if err := validateHTTPClient(&am.HTTPClientConfig, path+".http_client_config"); err != nil {
			return err
		}
	}
	if a.ResendDelay <= 0 {
		return errorf("alerting.resend_delay", "%s must be positive", a.ResendDelay)
	}
	if a.PerTarget && len(a.Alertmanagers) == 0 {
		return errorf("alerting.per_target", "labels the alerts pushed to Alertmanager, and alerting.alertmanagers is empty")
	}
	return validateLabels(a.ExternalLabels, "alerting.external_labels")
}

// alertsAPIPath is the path the notifier appends to an Alertmanager's URL.
const alertsAPIPath = "/api/v2/alerts"

// nearestProfile is the known profile a mistyped name most likely meant:
// the same name in another case or spelling ("vLLM", "v-llm"), one that
// contains it or is contained in it ("vllm-0.8" for "vllm"), or one within
// two edits; empty when none is close.
func nearestProfile(name string) string {
	key := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == '.' || r == ' ' {
				return -1
			}
			return unicode.ToLower(r)
		}, s)
	}
	k := key(name)
	if k == "" {
		return ""
	}
	best, bestDist := "", 3
	for _, p := range slices.Sorted(maps.Keys(scrape.Profiles)) {
		pk := key(string(p))
		d := editDistance(k, pk)
		if pk == k || strings.HasPrefix(k, pk) || strings.HasPrefix(pk, k) {
			d = 0
		}
		if d < bestDist || (d == bestDist && len(p) < len(best)) {
			best, bestDist = string(p), d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// metricNames lists the objective keys for error messages.
func metricNames() string {
	names := make([]string, len(slo.Metrics))
	for i, m := range slo.Metrics {
		names[i] = string(m)
	}
	return strings.Join(names, " ")
}
