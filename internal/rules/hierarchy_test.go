package rules

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestLevelSpans(t *testing.T) {
	cases := []struct {
		name     string
		levels   []time.Duration
		interval time.Duration
		want     []int
	}{
		{"default at 15s", DefaultOptions().Levels, 15 * time.Second, []int{20, 240, 1440, 5760, 40320}},
		{"rounded down to multiples", []time.Duration{5 * time.Minute, time.Hour}, 7 * time.Second, []int{42, 504}},
		{"a level no longer than the one below is dropped", []time.Duration{time.Minute, 70 * time.Second, 5 * time.Minute}, 15 * time.Second, []int{4, 20}},
		{"a level under one interval is dropped", []time.Duration{10 * time.Second, time.Minute}, 15 * time.Second, []int{4}},
		{"none: flat", nil, 15 * time.Second, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := levelSpans(c.levels, c.interval); !slices.Equal(got, c.want) {
				t.Errorf("levelSpans(%v, %v) = %v, want %v", c.levels, c.interval, got, c.want)
			}
		})
	}
}

// termRe reads one term of a window's sum: the series (a level or the
// per-interval one), its range and its offset.
var termRe = regexp.MustCompile(`(?:last|sum)_over_time\(x(?:_sum([0-9a-z]+))?\{slo="s"\}\[([0-9a-z]+)\](?: offset ([0-9a-z]+))?\)`)

