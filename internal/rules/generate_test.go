package rules

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

// configCases are configurations whose generated rules must parse, pass
// promtool and keep the invariants checked below.
var configCases = []struct {
	name, yaml string
}{
	{"two_objectives", `
targets: [{name: a, url: "http://127.0.0.1:8000/metrics"}]
slos:
  - {name: interactive, objectives: {ttft: 500ms, tpot: 50ms}, goal: 0.99, period: 30d}
`},
	{"three_objectives_off_edge", `
targets: [{name: a, url: "http://127.0.0.1:8000/metrics"}]
slos:
  - name: chat
    objectives: {ttft: 300ms, itl: 60ms, e2e: 1s}
    goal: 0.995
    period: 30d
    runbook_url: "https://runbooks.example/{{slo}}"
`},
	{"below_smallest_edge", `
targets: [{name: a, url: "http://127.0.0.1:8000/metrics"}]
slos:
  - {name: tiny, objectives: {e2e: 200ms}, goal: 0.9, period: 30d}
`},
	{"sglang_and_vllm", `
targets:
  - {name: a, url: "http://127.0.0.1:8000/metrics"}
  - {name: b, url: "http://127.0.0.1:30000/metrics", profile: sglang}
slos:
  - {name: fleet, objectives: {ttft: 1s, e2e: 20s, queue: 2s}, goal: 0.9, period: 30d}
  - {name: second, objectives: {itl: 100ms}, goal: 0.5, period: 2h, alerts: [{severity: page, long_window: 1h, short_window: 5m, budget_consumed: 0.1}]}
`},
}

func parseConfig(t *testing.T, in string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(in), "test.yaml")
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	return cfg
}

func generateCase(t *testing.T, in string) *RuleFile {
	t.Helper()
	f, err := DefaultOptions().Generate(parseConfig(t, in))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return f
}

func generateString(t *testing.T, in string) string {
	t.Helper()
	out, err := generateCase(t, in).YAML()
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	return string(out)
}

func parseExpr(t *testing.T, expr string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("expression does not parse: %v\n%s", err, expr)
	}
	return e
}

// TestExpressionsParse parses every generated expression with Prometheus's
// parser and checks names, labels and the `le` matchers.
func TestExpressionsParse(t *testing.T) {
	for _, c := range configCases {
		t.Run(c.name, func(t *testing.T) {
			f := generateCase(t, c.yaml)
			for _, g := range f.Groups {
				for _, r := range g.Rules {
					if (r.Record == "") == (r.Alert == "") {
						t.Fatalf("rule must be a recording or an alerting rule: %+v", r)
					}
					if r.Record != "" && !model.LegacyValidation.IsValidMetricName(r.Record) {
						t.Errorf("invalid record name %q", r.Record)
					}
					for k := range r.Labels {
						if !model.LegacyValidation.IsValidLabelName(k) {
							t.Errorf("invalid label name %q", k)
						}
					}
					e := parseExpr(t, r.Expr)
					parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
						vs, ok := n.(*parser.VectorSelector)
						if !ok {
							return nil
						}
						for _, m := range vs.LabelMatchers {
							if m.Name == "le" {
								checkLeMatcher(t, m)
							}
						}
						return nil
					})
				}
			}
		})
	}
}

