package config

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	c, err := Parse([]byte(in), "test.yml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, minimal+"slos:\n  - name: s\n    objectives: {ttft: 1s}\n    goal: 0.9\n")
	wantGlobal := Global{
		ScrapeInterval:     model.Duration(15 * time.Second),
		ScrapeTimeout:      model.Duration(10 * time.Second),
		BodySizeLimit:      10 << 20,
		Windows:            []model.Duration{model.Duration(time.Minute), model.Duration(5 * time.Minute), model.Duration(30 * time.Minute), model.Duration(time.Hour)},
		Quantiles:          []float64{0.5, 0.9, 0.95, 0.99},
		EvaluationInterval: model.Duration(15 * time.Second),
		StateSaveInterval:  model.Duration(time.Minute),
		MaxModelsPerTarget: 100,
		HistorySizeLimit:   32 << 20,
	}
	if !reflect.DeepEqual(c.Global, wantGlobal) {
		t.Errorf("Global =\n%+v\nwant\n%+v", c.Global, wantGlobal)
	}
	tg := c.Targets[0]
	if tg.Profile != "vllm" || tg.Warmup != 0 || tg.GPUHourlyCost != nil || tg.Labels != nil {
		t.Errorf("target defaults: %+v", tg)
	}
	if !reflect.DeepEqual(tg.HTTPClientConfig, commoncfg.DefaultHTTPClientConfig) {
		t.Errorf("HTTPClientConfig = %+v, want prometheus/common's defaults", tg.HTTPClientConfig)
	}
	if !tg.HTTPClientConfig.FollowRedirects || !tg.HTTPClientConfig.EnableHTTP2 {
		t.Error("absent http_client_config must follow redirects and enable HTTP/2")
	}
	s := c.SLOs[0]
	if s.Period != model.Duration(30*24*time.Hour) {
		t.Errorf("Period = %v, want 30d", s.Period)
	}
	if !reflect.DeepEqual(s.Alerts, DefaultAlertPolicy()) {
		t.Errorf("Alerts = %+v, want the default policy", s.Alerts)
	}
	if c.Cost != (Cost{GPUHourlyCost: 0, Currency: "USD"}) {
		t.Errorf("Cost = %+v", c.Cost)
	}
	if c.Alerting.ResendDelay != model.Duration(time.Minute) || len(c.Alerting.Alertmanagers) != 0 {
		t.Errorf("Alerting = %+v", c.Alerting)
	}
	if c.StateFile != "" {
		t.Errorf("StateFile = %q", c.StateFile)
	}
}

func TestTimeoutFollowsShortInterval(t *testing.T) {
	tests := []struct {
		name                      string
		in                        string
		globalTimeout             time.Duration
		targetInterval, targetOut time.Duration
	}{
		{"defaults", minimal, 10 * time.Second, 15 * time.Second, 10 * time.Second},
		{"short global interval caps the default timeout", "global: {scrape_interval: 5s}\n" + minimal, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"short target interval caps the inherited timeout", minimal + "    scrape_interval: 2s\n", 10 * time.Second, 2 * time.Second, 2 * time.Second},
		{"target timeout override", minimal + "    scrape_timeout: 3s\n", 10 * time.Second, 15 * time.Second, 3 * time.Second},
		{"target interval override, long", minimal + "    scrape_interval: 1m\n", 10 * time.Second, time.Minute, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.in)
			if got := time.Duration(c.Global.ScrapeTimeout); got != tt.globalTimeout {
				t.Errorf("global timeout = %v, want %v", got, tt.globalTimeout)
			}
			tg := c.Targets[0]
			if got := tg.Interval(c.Global); got != tt.targetInterval {
				t.Errorf("Interval = %v, want %v", got, tt.targetInterval)
			}
			if got := tg.Timeout(c.Global); got != tt.targetOut {
				t.Errorf("Timeout = %v, want %v", got, tt.targetOut)
			}
		})
	}
}

