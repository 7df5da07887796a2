package alertquality

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/rules"
)

// hierarchyLevels are the test's levels: short enough that a 30-minute run
// reads every level (spans of 4, 20 and 80 evaluations), where the default
// ones (5m → 1w) would leave the upper levels before the history.
var hierarchyLevels = []time.Duration{time.Minute, 5 * time.Minute, 20 * time.Minute}

// hierarchyScenarios restart vLLM (counter resets, gauge series that begin
// inside the windows) and fail scrapes (gaps in every per-interval series).
var hierarchyScenarios = []string{"restart", "scrape-failures"}

// TestHierarchyEqualsFlat evaluates the rules with the hierarchy and the
// flat rules, side by side (the flat ones under renamed records), over the
// same simulated scrapes on two engines: Prometheus's, with promtool test
// rules (the restart run's scrapes as input series, every group evaluated
// every 15 s), and VictoriaMetrics, with both files replayed by vmalert
// over both runs. Every windowed
// series must have the same value at every evaluation on both engines
// (exactly: every windowed value is built from sums of counts, which add
// exactly), and the hierarchy must be read (some window longer than the
// second level), or the test would compare flat with flat.
func TestHierarchyEqualsFlat(t *testing.T) {
	if testing.Short() || !installed("victoria-metrics", "vmalert", "promtool") {
		t.Skip("needs Debian's victoria-metrics (victoria-metrics, vmalert) and prometheus (promtool), and not -short")
	}
	var runs []*Run
	for _, sc := range Library() {
		if slices.Contains(hierarchyScenarios, sc.Name) {
			run, err := playShared(sc)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, run)
		}
	}
	flat, err := rules.GenerateWith(runs[0].Config, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hier, err := rules.GenerateWith(runs[0].Config, rules.Options{Levels: hierarchyLevels})
	if err != nil {
		t.Fatal(err)
	}
	if !usesLevels(hier) {
		t.Fatal("no window reads the hierarchy: the test would compare flat with flat")
	}
	both, err := prefixRecords(flat, "flat:")
	if err != nil {
		t.Fatal(err)
	}
	both.Groups = append(slices.Clone(hier.Groups), both.Groups...)
	// promtool on the first run only: it is most of the test's time, and
	// VictoriaMetrics below covers both.
	t.Run("promtool/"+runs[0].Scenario.Name, func(t *testing.T) { promtoolSame(t, t.TempDir(), both, runs[0]) })
	vm, err := StartVictoria(t.TempDir(), runs)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	records := windowRecords(t, hier)
	for i, run := range runs {
		shift := time.Duration(i) * runSpacing
		from, to := run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift)
		if err := vm.Replay(both, from, to); err != nil {
			t.Fatal(err)
		}
		compared := 0
		for _, sel := range records {
			v, err := vm.values(sel, from, to)
			if err != nil {
				t.Fatal(err)
			}
			vf, err := vm.values("flat:"+sel, from, to)
			if err != nil {
				t.Fatal(err)
			}
			compared += sameSeries(t, run.Scenario.Name+" VictoriaMetrics "+sel, vf, v)
		}
		if compared == 0 {
			t.Errorf("%s: VictoriaMetrics recorded no windowed value", run.Scenario.Name)
		}
		t.Logf("%s: %d windowed series, %d values equal on VictoriaMetrics", run.Scenario.Name, len(records), compared)
	}
}

// windowedPair matches every windowed series of the hierarchy (A) with the
// flat rules' (B), by record name and labels.
const windowedPair = `label_replace({__name__=~"model_name:.+",window!=""}, "rec", "$1", "__name__", "(.+)")`

