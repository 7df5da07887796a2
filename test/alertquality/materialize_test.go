package alertquality

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// TestReadAtEvaluation: a bare read of a stored series, with or without an
// offset, becomes a read of the sample at the reader's evaluation; ranges
// over it and reads of series not stored are left alone.
func TestReadAtEvaluation(t *testing.T) {
	t.Parallel()
	stored := map[string]bool{"a:x": true}
	for _, c := range []struct{ in, want string }{
		{`a:x`, `last_over_time(a:x[14s999ms])`},
		{`a:x{slo="s"} / b:y`, `last_over_time(a:x{slo="s"}[14s999ms]) / b:y`},
		{`a:x{slo="s"} offset 30s`, `last_over_time(a:x{slo="s"}[14s999ms] offset 30s)`},
		{`sum_over_time(a:x[5m])`, `sum_over_time(a:x[5m])`},
		{`b:y + on () vllm:num_requests_running`, `b:y + on () vllm:num_requests_running`},
	} {
		got, err := readAtEvaluation(c.in, stored)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("readAtEvaluation(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestMaterializable: what a stage may store is what reads raw series
// within the lookback and stored series at one evaluation, or, without a
// window, over up to an hour; a window is not.
func TestMaterializable(t *testing.T) {
	t.Parallel()
	stored := map[string]bool{"a:x": true}
	for _, c := range []struct {
		record, window, expr string
		want                 bool
	}{
		{"m:interval", "", `last_over_time(vllm:e2e_count[4m59s999ms]) - last_over_time(vllm:e2e_count[4m59s999ms] offset 15s)`, true},
		{"m:joint", "", `last_over_time(a:x[14s999ms]) * 2`, true},
		{"m:inlined", "", `last_over_time((vllm:x * 2)[14s999ms:15s])`, true},
		{"m:window5m", "5m", `sum_over_time(a:x[4m59s999ms])`, false},
		{"m:window1h", "1h", `sum_over_time((vllm:x)[59m59s999ms:15s])`, false},
		{"m:rate", "", `rate(vllm:x[10m])`, false},
		{"server:reach", "", `max_over_time((vllm:x)[1m59s999ms:15s])`, true},
		// No window: up to an hour over stored series, not raw ones.
		{"m:streaming", "", `sum_over_time(a:x[59m59s999ms]) + last_over_time(a:x[14s999ms] offset 1h)`, true},
		{"m:budget", "", `sum_over_time(a:x[29d23h59m59s999ms])`, false},
		{"m:raw1h", "", `sum_over_time((vllm:x)[59m59s999ms:15s])`, false},
	} {
		r := rules.Rule{Record: c.record}
		if c.window != "" {
			r.Labels = map[string]string{"window": c.window}
		}
		got, err := materializable(r, c.expr, stored)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: materializable(%s) = %v, want %v", c.record, c.expr, got, c.want)
		}
	}
}

// TestMaterializedEqualsInlined is the differential test of the stages:
// over the same scrapes, every window of the alert policy reads the same
// from the rules inlined over the raw series alone (StartPrometheus) and
// over the stored stages (StartPrometheusWith), at every step, present at
// the same steps, equal but for floating-point rounding (1e-9 relative):
// its joint bounds, and every series its observed burn rate reads. The
// burn rate is compared through its inputs because it reads them at one
// evaluation only (burnRateInputs checks that), and both paths inline it
// over them alike, so inputs that agree give rates that agree; whole, its
// inlined expression repeats each input several times and made this test's
// raw-series side about two thirds of its time. The scenarios are those
// where a series is absent at some steps (failed scrapes, a restart, an
// outage), where a bare read of a stored series would otherwise read an
// old sample, and one with abandoned streams under `abandoned: bad`.
func TestMaterializedEqualsInlined(t *testing.T) {
	t.Parallel()
	if testing.Short() || !installed("prometheus", "promtool") {
		t.Skip("needs Debian's prometheus and promtool, and not -short")
	}
	var runs []*Run
	for _, name := range []string{"scrape-failures", "outage", "cancel15-bad-1d"} {
		sc, ok := libraryScenario(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	rfs := inlinedRulesOf(t, runs)
	plain, err := StartPrometheus(t.TempDir(), runs)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	staged, rests, err := StartPrometheusWith(t.TempDir(), runs, rfs)
	if err != nil {
		t.Fatal(err)
	}
	defer staged.Stop()
	for i, run := range runs {
		shift := time.Duration(i) * runSpacing
		start, end := run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift)
		slo := run.Config.SLOs[0].Name
		for _, w := range policyWindows(run) {
			sels := []string{
				fmt.Sprintf(`model_name:vllm_slo_attainment_lower:ratio_rate%s{objective="all"}`, model.Duration(w)),
				fmt.Sprintf(`model_name:vllm_slo_attainment_upper:ratio_rate%s{objective="all"}`, model.Duration(w)),
			}
			sels = append(sels, burnRateInputs(t, rfs[i], slo, w)...)
			for _, sel := range sels {
				want := query(t, plain, rfs[i], sel, start, end)
				got := query(t, staged, rests[i], sel, start, end)
				if len(want) == 0 {
					t.Errorf("%s %s: no series inlined", run.Scenario.Name, sel)
				}
				sameRounded(t, run.Scenario.Name+" "+sel, want, got)
			}
		}
	}
}

// burnRateInputs are the series the observed burn rate of slo over w reads
// in rf, as selectors; it fails the test if the rule reads anything over a
// range, where equal inputs at each step would not make equal rates.
func burnRateInputs(t *testing.T, rf *rules.RuleFile, slo string, w time.Duration) []string {
	t.Helper()
	record := "model_name:vllm_slo_burn_rate_observed:ratio_rate" + model.Duration(w).String()
	var sels []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != record || r.Labels["slo"] != slo {
				continue
			}
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				switch n := n.(type) {
				case *parser.VectorSelector:
					sels = append(sels, n.String())
				case *parser.MatrixSelector, *parser.SubqueryExpr:
					t.Errorf("%s reads %s over a range", record, n)
				}
				return nil
			})
		}
	}
	if len(sels) == 0 {
		t.Fatalf("no rule records %s{slo=%q}", record, slo)
	}
	slices.Sort(sels)
	return slices.Compact(sels)
}