// checkLeMatcher checks that an `le` regex matches both spellings of its
// edge and nothing else that looks like a neighbour.
func checkLeMatcher(t *testing.T, m *labels.Matcher) {
	t.Helper()
	if m.Type != labels.MatchRegexp {
		t.Errorf("le matcher %s is not a regex", m)
		return
	}
	alts := strings.Split(m.Value, "|")
	plain := strings.ReplaceAll(alts[0], `\`, "")
	for _, form := range []string{plain, strings.TrimSuffix(plain, ".0") + ".0"} {
		if strings.ContainsAny(plain, ".e") && form != plain {
			continue
		}
		if !m.Matches(form) {
			t.Errorf("le matcher %s does not match %q", m, form)
		}
	}
	for _, other := range []string{plain + "1", "1" + plain, strings.ReplaceAll(plain, ".", "x"), "+Inf"} {
		if other != plain && m.Matches(other) {
			t.Errorf("le matcher %s matches %q", m, other)
		}
	}
}

func TestConservativeEdge(t *testing.T) {
	const ms = 1_000_000 // nanoseconds
	ttftEdges := buckets.Default(buckets.TimeToFirstToken)
	tokenGapEdges := buckets.Default(buckets.InterTokenLatency)
	requestEdges := buckets.Default(buckets.RequestLatency)
	tests := []struct {
		name      string
		edges     []float64
		threshold int64
		want      edgeChoice
	}{
		{"exact ttft edge", ttftEdges, 500 * ms, edgeChoice{Edge: 0.5, Exact: true}},
		{"exact token edge", tokenGapEdges, 50 * ms, edgeChoice{Edge: 0.05, Exact: true}},
		{"exact integer edge", requestEdges, 20_000 * ms, edgeChoice{Edge: 20, Exact: true}},
		{"between edges rounds down", ttftEdges, 300 * ms, edgeChoice{Edge: 0.25}},
		{"just below an edge", tokenGapEdges, 49 * ms, edgeChoice{Edge: 0.025}},
		{"just above an edge", requestEdges, 1001 * ms, edgeChoice{Edge: 1}},
		{"first edge", ttftEdges, 1 * ms, edgeChoice{Edge: 0.001, Exact: true}},
		{"below the first edge", ttftEdges, ms / 2, edgeChoice{None: true}},
		{"beyond the last edge", requestEdges, 10_000_000 * ms, edgeChoice{Edge: 7680}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conservativeEdge(tt.edges, time.Duration(tt.threshold))
			if got != tt.want {
				t.Errorf("conservativeEdge(%d ns) = %+v, want %+v", tt.threshold, got, tt.want)
			}
		})
	}
}

func TestLeRegex(t *testing.T) {
	tests := []struct {
		edge float64
		want string
	}{
		{0.5, `0\.5`},
		{0.001, `0\.001`},
		{1, `1|1\.0`},
		{2560, `2560|2560\.0`},
		{1e6, `1e\+06`},
		{7.5, `7\.5`},
	}
	for _, tt := range tests {
		if got := leRegex(tt.edge); got != tt.want {
			t.Errorf("leRegex(%v) = %q, want %q", tt.edge, got, tt.want)
		}
	}
}

func TestFormatFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0.02 * 720, "14.4"},
		{1 - 0.99, "0.01"},
		{1 - 0.9, "0.1"},
		{6, "6"},
		{0.1 * 72, "7.2"},
	}
	for _, tt := range tests {
		if got := formatFloat(tt.in); got != tt.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// rulesNamed returns the rules with the given record or alert name and SLO.
func rulesNamed(f *RuleFile, name, sloName string) []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if (r.Record == name || r.Alert == name) && (sloName == "" || r.Labels["slo"] == sloName) {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestDefaultPolicyAlerts(t *testing.T) {
	f := generateCase(t, configCases[0].yaml)
	alerts := rulesNamed(f, AlertBurnRate, "interactive")
	want := []struct {
		long, short, severity, factor, forDur string
	}{
		{"1h", "5m", "page", "14.4", "2m"},
		{"6h", "30m", "page", "6", "15s"},
		{"3d", "6h", "ticket", "1", "1h"},
	}
	if len(alerts) != len(want) {
		t.Fatalf("got %d burn alerts, want %d", len(alerts), len(want))
	}
	for i, w := range want {
		a := alerts[i]
		evidence := func(w, f string) string {
			return "(\n  max without (window) (model_name:vllm_slo_burn_rate_observed:ratio_rate" + w + `{slo="interactive"}) > ` + f +
				"\n  or\n  max without (window) (model_name:vllm_slo_burn_rate_lower:ratio_rate" + w + `{slo="interactive"}) > ` + f + "\n)"
		}
		wantExpr := `max without (window) (model_name:vllm_slo_burn_rate_upper:ratio_rate` + w.long + `{slo="interactive"}) > ` + w.factor +
			"\nand on (model_name, slo)\n" + evidence(w.long, w.factor) +
			"\nand on (model_name, slo)\n" +
			`max without (window) (model_name:vllm_slo_burn_rate_upper:ratio_rate` + w.short + `{slo="interactive"}) > ` + w.factor +
			"\nand on (model_name, slo)\n" + evidence(w.short, w.factor)
		if a.Expr != wantExpr {
			t.Errorf("alert %d expr =\n%s\nwant\n%s", i, a.Expr, wantExpr)
		}
		if a.Labels["severity"] != w.severity || a.Labels["long_window"] != w.long || a.Labels["short_window"] != w.short {
			t.Errorf("alert %d labels = %v", i, a.Labels)
		}
		if a.For.String() != w.forDur {
			t.Errorf("alert %d for = %s, want %s", i, a.For, w.forDur)
		}
		// No current value: the daemon's copy of the alert has the same words
		// (TestBurnAlertTextIsTheDaemons).
		if d := a.Annotations["description"]; strings.Contains(d, "$value") || !strings.Contains(d, "Over "+w.long+" and over "+w.short) || a.Annotations["summary"] == "" {
			t.Errorf("alert %d annotations = %v", i, a.Annotations)
		}
		if _, ok := a.Annotations["runbook_url"]; ok {
			t.Errorf("alert %d has a runbook_url without one configured", i)
		}
	}
}

func TestWindowsCoverPolicyAndPeriod(t *testing.T) {
	f := generateCase(t, configCases[0].yaml)
	var got []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if strings.HasPrefix(r.Record, recBurn) {
				got = append(got, r.Labels["window"])
			}
		}
	}
	want := []string{"5m", "30m", "1h", "6h", "3d", "30d"}
	if !slices.Equal(got, want) {
		t.Errorf("burn-rate windows = %v, want %v", got, want)
	}
	budget := rulesNamed(f, recBudget, "interactive")
	if len(budget) != 1 || budget[0].Expr != `1 - model_name:vllm_slo_burn_rate_upper:ratio_rate30d{slo="interactive"}` {
		t.Errorf("budget rule = %+v", budget)
	}
}

func TestObjectiveRules(t *testing.T) {
	f := generateCase(t, configCases[0].yaml)
	byObjective := map[string]Rule{}
	for _, r := range rulesNamed(f, recGood+"5m", "interactive") {
		byObjective[r.Labels["objective"]] = r
	}
	want := map[string]string{
		"ttft": `sum_over_time(model_name:vllm_slo_ttft_good_first_tokens_lower:interval_increase{slo="interactive"}[4m59s999ms])`,
		"tpot": `sum without (objective) (sum_over_time(model_name:vllm_slo_observed_good_lower:interval_increase{slo="interactive",objective="tpot"}[4m59s999ms]))`,
	}
	for obj, expr := range want {
		r, ok := byObjective[obj]
		if !ok {
			t.Fatalf("no good-requests rule for %s", obj)
		}
		if r.Expr != expr {
			t.Errorf("%s good expr = %s, want %s", obj, r.Expr, expr)
		}
		if r.Comment != "" {
			t.Errorf("%s threshold is an edge but has comment %q", obj, r.Comment)
		}
		if r.Labels["window"] != "5m" {
			t.Errorf("%s labels = %v", obj, r.Labels)
		}
	}
	reqs := rulesNamed(f, recRequests+"1h", "interactive")
	if len(reqs) != 2 || reqs[1].Expr != `sum_over_time(model_name:vllm_slo_first_tokens:interval_increase{slo="interactive"}[59m59s999ms])` {
		t.Errorf("requests rules = %+v", reqs)
	}
}

// TestJointFromLedger checks the population of the joint attainment: the
// ledger's good requests over finished plus abandoned plus rejected
// requests by default, without the abandoned ones under abandoned:
// excluded, without the rejected ones under rejected: excluded, and the
// Fréchet bound of the attainments when the SLO judges ITL only.
func TestJointFromLedger(t *testing.T) {
	excluded := strings.Replace(configCases[0].yaml, "goal:", "abandoned: excluded, goal:", 1)
	neither := strings.Replace(configCases[0].yaml, "goal:", "abandoned: excluded, rejected: excluded, goal:", 1)
	noRejected := strings.Replace(configCases[0].yaml, "goal:", "rejected: excluded, goal:", 1)
	finished, rejected := recFinished+"5m{slo=\"interactive\"}", recRejected+"5m{slo=\"interactive\"}"
	tests := []struct {
		name, yaml, slo, want, not string
	}{
		{"abandoned and rejected bad", configCases[0].yaml, "interactive",
			recJointGoodLo + "5m{slo=\"interactive\",objective=\"all\"}) / ((" + finished + " + " + recAbandonedHi + "5m{slo=\"interactive\"} + " + rejected + ") > 0)", ""},
		{"abandoned excluded", excluded, "interactive",
			recJointGoodLo + "5m{slo=\"interactive\",objective=\"all\"}) / ((" + finished + " + " + rejected + ") > 0)", recAbandonedHi},
		{"rejected excluded", noRejected, "interactive",
			recJointGoodLo + "5m{slo=\"interactive\",objective=\"all\"}) / ((" + finished + " + " + recAbandonedHi + "5m{slo=\"interactive\"}) > 0)", recRejected},
		{"both excluded", neither, "interactive",
			recJointGoodLo + "5m{slo=\"interactive\",objective=\"all\"}) / (" + finished + " > 0)", recRejected},
		{"one objective", configCases[2].yaml, "tiny", recJointGoodLo + "5m{slo=\"tiny\",objective=\"all\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := generateCase(t, tt.yaml)
			var joint []Rule
			for _, r := range rulesNamed(f, recAttain+"5m", tt.slo) {
				if r.Labels["objective"] == allObjective {
					joint = append(joint, r)
				}
			}
			if len(joint) != 1 {
				t.Fatalf("got %d joint rules, want 1", len(joint))
			}
			if !strings.Contains(joint[0].Expr, tt.want) || (tt.not != "" && strings.Contains(joint[0].Expr, tt.not)) {
				t.Errorf("joint expr =\n%s\nwant it to contain\n%s", joint[0].Expr, tt.want)
			}
		})
	}
}

func TestOffEdgeThresholds(t *testing.T) {
	f := generateCase(t, configCases[1].yaml)
	good := rulesNamed(f, recGood+"5m", "chat")
	exprs := map[string]Rule{}
	for _, r := range good {
		exprs[r.Labels["objective"]] = r
	}
	// Per-request objectives count from the ledger's per-interval changes,
	// which read the bucket at the edge.
	if r := exprs["ttft"]; !strings.Contains(r.Comment, "300ms") || !strings.Contains(r.Comment, "0.25s") {
		t.Errorf("ttft 300ms rule = %+v", r)
	}
	if r := rulesNamed(f, recIntTTFTGoodLo, "chat"); len(r) != 1 || !strings.Contains(r[0].Expr, `{le=~"0\\.25"}`) {
		t.Errorf("ttft 300ms interval rule = %+v", r)
	}
	if r := exprs["itl"]; !strings.Contains(r.Expr, `{le=~"0\\.05"}`) || r.Comment == "" {
		t.Errorf("itl 60ms rule = %+v", r)
	}
	if r := exprs["e2e"]; r.Comment != "" {
		t.Errorf("e2e 1s rule = %+v", r)
	}
	for _, r := range rulesNamed(f, recIntObjGoodLo, "chat") {
		if r.Labels["objective"] == "e2e" && !strings.Contains(r.Expr, `{le=~"1|1\\.0"}`) {
			t.Errorf("e2e 1s interval rule = %+v", r)
		}
	}
	// The deprecated ITL name is a fallback after the current one.
	want := "sum by (model_name) (increase(vllm:inter_token_latency_seconds_bucket{le=~\"0\\\\.05\"}[5m]))\nor\n" +
		"sum by (model_name) (increase(vllm:time_per_output_token_seconds_bucket{le=~\"0\\\\.05\"}[5m]))"
	if exprs["itl"].Expr != want {
		t.Errorf("itl expr =\n%s\nwant\n%s", exprs["itl"].Expr, want)
	}
	// A templated runbook URL is escaped so that Prometheus prints it as is.
	for _, a := range rulesNamed(f, AlertBurnRate, "chat") {
		if got := a.Annotations["runbook_url"]; got != `https://runbooks.example/{{ "{{" }}slo}}` {
			t.Errorf("runbook_url = %q", got)
		}
	}
}