func TestGoodFull(t *testing.T) {
	c, err := Load("testdata/good_full.yml")
	if err != nil {
		t.Fatal(err)
	}
	g := c.Global
	if want := []model.Duration{model.Duration(30 * time.Second), model.Duration(5 * time.Minute), model.Duration(time.Hour)}; !reflect.DeepEqual(g.Windows, want) {
		t.Errorf("Windows = %v, want sorted %v", g.Windows, want)
	}
	if want := []float64{0.5, 0.99}; !reflect.DeepEqual(g.Quantiles, want) {
		t.Errorf("Quantiles = %v, want sorted %v", g.Quantiles, want)
	}
	if g.BodySizeLimit != 1<<30 || g.EvaluationInterval != model.Duration(time.Minute) || g.MaxModelsPerTarget != 7 {
		t.Errorf("Global = %+v", g)
	}
	gpu, sg := c.Targets[0], c.Targets[1]
	if gpu.Interval(g) != 5*time.Second || gpu.Timeout(g) != 5*time.Second {
		t.Errorf("rtx4090 interval %v timeout %v, want 5s 5s", gpu.Interval(g), gpu.Timeout(g))
	}
	if sg.Interval(g) != 30*time.Second || sg.Timeout(g) != 3*time.Second {
		t.Errorf("sglang interval %v timeout %v, want 30s 3s", sg.Interval(g), sg.Timeout(g))
	}
	if gpu.HourlyCost(c.Cost) != 0 || sg.HourlyCost(c.Cost) != 1.25 {
		t.Errorf("HourlyCost = %v, %v; want the explicit 0 override and the global 1.25", gpu.HourlyCost(c.Cost), sg.HourlyCost(c.Cost))
	}
	if sg.Profile != "sglang" || gpu.Labels["site"] != "home" || gpu.Warmup != model.Duration(2*time.Minute) {
		t.Errorf("targets = %+v", c.Targets)
	}
	if a := gpu.HTTPClientConfig.Authorization; a == nil || a.Type != "Bearer" || a.Credentials != "s3cr3t-bearer-TOKEN" {
		t.Errorf("bearer token not turned into authorization: %+v", a)
	}
	if !gpu.HTTPClientConfig.TLSConfig.InsecureSkipVerify || !gpu.HTTPClientConfig.FollowRedirects {
		t.Errorf("explicit http_client_config lost its settings or defaults: %+v", gpu.HTTPClientConfig)
	}
	if ba := sg.HTTPClientConfig.BasicAuth; ba == nil || ba.Username != "admin" {
		t.Errorf("basic auth = %+v", ba)
	}
	fast, quiet := c.SLOs[0], c.SLOs[1]
	wantObj := []Objective{{slo.E2E, time.Minute}, {slo.TTFT, 250 * time.Millisecond}}
	if got := fast.ObjectiveList(); !reflect.DeepEqual(got, wantObj) {
		t.Errorf("ObjectiveList = %+v, want %+v", got, wantObj)
	}
	if len(fast.Alerts) != 1 || fast.Alerts[0].Severity != "critical" || fast.RunbookURL == "" {
		t.Errorf("fast SLO = %+v", fast)
	}
	if quiet.Alerts == nil || len(quiet.Alerts) != 0 {
		t.Errorf("explicit empty alerts must stay empty (no alerts), got %+v", quiet.Alerts)
	}
	if got := c.LongestPeriod(); got != 7*24*time.Hour {
		t.Errorf("LongestPeriod = %v, want 7d", got)
	}
	am := c.Alerting.Alertmanagers
	if len(am) != 2 || am[0].Timeout != model.Duration(3*time.Second) || am[1].Timeout != model.Duration(10*time.Second) {
		t.Errorf("alertmanagers = %+v", am)
	}
	if !am[1].HTTPClientConfig.FollowRedirects {
		t.Error("alertmanager without http_client_config must get prometheus/common's defaults")
	}
	if c.Alerting.ExternalLabels["cluster"] != "lab" || c.Cost.Currency != "EUR" || c.StateFile == "" {
		t.Errorf("config = %+v", c)
	}
}

func TestRedactedHidesSecrets(t *testing.T) {
	c, err := Load("testdata/good_full.yml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cr3t-bearer-TOKEN", "hunter2-PASSWORD", "am-PASSWORD-xyz"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("Redacted output contains the secret %q:\n%s", secret, out)
		}
	}
	if n := strings.Count(string(out), "<secret>"); n != 3 {
		t.Errorf("Redacted output has %d <secret> placeholders, want 3:\n%s", n, out)
	}
	// The redacted form is itself a valid configuration with the same shape.
	back, err := Parse(out, "redacted.yml")
	if err != nil {
		t.Fatalf("redacted output does not load: %v\n%s", err, out)
	}
	if len(back.Targets) != 2 || back.Targets[1].Name != c.Targets[1].Name || !reflect.DeepEqual(back.Global, c.Global) || !reflect.DeepEqual(back.SLOs, c.SLOs) {
		t.Errorf("redacted round trip changed the config:\n%s", out)
	}
	if !back.Targets[0].Equal(back.Targets[0]) || back.Targets[0].Equal(c.Targets[0]) {
		t.Error("a redacted target must differ from the one holding the real secret")
	}
}

