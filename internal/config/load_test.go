package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"gopkg.in/yaml.v3"
)

// fileErrors maps every file under testdata to the exact error it must give;
// "" means the file is valid.
var fileErrors = map[string]string{
	"good_minimal.yml":                "",
	"good_full.yml":                   "",
	"bad_alert_budget.yml":            `testdata/bad_alert_budget.yml:9: slos[0].alerts[0].budget_consumed: 1.5 must be in (0, 1]`,
	"bad_alert_period.yml":            `testdata/bad_alert_period.yml:11: slos[0].alerts[0].long_window: 3d is longer than the SLO period 1d`,
	"bad_alert_severity.yml":          `testdata/bad_alert_severity.yml:9: slos[0].alerts[0].severity: a severity is required (e.g. page, ticket)`,
	"bad_alert_windows.yml":           `testdata/bad_alert_windows.yml:9: slos[0].alerts[0].short_window: 1h must be shorter than long_window 5m`,
	"bad_alertmanager_url.yml":        `testdata/bad_alertmanager_url.yml:6: alerting.alertmanagers[0].url: "localhost:9093" is missing an "http://" or "https://" scheme`,
	"bad_body_size.yml":               `testdata/bad_body_size.yml:2: global.body_size_limit: "10 megabytes" is not a valid size (use e.g. 512KiB, 10MiB, 1GiB)`,
	"bad_currency.yml":                `testdata/bad_currency.yml:5: cost.currency: "\t" must be a currency code such as USD or CNY, or another non-empty label value`,
	"bad_dunder_label.yml":            `testdata/bad_dunder_label.yml:4: targets[0].labels.__name__: label name "__name__" is reserved for the exporter's own use`,
	"bad_duplicate_key.yml":           `testdata/bad_duplicate_key.yml:4: targets[0].name: key "name" is repeated (first at line 2)`,
	"bad_duplicate_slo.yml":           `testdata/bad_duplicate_slo.yml:8: slos[1].name: SLO name "s" is already used by slos[0]`,
	"bad_duplicate_target.yml":        `testdata/bad_duplicate_target.yml:4: targets[1].name: target name "rtx4090" is already used by targets[0]`,
	"bad_duration.yml":                `testdata/bad_duration.yml:3: global.scrape_timeout: "abc" is not a valid duration (use e.g. 500ms, 15s, 1h30m, 30d)`,
	"bad_abandoned.yml":               `testdata/bad_abandoned.yml:8: slos[0].abandoned: "ignored" must be "bad" (the default) or "excluded"`,
	"good_abandoned_excluded.yml":     ``,
	"good_per_target.yml":             ``,
	"bad_per_target.yml":              `testdata/bad_per_target.yml:5: alerting.per_target: labels the alerts pushed to Alertmanager, and alerting.alertmanagers is empty`,
	"bad_empty.yml":                   `testdata/bad_empty.yml: configuration is empty`,
	"bad_external_label.yml":          `testdata/bad_external_label.yml:5: alerting.external_labels.severity: label name "severity" is reserved for the exporter's own use`,
	"bad_global_list.yml":             `testdata/bad_global_list.yml:1: global: expected a mapping, got a list`,
	"bad_goal_one.yml":                `testdata/bad_goal_one.yml:7: slos[0].goal: 1 must be strictly between 0 and 1 (e.g. 0.99)`,
	"bad_goal_type.yml":               `testdata/bad_goal_type.yml:7: slos[0].goal: "high" is not a number`,
	"bad_goal_zero.yml":               `testdata/bad_goal_zero.yml:7: slos[0].goal: 0 must be strictly between 0 and 1 (e.g. 0.99)`,
	"bad_http_client_invalid.yml":     `testdata/bad_http_client_invalid.yml:4: targets[0].http_client_config: at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured`,
	"bad_http_client_unknown.yml":     `testdata/bad_http_client_unknown.yml:7: targets[0].http_client_config.basic_auth.pasword: unknown field "pasword"`,
	"bad_http_client_unknown_top.yml": `testdata/bad_http_client_unknown_top.yml:5: targets[0].http_client_config.bearer_tokn: unknown field "bearer_tokn"`,
	"bad_label_name.yml":              `testdata/bad_label_name.yml:4: targets[0].labels.gpu-type: "gpu-type" is not a valid label name`,
	"bad_max_models.yml":              `testdata/bad_max_models.yml:2: global.max_models_per_target: -1 must be positive`,
	"bad_history_size.yml":            `testdata/bad_history_size.yml:2: global.history_size_limit: -1KiB must not be negative`,
	"bad_multi_doc.yml":               `testdata/bad_multi_doc.yml:4: more than one YAML document; a configuration is exactly one`,
	"bad_negative_cost.yml":           `testdata/bad_negative_cost.yml:5: cost.gpu_hourly_cost: -1 must be a finite number >= 0`,
	"bad_no_objectives.yml":           `testdata/bad_no_objectives.yml:5: slos[0].objectives: at least one objective is required (keys: ttft tpot itl e2e queue prefill decode inference)`,
	"bad_not_mapping.yml":             `testdata/bad_not_mapping.yml:1: configuration must be a mapping of keys to values, got a list`,
	"bad_objective_duration.yml":      `testdata/bad_objective_duration.yml:6: slos[0].objectives.ttft: "5 seconds" is not a valid duration (use e.g. 500ms, 15s, 1h30m, 30d)`,
	"bad_only_comments.yml":           `testdata/bad_only_comments.yml: configuration is empty`,
	"bad_profile.yml":                 `testdata/bad_profile.yml:4: targets[0].profile: unknown profile "tgi" (known: [ray-vllm sglang vllm])`,
	"bad_quantile.yml":                `testdata/bad_quantile.yml:2: global.quantiles: quantile 1.5 must be strictly between 0 and 1`,
	"bad_quantile_dup.yml":            `testdata/bad_quantile_dup.yml:2: global.quantiles: quantile 0.9 is listed twice`,
	"bad_reserved_label.yml":          `testdata/bad_reserved_label.yml:6: targets[0].labels.model_name: label name "model_name" is reserved for the exporter's own use`,
	"bad_syntax.yml":                  `testdata/bad_syntax.yml:3: did not find expected '-' indicator`,
	"bad_target_cost.yml":             `testdata/bad_target_cost.yml:4: targets[0].gpu_hourly_cost: -0.5 must be a finite number >= 0`,
	"bad_target_name.yml":             `testdata/bad_target_name.yml:2: targets[0].name: "rtx 4090" may only contain letters, digits and _ . : -`,
	"bad_target_no_name.yml":          `testdata/bad_target_no_name.yml:2: targets[0].name: a target name is required`,
	"bad_target_timeout.yml":          `testdata/bad_target_timeout.yml:5: targets[0].scrape_timeout: 6s is longer than the target's scrape interval 5s`,
	"bad_targets_empty.yml":           `testdata/bad_targets_empty.yml:3: targets: at least one target is required`,
	"bad_targets_missing.yml":         `testdata/bad_targets_missing.yml:1: targets: at least one target is required`,
	"bad_targets_not_list.yml":        `testdata/bad_targets_not_list.yml:2: targets: expected a list, got a mapping`,
	"bad_timeout_gt_interval.yml":     `testdata/bad_timeout_gt_interval.yml:3: global.scrape_timeout: 10s is longer than scrape_interval 5s`,
	"bad_unknown_nested.yml":          `testdata/bad_unknown_nested.yml:3: global.scrape_intervall: unknown field "scrape_intervall"`,
	"bad_unknown_objective.yml":       `testdata/bad_unknown_objective.yml:6: slos[0].objectives.latency: unknown objective "latency" (keys: ttft tpot itl e2e queue prefill decode inference)`,
	"bad_unknown_target_key.yml":      `testdata/bad_unknown_target_key.yml:4: targets[0].lables: unknown field "lables"`,
	"bad_unknown_top.yml":             `testdata/bad_unknown_top.yml:4: scrape_interval: unknown field "scrape_interval"`,
	"bad_unmeasurable.yml":            `testdata/bad_unmeasurable.yml:9: slos[0].objectives.tpot: target "sg" (profile "sglang") does not expose tpot, so this objective cannot be measured`,
	"bad_url_ftp.yml":                 `testdata/bad_url_ftp.yml:3: targets[0].url: "ftp://127.0.0.1/metrics" has scheme "ftp"; only http and https are supported`,
	"bad_url_missing.yml":             `testdata/bad_url_missing.yml:2: targets[0].url: a URL is required`,
	"bad_url_scheme.yml":              `testdata/bad_url_scheme.yml:3: targets[0].url: "127.0.0.1:8000/metrics" is missing an "http://" or "https://" scheme`,
	"bad_window_dup.yml":              `testdata/bad_window_dup.yml:2: global.windows: window 5m is listed twice`,
	"bad_windows_empty.yml":           `testdata/bad_windows_empty.yml:2: global.windows: at least one window is required`,
	"bad_profile_near.yml":            `testdata/bad_profile_near.yml:4: targets[0].profile: unknown profile "vLLM" (known: [ray-vllm sglang vllm]); did you mean "vllm"?`,
	"bad_alertmanager_api_path.yml":   `testdata/bad_alertmanager_api_path.yml:6: alerting.alertmanagers[0].url: "http://127.0.0.1:9093/api/v2/alerts" already ends in /api/v2/alerts, which the exporter appends itself (alerts would go to .../api/v2/alerts/api/v2/alerts and get 404): write the base URL "http://127.0.0.1:9093"`,
	"bad_goal_quoted.yml":             `testdata/bad_goal_quoted.yml:7: slos[0].goal: must be a number, not a string: write 0.99 without quotes`,
	"bad_negative_duration.yml":       `testdata/bad_negative_duration.yml:2: global.scrape_interval: -1s must be positive (a duration is never negative)`,
	"bad_period_days.yml":             `testdata/bad_period_days.yml:11: slos[0].alerts[0].long_window: 8d is longer than the SLO period 7d`,
	"bad_tab.yml":                     `testdata/bad_tab.yml:2: a tab indents this line: YAML indents with spaces only (found character that cannot start any token)`,
	// Every problem, one per line in file order: all of the file's shape,
	// or once it decodes, every validation problem.
	"bad_many_check.yml": "testdata/bad_many_check.yml:2: global.scrape_intervall: unknown field \"scrape_intervall\"\n" +
		"testdata/bad_many_check.yml:6: targets[0].lables: unknown field \"lables\"",
	"bad_many_validate.yml": "testdata/bad_many_validate.yml:2: targets[0].name: \"rtx 4090\" may only contain letters, digits and _ . : -\n" +
		"testdata/bad_many_validate.yml:7: slos[0].goal: 1.5 must be strictly between 0 and 1 (e.g. 0.99)",
}