func TestBelowSmallestEdgeCountsNothingGood(t *testing.T) {
	f := generateCase(t, configCases[2].yaml)
	good := rulesNamed(f, recGood+"5m", "tiny")
	if len(good) != 1 || good[0].Comment == "" {
		t.Errorf("good rule = %+v", good)
	}
	lo := rulesNamed(f, recIntObjGoodLo, "tiny")
	if len(lo) != 1 || !strings.HasPrefix(lo[0].Expr, "0 * (sum by (model_name) (") {
		t.Errorf("interval good rule = %+v", lo)
	}
}

func TestProfilesCombine(t *testing.T) {
	f := generateCase(t, configCases[3].yaml)
	reqs := rulesNamed(f, recIntObserved, "fleet")
	byObjective := map[string]string{}
	for _, r := range reqs {
		byObjective[r.Labels["objective"]] = r.Expr
	}
	want := "sum by (model_name) ((last_over_time(vllm:request_queue_time_seconds_count[4m59s999ms])"
	if !strings.HasPrefix(byObjective["queue"], want) || !strings.Contains(byObjective["queue"], "\nor\nsum by (model_name) ((last_over_time(sglang:queue_time_seconds_count[4m59s999ms])") {
		t.Errorf("queue requests expr =\n%s\nwant\n%s", byObjective["queue"], want)
	}
	// The second SLO has only its own policy and period windows.
	var windows []string
	for _, g := range f.Groups {
		if g.Name != "vllm-slo-second" {
			continue
		}
		for _, r := range g.Rules {
			if strings.HasPrefix(r.Record, recBurn) {
				windows = append(windows, r.Labels["window"])
			}
		}
	}
	if !slices.Equal(windows, []string{"5m", "1h", "2h"}) {
		t.Errorf("second SLO windows = %v", windows)
	}
	missing := rulesNamed(f, AlertFamilyMissing, "")
	if len(missing) != 1 || missing[0].Expr != `vllm_slo_target_metric_missing{metric=~"e2e|itl|queue|ttft"} == 1` {
		t.Errorf("missing-family alert = %+v", missing)
	}
}