// promtoolSame runs promtool test rules on both rule files over a run's
// scrapes and requires, every 5 minutes, no windowed series that differs
// or exists on one side only, and more than ten that agree.
func promtoolSame(t *testing.T, dir string, both *rules.RuleFile, run *Run) {
	text, err := both.YAML()
	if err != nil {
		t.Fatal(err)
	}
	ruleFile := filepath.Join(dir, "both.yml")
	if err := os.WriteFile(ruleFile, text, 0o600); err != nil {
		t.Fatal(err)
	}
	input, err := promtoolInput(run)
	if err != nil {
		t.Fatal(err)
	}
	flatPair := `label_replace({__name__=~"flat:.+",window!=""}, "rec", "$1", "__name__", "flat:(.+)")`
	var tests []map[string]any
	for at := 5 * time.Minute; at < time.Duration(len(run.Scrapes))*Interval; at += 5 * time.Minute {
		eval := model.Duration(at).String()
		for _, expr := range []string{windowedPair + " != " + flatPair, windowedPair + " unless " + flatPair, flatPair + " unless " + windowedPair} {
			tests = append(tests, map[string]any{"expr": expr, "eval_time": eval, "exp_samples": []any{}})
		}
		tests = append(tests, map[string]any{"expr": "count(" + windowedPair + " == " + flatPair + ") > bool 10", "eval_time": eval,
			"exp_samples": []any{map[string]any{"labels": "{}", "value": 1}}})
	}
	file := map[string]any{
		"rule_files":          []string{ruleFile},
		"evaluation_interval": model.Duration(Interval).String(),
		"tests":               []any{map[string]any{"interval": model.Duration(Interval).String(), "input_series": input, "promql_expr_test": tests}},
	}
	body, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	testFile := filepath.Join(dir, run.Scenario.Name+"_test.yml")
	if err := os.WriteFile(testFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("promtool", "test", "rules", testFile).CombinedOutput()
	if err != nil {
		msg := string(out)
		if len(msg) > 4000 {
			msg = msg[:4000] + "..."
		}
		t.Fatalf("promtool test rules: %v\n%s", err, msg)
	}
}

// promtoolInput is a run's scrapes as promtool's input series: one value
// per scrape, "_" where the scrape failed or lacked the series.
func promtoolInput(run *Run) ([]map[string]string, error) {
	series, err := runSeries(run, 0)
	if err != nil {
		return nil, err
	}
	first := run.Scrapes[0].At.UnixMilli()
	var out []map[string]string
	for _, name := range slices.Sorted(maps.Keys(series)) {
		vals := make([]string, len(run.Scrapes))
		for i := range vals {
			vals[i] = "_"
		}
		for _, s := range series[name] {
			k := int((s.ms - first) / Interval.Milliseconds())
			if k >= 0 && k < len(vals) {
				vals[k] = strconv.FormatFloat(s.v, 'g', -1, 64)
			}
		}
		out = append(out, map[string]string{"series": name, "values": strings.Join(vals, " ")})
	}
	return out, nil
}

// sameSeries requires two series to hold the same timestamps and exactly
// the same values, and returns how many it compared.
func sameSeries(t *testing.T, what string, want, got map[int64]float64) int {
	t.Helper()
	for _, ts := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[ts]
		switch {
		case !ok:
			t.Errorf("%s at %d: flat %v, hierarchy none", what, ts, want[ts])
		case g != want[ts]:
			t.Errorf("%s at %d: flat %v, hierarchy %v", what, ts, want[ts], g)
		}
	}
	for ts := range got {
		if _, ok := want[ts]; !ok {
			t.Errorf("%s at %d: hierarchy %v, flat none", what, ts, got[ts])
		}
	}
	return len(want)
}

// windowRecords lists a selector of every windowed series the SLO groups
// record, one per rule (the rule's static labels as matchers).
func windowRecords(t *testing.T, rf *rules.RuleFile) []string {
	t.Helper()
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record == "" || r.Labels["window"] == "" {
				continue
			}
			var ms []string
			for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
				ms = append(ms, fmt.Sprintf("%s=%q", k, r.Labels[k]))
			}
			out = append(out, r.Record+"{"+strings.Join(ms, ",")+"}")
		}
	}
	if len(out) == 0 {
		t.Fatal("the rule file records no windowed series")
	}
	return out
}

// usesLevels reports whether some rule reads the top level of the
// hierarchy (a window's sum: the levels read the level below).
func usesLevels(rf *rules.RuleFile) bool {
	top := rules.LevelRecord("", hierarchyLevels[len(hierarchyLevels)-1]) + "{"
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, top) {
				return true
			}
		}
	}
	return false
}

// prefixRecords copies the recording rules of rf with every recorded
// series renamed prefix+name, in the records and in the selectors that
// read them, so that both files can record into one VictoriaMetrics; the
// alerting rules are left out.
func prefixRecords(rf *rules.RuleFile, prefix string) (*rules.RuleFile, error) {
	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	out := &rules.RuleFile{}
	for _, g := range rf.Groups {
		ng := rules.Group{Name: prefix + g.Name, Interval: g.Interval}
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", r.Record, err)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok || !recorded[vs.Name] {
					return nil
				}
				vs.Name = prefix + vs.Name
				for i, m := range vs.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						vs.LabelMatchers[i] = labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, vs.Name)
					}
				}
				return nil
			})
			nr := r
			nr.Record, nr.Expr = prefix+r.Record, e.String()
			ng.Rules = append(ng.Rules, nr)
		}
		if len(ng.Rules) > 0 {
			out.Groups = append(out.Groups, ng)
		}
	}
	return out, nil
}