// TestImplausibleObjectivesWarn: thresholds beyond the plausible bound of
// their metric (milliseconds written as seconds) load, with a warning that
// names the place and the likely meaning; plausible ones give none.
func TestImplausibleObjectivesWarn(t *testing.T) {
	c, err := Parse([]byte("targets:\n  - name: a\n    url: http://127.0.0.1:8000/metrics\nslos:\n  - name: s\n    objectives:\n      ttft: 500s\n      tpot: 50s\n    goal: 0.99\n  - name: batch\n    objectives: {e2e: 20s, ttft: 90s}\n    goal: 0.95\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"c.yaml:7: slos[0].objectives.ttft: 500s is implausible for ttft (over 2m, every request would likely meet it); if 500 milliseconds was meant, write 500ms",
		"c.yaml:8: slos[0].objectives.tpot: 50s is implausible for tpot (over 2s, every request would likely meet it); if 50 milliseconds was meant, write 50ms",
	}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n got: %q\nwant: %q", c.Warnings, want)
	}
}

func TestLoadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(fileErrors) {
		t.Errorf("testdata has %d .yml files, the table %d: keep them in step", len(files), len(fileErrors))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := fileErrors[name]
			if !ok {
				t.Fatalf("no expected result for %s", name)
			}
			c, err := Load(f)
			if want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if c == nil {
					t.Fatal("Load returned neither config nor error")
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded, want error %q", want)
			}
			if err.Error() != want {
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *config.Error", err)
			}
			if c != nil {
				t.Error("Load returned a config with the error")
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load of a missing file: got %v, want an os.ErrNotExist", err)
	}
}

