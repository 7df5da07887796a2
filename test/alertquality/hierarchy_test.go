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

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// hierarchyLevels are the test's levels: short enough that a 30-minute run
// reads every level (spans of 4, 20 and 80 evaluations), where the default
// ones (5m → 1w) would leave the upper levels before the history.
var hierarchyLevels = []time.Duration{time.Minute, 5 * time.Minute, 20 * time.Minute}

// hierarchyLong is the test's long group interval: it divides the first
// level, and the windows longer than the second level (12m, 2h24m, 1d)
// are the long group's.
const hierarchyLong = time.Minute

// hierarchyScenarios restart vLLM (counter resets, gauge series that begin
// inside the windows) and fail scrapes (gaps in every per-interval series).
var hierarchyScenarios = []string{"restart", "scrape-failures"}

// TestHierarchyEqualsFlat evaluates the rules with the hierarchy, in two
// groups per SLO as shipped (the long group every minute), and the flat
// rules in one, side by side (the flat ones under renamed records), over
// the same simulated scrapes on two engines: Prometheus's, with promtool
// test rules (the restart run's scrapes as input series, every group
// evaluated every 15 s), and VictoriaMetrics, with both files replayed by
// vmalert over both runs. Every windowed series must have the same value
// (exactly: every windowed value is built from sums of counts, which add
// exactly) as the flat rules' at every evaluation, the long group's at the
// SLO group's last evaluation its lag or more before (rules.Group.Lag),
// and the hierarchy must be read (some window longer than the second
// level), or the test would compare flat with flat.
func TestHierarchyEqualsFlat(t *testing.T) {
	t.Parallel()
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
	flat, err := rules.Options{}.Generate(runs[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	hier, err := rules.Options{Levels: hierarchyLevels, LongInterval: hierarchyLong}.Generate(runs[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if !usesLevels(hier) {
		t.Fatal("no window reads the hierarchy: the test would compare flat with flat")
	}
	if len(longWindows(hier)) == 0 {
		t.Fatal("no window is the long group's: the test would not compare it")
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
	inFlat := map[string]bool{}
	for _, r := range windowRecords(t, flat) {
		inFlat[r.sel] = true
	}
	for i, run := range runs {
		shift := time.Duration(i) * runSpacing
		from, to := run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift)
		if err := vm.Replay(both, from, to); err != nil {
			t.Fatal(err)
		}
		compared := 0
		hv, fv := map[string]map[int64]float64{}, map[string]map[int64]float64{}
		longAt := map[int64]bool{} // the long group's evaluations
		for _, r := range records {
			if !inFlat[r.sel] {
				continue // the start gauges the long group reads, of the SLO group
			}
			if hv[r.sel], err = vm.values(r.sel, from, to); err != nil {
				t.Fatal(err)
			}
			if fv[r.sel], err = vm.values("flat:"+r.sel, from, to); err != nil {
				t.Fatal(err)
			}
			for ts := range hv[r.sel] {
				longAt[ts] = longAt[ts] || r.lag > 0
			}
		}
		for _, r := range records {
			switch {
			case !inFlat[r.sel]:
			case r.lag > 0:
				compared += sameLagged(t, run.Scenario.Name+" VictoriaMetrics "+r.sel, fv[r.sel], hv[r.sel], longAt, r.lag)
			default:
				compared += sameSeries(t, run.Scenario.Name+" VictoriaMetrics "+r.sel, fv[r.sel], hv[r.sel])
			}
		}
		if compared == 0 {
			t.Errorf("%s: VictoriaMetrics recorded no windowed value", run.Scenario.Name)
		}
		t.Logf("%s: %d windowed series, %d values equal on VictoriaMetrics", run.Scenario.Name, len(records), compared)
	}
}

// windowedPair matches the windowed series of the hierarchy (A) with the
// flat rules' (B), by record name and labels, those in the windows a
// regular expression names (long) or, without long, all but the long
// ones; the flat ones lag before (promtool evaluates the long group at
// every step, so its series at t are the flat rules' at t − lag). The
// start gauges the long group reads from the SLO group have no flat
// counterpart and are left out.
func windowedPair(window string, lag time.Duration) (hier, flat string) {
	off := ""
	if lag > 0 {
		off = " offset " + model.Duration(lag).String()
	}
	hier = fmt.Sprintf(`label_replace({__name__=~"model_name:.+",__name__!~".+_present_at_start:.+",%s}, "rec", "$1", "__name__", "(.+)")`, window)
	flat = fmt.Sprintf(`label_replace({__name__=~"flat:.+",%s}%s, "rec", "$1", "__name__", "flat:(.+)")`, window, off)
	return hier, flat
}

// promtoolSame runs promtool test rules on both rule files over a run's
// scrapes and requires, every 5 minutes, no windowed series that differs
// from the flat one (the long group's from the flat one lag before) or
// exists on one side only, and more than ten that agree.
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
	long, lag := longWindows(both), time.Duration(0)
	for _, g := range both.Groups {
		lag = max(lag, time.Duration(g.Lag))
	}
	fast := `window!=""`
	if len(long) > 0 {
		fast += fmt.Sprintf(`,window!~%q`, strings.Join(long, "|"))
	}
	h, f := windowedPair(fast, 0)
	pairs := [][2]string{{h, f}}
	if len(long) > 0 {
		h, f := windowedPair(fmt.Sprintf(`window=~%q`, strings.Join(long, "|")), lag)
		pairs = append(pairs, [2]string{h, f})
	}
	var tests []map[string]any
	for at := 5 * time.Minute; at < time.Duration(len(run.Scrapes))*Interval; at += 5 * time.Minute {
		eval := model.Duration(at).String()
		for _, p := range pairs {
			for _, expr := range []string{p[0] + " != " + p[1], p[0] + " unless " + p[1], p[1] + " unless " + p[0]} {
				tests = append(tests, map[string]any{"expr": expr, "eval_time": eval, "exp_samples": []any{}})
			}
			tests = append(tests, map[string]any{"expr": "count(" + p[0] + " == " + p[1] + ") > bool 10", "eval_time": eval,
				"exp_samples": []any{map[string]any{"labels": "{}", "value": 1}}})
		}
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

// sameLagged requires a long group's series (got) to hold, at each of
// its evaluations at (the long group's, taken from every long series), the
// flat value (want) lag before, where the replay evaluated the SLO group
// (the evaluation the long group's series describe: vmalert's replay
// evaluates both groups on the same grid), and no value where that has
// none; it returns how many it compared.
func sameLagged(t *testing.T, what string, want, got map[int64]float64, at map[int64]bool, lag time.Duration) int {
	t.Helper()
	compared := 0
	for _, ts := range slices.Sorted(maps.Keys(at)) {
		if !at[ts] {
			continue
		}
		w, inFlat := want[ts-int64(lag/time.Second)]
		g, ok := got[ts]
		switch {
		case !inFlat && ok:
			t.Errorf("%s at %d: hierarchy %v, flat none %v before", what, ts, g, lag)
		case !inFlat:
		case !ok:
			t.Errorf("%s at %d: flat %v %v before, hierarchy none", what, ts, w, lag)
		case g != w:
			t.Errorf("%s at %d: flat %v %v before, hierarchy %v", what, ts, w, lag, g)
		default:
			compared++
		}
	}
	return compared
}

// longWindows lists the windows a rule file's long groups record.
func longWindows(rf *rules.RuleFile) []string {
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if w := r.Labels["window"]; g.Lag > 0 && w != "" && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// windowRecord is the selector of one windowed series a rule records (the
// rule's static labels as matchers) and its group's lag.
type windowRecord struct {
	sel string
	lag time.Duration
}

// windowRecords lists every windowed series the SLO groups record, one
// per rule.
func windowRecords(t *testing.T, rf *rules.RuleFile) []windowRecord {
	t.Helper()
	var out []windowRecord
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record == "" || r.Labels["window"] == "" {
				continue
			}
			var ms []string
			for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
				ms = append(ms, fmt.Sprintf("%s=%q", k, r.Labels[k]))
			}
			out = append(out, windowRecord{r.Record + "{" + strings.Join(ms, ",") + "}", time.Duration(g.Lag)})
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
		ng := rules.Group{Name: prefix + g.Name, Interval: g.Interval, Lag: g.Lag}
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