func TestExample(t *testing.T) {
	c, err := Load("../../config.example.yaml")
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if len(c.Targets) != 1 || c.Targets[0].Name != "rtx4090" || c.Targets[0].URL != "http://127.0.0.1:8000/metrics" {
		t.Errorf("targets = %+v", c.Targets)
	}
	if len(c.SLOs) != 2 {
		t.Fatalf("SLOs = %+v", c.SLOs)
	}
	in, batch := c.SLOs[0], c.SLOs[1]
	if in.Name != "interactive" || in.Goal != 0.99 || in.Period != model.Duration(30*24*time.Hour) ||
		!reflect.DeepEqual(in.ObjectiveList(), []Objective{{slo.TPOT, 50 * time.Millisecond}, {slo.TTFT, 500 * time.Millisecond}}) {
		t.Errorf("interactive = %+v", in)
	}
	if batch.Name != "batch" || batch.Goal != 0.95 || batch.Period != model.Duration(7*24*time.Hour) ||
		!reflect.DeepEqual(batch.ObjectiveList(), []Objective{{slo.E2E, 20 * time.Second}}) {
		t.Errorf("batch = %+v", batch)
	}
	if c.Cost != (Cost{GPUHourlyCost: 2, Currency: "CNY"}) || len(c.Alerting.Alertmanagers) != 0 {
		t.Errorf("cost %+v alerting %+v", c.Cost, c.Alerting)
	}
	if !reflect.DeepEqual(in.Alerts, DefaultAlertPolicy()) {
		t.Errorf("the example's explicit alerts should equal the defaults, got %+v", in.Alerts)
	}
}

func TestBurnFactor(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		policy AlertPolicy
		period time.Duration
		want   float64
	}{
		{DefaultAlertPolicy()[0], 30 * day, 14.4},
		{DefaultAlertPolicy()[1], 30 * day, 6},
		{DefaultAlertPolicy()[2], 30 * day, 1},
		{DefaultAlertPolicy()[0], 7 * day, 0.02 * 7 * 24},
		{AlertPolicy{LongWindow: model.Duration(time.Hour), BudgetConsumed: 1}, time.Hour, 1},
		{AlertPolicy{BudgetConsumed: 0.5}, time.Hour, 0},
	}
	for _, tt := range tests {
		if got := tt.policy.BurnFactor(tt.period); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("BurnFactor(%v) of %+v = %v, want %v", tt.period, tt.policy, got, tt.want)
		}
	}
}

func TestDefaultAlertPolicyFitsPeriod(t *testing.T) {
	workbook := []float64{14.4, 6, 1}
	tests := []struct {
		period string
		want   int
		long   []time.Duration // the scaled long windows
	}{
		{"30d", 3, []time.Duration{time.Hour, 6 * time.Hour, 72 * time.Hour}},
		{"7d", 3, []time.Duration{14 * time.Minute, 84 * time.Minute, 1008 * time.Minute}},
		// 1h/30 = 2m is floored to 5m, so factor 14.4 needs 5% of the budget.
		{"1d", 3, []time.Duration{5 * time.Minute, 12 * time.Minute, 144 * time.Minute}},
		{"2h", 3, []time.Duration{5 * time.Minute, 5 * time.Minute, 12 * time.Minute}},
		// 14.4 × 5m / 30m > 1: the first page cannot exist.
		{"30m", 2, []time.Duration{5 * time.Minute, 5 * time.Minute}},
		{"10m", 1, []time.Duration{5 * time.Minute}},
		{"4m", 0, nil},
	}
	for _, tt := range tests {
		c := mustParse(t, minimal+"slos:\n  - {name: s, objectives: {e2e: 1s}, goal: 0.9, period: "+tt.period+"}\n")
		s := c.SLOs[0]
		if got := len(s.Alerts); got != tt.want {
			t.Errorf("period %s: %d default alerts, want %d: %+v", tt.period, got, tt.want, s.Alerts)
			continue
		}
		for i, a := range s.Alerts {
			if i < len(tt.long) && time.Duration(a.LongWindow) != tt.long[i] {
				t.Errorf("period %s alert %d: long window %v, want %v", tt.period, i, a.LongWindow, tt.long[i])
			}
			// The factor is the workbook's whatever the period.
			found := false
			for _, f := range workbook {
				found = found || math.Abs(a.BurnFactor(time.Duration(s.Period))-f) < 1e-9
			}
			if !found || a.BudgetConsumed <= 0 || a.BudgetConsumed > 1 || a.ShortWindow >= a.LongWindow {
				t.Errorf("period %s alert %d: %+v has factor %v", tt.period, i, a, a.BurnFactor(time.Duration(s.Period)))
			}
		}
	}
	// DefaultAlertPolicy hands out a fresh copy each time.
	p := DefaultAlertPolicy()
	p[0].Severity = "changed"
	if DefaultAlertPolicy()[0].Severity != "page" {
		t.Error("DefaultAlertPolicy shares its slice between callers")
	}
}