// sameRounded fails the test unless got has the series of want, each
// present at the same steps with the same values but for floating-point
// rounding (1e-9 relative).
func sameRounded(t *testing.T, what string, want, got map[string]map[int64]float64) {
	t.Helper()
	for ls := range got {
		if _, ok := want[ls]; !ok {
			t.Errorf("%s: series %s from the stored stages only", what, ls)
		}
	}
	for ls, wv := range want {
		gv := got[ls]
		for ts, v := range wv {
			g, ok := gv[ts]
			if !ok || !(math.Abs(g-v) <= 1e-9*math.Max(1, math.Abs(v)) || math.IsNaN(g) && math.IsNaN(v)) {
				t.Errorf("%s %s at %d: stored stages read %v (present %v), inlined %v", what, ls, ts, g, ok, v)
			}
		}
		for ts := range gv {
			if _, ok := wv[ts]; !ok {
				t.Errorf("%s %s at %d: present from the stored stages only", what, ls, ts)
			}
		}
	}
}

// query inlines sel over rf and reads each of its series at every step
// from start to end.
func query(t *testing.T, p *Prometheus, rf *rules.RuleFile, sel string, start, end time.Time) map[string]map[int64]float64 {
	t.Helper()
	expr, err := Inline(rf, sel)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := p.seriesValues(expr, start, end)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// libraryScenario is the library's scenario of that name.
func libraryScenario(name string) (Scenario, bool) {
	for _, sc := range Library() {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}