func TestFleetGroup(t *testing.T) {
	f := generateCase(t, configCases[0].yaml)
	last := f.Groups[len(f.Groups)-1]
	if last.Name != "vllm-slo-exporter" {
		t.Fatalf("last group = %q", last.Name)
	}
	var records, alerts []string
	for _, r := range last.Rules {
		if r.Record != "" {
			records = append(records, r.Record)
		} else {
			alerts = append(alerts, r.Alert+" "+r.For.String()+" "+r.Labels["severity"])
		}
	}
	wantRecords := []string{
		"slo_objective:vllm_slo_good_requests:rate5m", "slo_objective:vllm_slo_good_requests:rate30m",
		"slo_objective:vllm_slo_good_requests:rate1h", "slo_objective:vllm_slo_good_requests:rate6h",
		"slo_objective:vllm_slo_good_requests:rate3d", recFleetBurn,
	}
	if !slices.Equal(records, wantRecords) {
		t.Errorf("fleet records = %v, want %v", records, wantRecords)
	}
	wantAlerts := []string{AlertTargetDown + " 45s page", AlertExporterAbsent + " 2m page", AlertFamilyMissing + " 10m ticket", AlertHistogramsMissing + " 45s page"}
	if !slices.Equal(alerts, wantAlerts) {
		t.Errorf("fleet alerts = %v, want %v", alerts, wantAlerts)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	f := generateCase(t, configCases[1].yaml)
	out, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var back RuleFile
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatalf("unmarshal generated YAML: %v", err)
	}
	for i := range f.Groups {
		f.Groups[i].Comment = ""
		for j := range f.Groups[i].Rules {
			f.Groups[i].Rules[j].Comment = ""
		}
	}
	f.Comment = ""
	if len(back.Groups) != len(f.Groups) {
		t.Fatalf("round trip: %d groups, want %d", len(back.Groups), len(f.Groups))
	}
	for i := range f.Groups {
		if !slices.EqualFunc(back.Groups[i].Rules, f.Groups[i].Rules, rulesEqual) || back.Groups[i].Name != f.Groups[i].Name {
			t.Errorf("group %d differs after round trip", i)
		}
	}
	if !strings.Contains(string(out), "# ttft threshold 300ms is not a vLLM default bucket edge") {
		t.Errorf("comment on the off-edge threshold missing from YAML")
	}
}