func TestTargetEqual(t *testing.T) {
	base := mustParse(t, minimal+"    labels: {gpu: a}\n    http_client_config: {basic_auth: {username: u, password: p}}\n").Targets[0]
	cost := 1.0
	tests := []struct {
		name   string
		change func(*Target)
		equal  bool
	}{
		{"same", func(*Target) {}, true},
		{"url", func(t *Target) { t.URL = "http://127.0.0.1:8001/metrics" }, false},
		{"label value", func(t *Target) { t.Labels = map[string]string{"gpu": "b"} }, false},
		{"password", func(t *Target) {
			ba := *t.HTTPClientConfig.BasicAuth
			ba.Password = "q"
			t.HTTPClientConfig.BasicAuth = &ba
		}, false},
		{"interval", func(t *Target) { t.ScrapeInterval = model.Duration(time.Second) }, false},
		{"cost", func(t *Target) { t.GPUHourlyCost = &cost }, false},
		{"profile", func(t *Target) { t.Profile = "sglang" }, false},
	}
	for _, tt := range tests {
		other := base
		other.Labels = map[string]string{"gpu": "a"}
		tt.change(&other)
		if got := base.Equal(other); got != tt.equal {
			t.Errorf("%s: Equal = %v, want %v", tt.name, got, tt.equal)
		}
	}
	empty, none := base, base
	empty.Labels, none.Labels = map[string]string{}, nil
	if !empty.Equal(none) {
		t.Error("empty and absent labels must be equal")
	}
}

// TestAbandonedPopulation checks the mapping of slos[].abandoned, whose
// default counts abandoned requests as bad.
func TestAbandonedPopulation(t *testing.T) {
	for value, want := range map[string]slo.Population{"": slo.AbandonedBad, "bad": slo.AbandonedBad, "excluded": slo.AbandonedExcluded} {
		if got := (SLO{Abandoned: value}).AbandonedPopulation(); got != want {
			t.Errorf("abandoned %q: population %v, want %v", value, got, want)
		}
	}
	c, err := Load("testdata/good_abandoned_excluded.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SLOs[0].AbandonedPopulation(); got != slo.AbandonedExcluded {
		t.Errorf("loaded population %v, want excluded", got)
	}
}

// TestSlowPageHoldsOneEvaluation: the default 6h/30m page (and its scaled
// versions) holds for one evaluation at most, so that it fires within one
// evaluation of its condition, while never at the evaluation the
// condition first holds (a hold above zero).
func TestSlowPageHoldsOneEvaluation(t *testing.T) {
	for _, period := range []string{"30d", "7d", "1d"} {
		c := mustParse(t, minimal+"slos:\n  - {name: s, objectives: {e2e: 1s}, goal: 0.9, period: "+period+"}\n")
		a := c.SLOs[0].Alerts[1]
		if hold := time.Duration(a.For); hold <= 0 || hold > 15*time.Second {
			t.Errorf("period %s: the %v/%v page holds %v, want one evaluation (0 < for <= 15s)", period, a.LongWindow, a.ShortWindow, hold)
		}
	}
}