// TestWindowSumTiles checks that a window's terms cover its ceil(w/interval)
// evaluations exactly once each, and that their number stays within the
// bound windowSum proves.
func TestWindowSumTiles(t *testing.T) {
	lp := ledgerPlan{interval: 15 * time.Second, spans: levelSpans(DefaultOptions().Levels, 15*time.Second)}
	lp.slo.Name = "s"
	for _, w := range []string{"1h1m", "6h", "1d", "3d", "30d", "30d15s", "31d23h59m45s", "365d", "16h48m", "1h24m"} {
		t.Run(w, func(t *testing.T) {
			d, err := model.ParseDuration(w)
			if err != nil {
				t.Fatal(err)
			}
			n := int(lp.windowStart(d) / lp.interval)
			covered := make([]int, n)
			terms := termRe.FindAllStringSubmatch(lp.windowSum("x", "", d), -1)
			for _, m := range terms {
				span := 1
				if m[1] != "" {
					span = int(mustDuration(t, m[1]) / lp.interval)
				} else {
					span = int((mustDuration(t, m[2]) + time.Millisecond) / lp.interval)
				}
				off := 0
				if m[3] != "" {
					off = int(mustDuration(t, m[3]) / lp.interval)
				}
				cover(t, covered, off, span, m[0])
			}
			requireCoveredOnce(t, covered)
			// windowSum's bound: n/s_L + Σ (s_{k+1}/s_k − 1) + s_1 − 1.
			bound := n/lp.spans[len(lp.spans)-1] + lp.spans[0] - 1
			for k := 1; k < len(lp.spans); k++ {
				bound += lp.spans[k]/lp.spans[k-1] - 1
			}
			if len(terms) > bound {
				t.Errorf("%d terms, more than the bound %d", len(terms), bound)
			}
			t.Logf("%s: %d evaluations from %d terms", w, n, len(terms))
		})
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := model.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return time.Duration(d)
}

// TestShortWindowsStayFlat checks that windows up to the second level read
// the per-interval series directly, as the flat rules do, and that the
// flat options write no level.
func TestShortWindowsStayFlat(t *testing.T) {
	lp := ledgerPlan{interval: 15 * time.Second, spans: levelSpans(DefaultOptions().Levels, 15*time.Second)}
	lp.slo.Name = "s"
	for _, w := range []model.Duration{model.Duration(time.Minute), model.Duration(time.Hour)} {
		if lp.hierarchical(w) {
			t.Errorf("window %s is summed from the hierarchy", w)
		}
		if got, want := lp.sumOverSelector("x", "", w), `sum_over_time(x{slo="s"}[`+(w-model.Duration(time.Millisecond)).String()+`])`; got != want {
			t.Errorf("window %s: %s, want %s", w, got, want)
		}
	}
	if !lp.hierarchical(model.Duration(time.Hour + 15*time.Second)) {
		t.Error("a window one interval past the second level is not summed from the hierarchy")
	}
	flat := lp
	flat.spans = nil
	if flat.hierarchical(model.Duration(30 * 24 * time.Hour)) {
		t.Error("the flat rules sum a window from the hierarchy")
	}
	if rs := flat.levelRules([]Rule{{Record: recIntFinished}}); len(rs) != 0 {
		t.Errorf("the flat rules record %d level series", len(rs))
	}
}

// TestLevelRulesSumTheLevelBelow checks a level's terms: the level below at
// every multiple of its span.
func TestLevelRulesSumTheLevelBelow(t *testing.T) {
	lp := ledgerPlan{interval: 15 * time.Second, spans: []int{4, 20}}
	lp.slo.Name = "s"
	rs := lp.levelRules([]Rule{{Record: recIntFinished, Labels: map[string]string{"slo": "s"}}, {Record: recIntObjGoodHi}})
	if len(rs) != 2 {
		t.Fatalf("%d level rules, want 2 (one series summed, two levels; the upper edge is not summed)", len(rs))
	}
	if want := `sum_over_time(` + recIntFinished + `{slo="s"}[59s999ms])`; rs[0].Expr != want {
		t.Errorf("first level: %s, want %s", rs[0].Expr, want)
	}
	for j := range 5 {
		term := `last_over_time(` + LevelRecord(recIntFinished, time.Minute) + `{slo="s"}[14s999ms]`
		if j > 0 {
			term += " offset " + model.Duration(time.Duration(j)*time.Minute).String()
		}
		if !regexp.MustCompile(regexp.QuoteMeta(term) + `\), "part", "` + strconv.Itoa(j) + `"`).MatchString(rs[1].Expr) {
			t.Errorf("second level lacks term %d (%s):\n%s", j, term, rs[1].Expr)
		}
	}
}

// TestEveryRecordedSeriesReadIsRecorded walks every expression the
// generator writes, with the hierarchy and flat, and requires each recorded
// series it reads (a name with a colon) to be recorded by some rule of the
// same file. A series read but never recorded is silently empty in
// Prometheus: a window that sums a per-interval series the hierarchy has no
// level of would read 0 rejected requests over the SLO period, say, where
// the flat rules count them.
func TestEveryRecordedSeriesReadIsRecorded(t *testing.T) {
	for _, c := range configCases {
		for _, opts := range []struct {
			name string
			opts Options
		}{{"hierarchy", DefaultOptions()}, {"flat", Options{}}} {
			t.Run(c.name+"/"+opts.name, func(t *testing.T) {
				f, err := opts.opts.Generate(parseConfig(t, c.yaml))
				if err != nil {
					t.Fatal(err)
				}
				recorded := map[string]bool{}
				for _, g := range f.Groups {
					for _, r := range g.Rules {
						recorded[r.Record] = true
					}
				}
				for _, g := range f.Groups {
					for _, r := range g.Rules {
						parser.Inspect(parseExpr(t, r.Expr), func(n parser.Node, _ []parser.Node) error {
							if vs, ok := n.(*parser.VectorSelector); ok && isRecordedName(vs.Name) && !recorded[vs.Name] {
								t.Errorf("%s%s reads %s, which no rule records", r.Record, r.Alert, vs.Name)
							}
							return nil
						})
					}
				}
			})
		}
	}
}

// isRecordedName reports whether a series name is one a recording rule
// writes: it has a colon and is not an engine's own (vllm:, sglang:).
func isRecordedName(name string) bool {
	return strings.Contains(name, ":") && !strings.HasPrefix(name, "vllm:") && !strings.HasPrefix(name, "sglang:")
}

// cover counts the evaluations from, …, from+span−1 of a window of
// len(covered) evaluations as read by term, failing on one past the window.
func cover(t *testing.T, covered []int, from, span int, term string) {
	t.Helper()
	for k := from; k < from+span; k++ {
		if k >= len(covered) {
			t.Fatalf("term %q reaches evaluation %d, past the window's %d", term, k, len(covered))
		}
		covered[k]++
	}
}

// requireCoveredOnce fails unless every evaluation of the window is read by
// exactly one term: the tiling a window's sum rests on.
func requireCoveredOnce(t *testing.T, covered []int) {
	t.Helper()
	for k, c := range covered {
		if c != 1 {
			t.Fatalf("evaluation %d of %d covered %d times", k, len(covered), c)
		}
	}
}