func rulesEqual(a, b Rule) bool {
	return a.Record == b.Record && a.Alert == b.Alert && a.Expr == b.Expr && a.For == b.For &&
		mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Annotations, b.Annotations)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestGenerateErrors(t *testing.T) {
	if _, err := DefaultOptions().Generate(nil); err == nil {
		t.Error("DefaultOptions().Generate(nil) succeeded")
	}
	cfg := parseConfig(t, configCases[0].yaml)
	cfg.SLOs[0].Goal = 1
	if _, err := DefaultOptions().Generate(cfg); err == nil || !strings.Contains(err.Error(), `SLO "interactive"`) {
		t.Errorf("goal 1: err = %v", err)
	}
	cfg = parseConfig(t, configCases[0].yaml)
	cfg.Targets[0].Profile = "nope"
	if _, err := DefaultOptions().Generate(cfg); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown profile: err = %v", err)
	}
	cfg = parseConfig(t, configCases[3].yaml)
	cfg.SLOs[0].Objectives["tpot"] = model.Duration(1e9) // sglang has no TPOT histogram
	if _, err := DefaultOptions().Generate(cfg); err == nil || !strings.Contains(err.Error(), "tpot") {
		t.Errorf("unmeasurable objective: err = %v", err)
	}
}

// TestRejectedRequests checks where the rules read admission rejections:
// from the admission counters of the profiles that name one (vLLM's, also
// in a fleet mixed with SGLang, which has none), summed per model with no
// engine label, and counted 0 over a window where no target's profile has
// one, so that the population and the evidence can always add them.
func TestRejectedRequests(t *testing.T) {
	sglangOnly := `
targets: [{name: b, url: "http://127.0.0.1:30000/metrics", profile: sglang}]
slos:
  - {name: fleet, objectives: {ttft: 1s, e2e: 20s}, goal: 0.9, period: 30d}
`
	for _, c := range []struct {
		name, yaml, slo string
		counter         bool
	}{
		{"vllm", configCases[0].yaml, "interactive", true},
		{"vllm and sglang", configCases[3].yaml, "fleet", true},
		{"sglang only", sglangOnly, "fleet", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := generateCase(t, c.yaml)
			interval := rulesNamed(f, recIntRejected, c.slo)
			windowed := rulesNamed(f, windowed(recRejected, model.Duration(5*time.Minute)), c.slo)
			if len(windowed) != 1 {
				t.Fatalf("got %d windowed rejected rules, want 1", len(windowed))
			}
			zero := "0 * sum_over_time(" + recIntFinished
			if !strings.Contains(windowed[0].Expr, zero) {
				t.Errorf("windowed rejected = %s, want a 0 where no rejection counter exists", windowed[0].Expr)
			}
			if !c.counter {
				if len(interval) != 0 || strings.Contains(windowed[0].Expr, recIntRejected) {
					t.Errorf("%d interval rules, windowed %s: want no rejection counter read", len(interval), windowed[0].Expr)
				}
				return
			}
			if len(interval) != 1 || !strings.Contains(interval[0].Expr, "vllm:admission_rejections_total") || strings.Contains(interval[0].Expr, "engine") {
				t.Fatalf("interval rules = %+v, want one summing vllm:admission_rejections_total per model", interval)
			}
			if !strings.HasPrefix(windowed[0].Expr, "sum_over_time("+recIntRejected) {
				t.Errorf("windowed rejected = %s, want the sum of the interval rule", windowed[0].Expr)
			}
		})
	}
}

