package alertquality

import (
	"maps"
	"slices"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// TestAndOperands: the operands of an `and` chain, as written, from the
// right; an expression that is not an `and` has none.
func TestAndOperands(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`a > 1 and on (m) b and c`, []string{`c`, `b`, `a > 1`}},
		{`max without (w) (a) > 2 and on (m, s) (b or c) and d > 2`, []string{`d > 2`, `(b or c)`, `max without (w) (a) > 2`}},
		{`(a and b) or c`, nil},
		{`a or b and c`, nil},
		{`a`, nil},
	} {
		got, err := andOperands(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("andOperands(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestQuerySpans: runs of open steps become spans, joined where at most
// gap closed steps lie between them, and no closed step starts or ends one.
func TestQuerySpans(t *testing.T) {
	o, c := true, false
	for _, tc := range []struct {
		name string
		open []bool
		gap  int
		want [][2]int
	}{
		{"none open", []bool{c, c, c}, 2, nil},
		{"all open", []bool{o, o, o}, 0, [][2]int{{0, 2}}},
		{"apart", []bool{o, c, c, o}, 1, [][2]int{{0, 0}, {3, 3}}},
		{"joined at the gap", []bool{o, c, c, o}, 2, [][2]int{{0, 3}}},
		{"edges closed", []bool{c, o, o, c, o, c}, 1, [][2]int{{1, 4}}},
		{"three runs, two joined", []bool{o, c, o, c, c, c, o, o}, 1, [][2]int{{0, 2}, {6, 7}}},
		{"no join", []bool{o, c, o}, 0, [][2]int{{0, 0}, {2, 2}}},
	} {
		if got := querySpans(tc.open, tc.gap); !slices.Equal(got, tc.want) {
			t.Errorf("%s: querySpans(%v, %d) = %v, want %v", tc.name, tc.open, tc.gap, got, tc.want)
		}
	}
}

// TestGatedEqualsWhole is the differential test of presentGated: over a
// burn, every burn-rate alert of the generated rules fires at the same
// steps with the same label sets whether the whole alert is queried over
// the run or only over the spans where its gate holds; and the gate holds
// at some steps and not at others, with spans close enough to be queried
// as one, so the spans and their joins are exercised.
func TestGatedEqualsWhole(t *testing.T) {
	t.Parallel()
	if testing.Short() || !installed("prometheus", "promtool") {
		t.Skip("needs Debian's prometheus and promtool, and not -short")
	}
	sc, ok := libraryScenario("fast-burn")
	if !ok {
		t.Fatal("no scenario fast-burn")
	}
	run, err := playShared(sc)
	if err != nil {
		t.Fatal(err)
	}
	runs := []*Run{run}
	prom, rfs, err := StartPrometheusWith(t.TempDir(), runs, inlinedRulesOf(t, runs))
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	start, end := run.Scrapes[0].At, run.Scrapes[len(run.Scrapes)-1].At
	rec := newRecorded(rfs[0])
	var gated, joined, fired bool
	for _, g := range rfs[0].Groups {
		for _, r := range g.Rules {
			if r.Alert != pipeline.AlertBurnRate {
				continue
			}
			gate, whole, err := alertGate(rec, r.Expr)
			if err != nil || gate == "" {
				t.Fatalf("%s %s: no gate (%v)", r.Labels["severity"], r.Labels["long_window"], err)
			}
			want, wantSets, err := prom.present(whole, start, end)
			if err != nil {
				t.Fatal(err)
			}
			got, gotSets, err := prom.presentGated(rec, r.Expr, start, end)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				i := firstDiff(got, want)
				t.Errorf("%s %s: from step %d the gated query fires %v, the whole one %v", r.Labels["severity"], r.Labels["long_window"], i, got[i], want[i])
			}
			if ws, gs := labelSets(wantSets), labelSets(gotSets); !maps.Equal(ws, gs) {
				t.Errorf("%s %s: gated label sets %v, whole %v", r.Labels["severity"], r.Labels["long_window"], gs, ws)
			}
			open, _, err := prom.present(gate, start, end)
			if err != nil {
				t.Fatal(err)
			}
			gated = gated || count(open) > 0 && count(open) < len(open)
			joined = joined || len(querySpans(open, joinGap)) < len(querySpans(open, 0))
			fired = fired || count(want) > 0
		}
	}
	if !gated || !joined || !fired {
		t.Errorf("the gate held at some steps only: %v; spans were joined: %v; some alert fired: %v; the test compared too little", gated, joined, fired)
	}
}

// labelSets is a set of label sets, as their text.
func labelSets(sets []map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, ls := range sets {
		out[labelText(ls)] = true
	}
	return out
}

// firstDiff is the first step at which a and b (of one length) differ.
func firstDiff(a, b []bool) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