func TestParseErrorsWithoutFile(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"aliased unknown key via merge", "base: &b {foo: 1}\n", `c.yml:1: base: unknown field "base"`},
		{"merged target fields", "targets:\n  - &t {name: a, url: 'http://x/m'}\n  - <<: *t\n    name: b\n", ""},
		{"merged unknown key", "targets:\n  - <<: {name: a, bogus: 1}\n    url: 'http://x/m'\n", `c.yml:2: targets[0].bogus: unknown field "bogus"`},
		{"scalar for list", "global:\n  windows: 5m\n" + minimal, `c.yml:2: global.windows: expected a list, got "5m"`},
		{"list for scalar", "state_file: [a]\n" + minimal, `c.yml:1: state_file: expected a single value, got a list`},
		{"integer", "global:\n  max_models_per_target: lots\n" + minimal, `c.yml:2: global.max_models_per_target: "lots" is not an integer`},
		{"bool in http client", minimal + "    http_client_config: {follow_redirects: maybe}\n", `c.yml:4: targets[0].http_client_config.follow_redirects: "maybe" is not a boolean (true or false)`},
		{"trailing document marker", minimal + "---\n", `c.yml:4: more than one YAML document; a configuration is exactly one`},
		{"null document", "~\n", `c.yml:1: configuration is empty`},
		{"mapping key", "? [a]\n: 1\n" + minimal, `c.yml:1: mapping keys must be plain strings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "c.yml")
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Parse:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "c.yml", Line: 7, Field: "targets[0].url", Msg: "bad"}, "c.yml:7: targets[0].url: bad"},
		{Error{File: "c.yml", Line: 7, Msg: "bad"}, "c.yml:7: bad"},
		{Error{File: "c.yml", Field: "x", Msg: "bad"}, "c.yml: x: bad"},
		{Error{File: "c.yml", Msg: "bad"}, "c.yml: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// minimal is the smallest valid configuration, for tests to extend.
const minimal = "targets:\n  - name: rtx4090\n    url: http://127.0.0.1:8000/metrics\n"

// TestYAMLDecoderStrictInHTTPClientConfig pins the assumption behind Parse's
// final decode: yaml.v3's KnownFields reaches through prometheus/common's
// yaml.v2-style UnmarshalYAML, so even without the checker an unknown key in
// http_client_config is not silently dropped.
func TestYAMLDecoderStrictInHTTPClientConfig(t *testing.T) {
	in := minimal + "    http_client_config:\n      tls_config: {insecure_skip_verfy: true}\n"
	dec := yaml.NewDecoder(strings.NewReader(in))
	dec.KnownFields(true)
	var c Config
	err := dec.Decode(&c)
	if err == nil || !strings.Contains(err.Error(), "insecure_skip_verfy") {
		t.Fatalf("strict yaml.v3 decode: got %v, want an unknown-field error", err)
	}
	_, err = Parse([]byte(in), "c.yml")
	want := `c.yml:5: targets[0].http_client_config.tls_config.insecure_skip_verfy: unknown field "insecure_skip_verfy"`
	if err == nil || err.Error() != want {
		t.Fatalf("Parse: got %v, want %s", err, want)
	}
}

// TestDurationText: durations read as a configuration writes them.
func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour: "7d", 365 * 24 * time.Hour: "365d", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1s500ms", 0: "0s", -time.Second: "-1s",
	} {
		if got := DurationText(model.Duration(d)); got != want {
			t.Errorf("DurationText(%v) = %q, want %q", d, got, want)
		}
	}
}