// TestGroupNamesCollide checks that an SLO whose groups would take another
// group's name is refused with the name, while the same SLOs renamed
// generate, and that every generated file's group names are unique.
func TestGroupNamesCollide(t *testing.T) {
	for _, c := range configCases {
		seen := map[string]bool{}
		for _, g := range generateCase(t, c.yaml).Groups {
			if seen[g.Name] {
				t.Errorf("%s: group %q twice", c.name, g.Name)
			}
			seen[g.Name] = true
		}
	}
	for _, clash := range []string{"x-long", "capacity", "exporter"} {
		in := `
targets: [{name: a, url: "http://127.0.0.1:8000/metrics"}]
slos:
  - {name: x, objectives: {ttft: 500ms}, goal: 0.99, period: 30d}
  - {name: ` + clash + `, objectives: {ttft: 500ms}, goal: 0.99, period: 30d}
capacity: {}
`
		cfg, err := config.Parse([]byte(in), "test.yaml")
		if err != nil {
			t.Logf("%s: refused by the configuration already: %v", clash, err)
			continue
		}
		_, err = DefaultOptions().Generate(cfg)
		if err == nil || !strings.Contains(err.Error(), "vllm-slo-"+clash) {
			t.Errorf("SLO %q beside SLO x: err = %v, want the colliding group name", clash, err)
		}
	}
}
