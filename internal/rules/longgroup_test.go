package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestLongInterval(t *testing.T) {
	cases := []struct {
		name           string
		want, interval time.Duration
		spans          []int
		got            time.Duration
	}{
		{"default: 1m divides 5m", time.Minute, 15 * time.Second, []int{20, 240}, time.Minute},
		{"rounded down to a divisor of the first span", time.Minute, 7 * time.Second, []int{42, 504}, 49 * time.Second},
		{"no divisor of at least two intervals", time.Minute, 15 * time.Second, []int{7, 14}, 0},
		{"under two intervals", 20 * time.Second, 15 * time.Second, []int{20}, 0},
		{"no level", time.Minute, 15 * time.Second, nil, 0},
		{"not asked", 0, 15 * time.Second, []int{20}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := longInterval(c.want, c.interval, c.spans); got != c.got {
				t.Errorf("longInterval(%v, %v, %v) = %v, want %v", c.want, c.interval, c.spans, got, c.got)
			}
		})
	}
}

// TestLongWindowSumTiles checks, in the long group, that a window's terms
// cover the ceil(w/interval) evaluations ending lag before now exactly once
// each, with every level read over one long interval at a multiple of it
// (its own samples) and every per-interval term at least lag back.
func TestLongWindowSumTiles(t *testing.T) {
	lp := ledgerPlan{interval: 15 * time.Second, spans: levelSpans(DefaultOptions().Levels, 15*time.Second)}
	lp.slo.Name = "s"
	lp.long = longInterval(time.Minute, lp.interval, lp.spans)
	if lp.long != time.Minute || lp.lag() != 30*time.Second {
		t.Fatalf("long interval %v, lag %v; want 1m and 30s", lp.long, lp.lag())
	}
	for _, w := range []string{"1h1m", "6h", "3d", "30d", "30d15s", "1h24m"} {
		t.Run(w, func(t *testing.T) {
			n := int(lp.windowStart(mustModelDuration(t, w)) / lp.interval)
			covered := make([]int, n)
			for _, m := range termRe.FindAllStringSubmatch(lp.windowSum("x", "", mustModelDuration(t, w)), -1) {
				off := time.Duration(0)
				if m[3] != "" {
					off = mustDuration(t, m[3])
				}
				rng := mustDuration(t, m[2]) + time.Millisecond
				span := int(rng / lp.interval)
				if m[1] != "" {
					if rng != lp.long || off%lp.long != 0 {
						t.Fatalf("level term %q: range %v at offset %v, want %v at a multiple of it", m[0], rng, off, lp.long)
					}
					span = int(mustDuration(t, m[1]) / lp.interval)
				} else {
					if off < lp.lag() {
						t.Fatalf("per-interval term %q less than %v back", m[0], lp.lag())
					}
					off -= lp.lag()
				}
				cover(t, covered, int(off/lp.interval), span, m[0])
			}
			requireCoveredOnce(t, covered)
		})
	}
}

func mustModelDuration(t *testing.T, s string) model.Duration {
	t.Helper()
	d, err := model.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// TestLongGroupReads checks the two groups of every SLO with the
// hierarchy: the long group records every level and every series of the
// windows the hierarchy serves (but an ITL objective's counts, read from
// the raw histograms), reads no raw series, and reads the SLO group's
// series only lag back or more (the proof's condition, whatever the phase
// between the groups); the SLO group reads nothing the long group records
// but in its alerts. New rules of a long window that read the SLO group's
// series without lag (lp.now, fastAt) fail here.
func TestLongGroupReads(t *testing.T) {
	split := 0
	for _, c := range configCases {
		t.Run(c.name, func(t *testing.T) {
			f, err := DefaultOptions().Generate(parseConfig(t, c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range f.Groups {
				if !strings.HasSuffix(g.Name, "-long") {
					continue
				}
				split++
				checkLongGroup(t, f.Groups[i-1], g)
			}
		})
	}
	if split == 0 {
		t.Fatal("no configuration has a long group")
	}
}

func checkLongGroup(t *testing.T, fast, long Group) {
	t.Helper()
	if long.Interval != model.Duration(time.Minute) || long.Lag != 2*fast.Interval {
		t.Errorf("%s: interval %v, lag %v; want 1m and two of %s's intervals", long.Name, long.Interval, long.Lag, fast.Name)
	}
	inFast, inLong := recordsOf(fast), recordsOf(long)
	for _, r := range long.Rules {
		parser.Inspect(parseExpr(t, r.Expr), func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			switch {
			case !ok:
			case inLong[vs.Name]:
			case inFast[vs.Name]:
				if vs.OriginalOffset < time.Duration(long.Lag) {
					t.Errorf("%s: %s reads %s%s offset %v, less than the lag %v", long.Name, r.Record, vs.Name, vs.LabelMatchers, vs.OriginalOffset, long.Lag)
				}
			default:
				t.Errorf("%s: %s reads %s, which neither group records", long.Name, r.Record, vs.Name)
			}
			return nil
		})
	}
	for _, r := range fast.Rules {
		if w := r.Labels["window"]; w != "" && strings.Contains(r.Record, "interval_increase_over") {
			t.Errorf("%s records the window sum %s{window=%q}", fast.Name, r.Record, w)
		}
		if strings.Contains(r.Record, "interval_increase_sum") || strings.Contains(r.Record, "interval_sum") {
			t.Errorf("%s records the level %s", fast.Name, r.Record)
		}
		parser.Inspect(parseExpr(t, r.Expr), func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && r.Alert == "" && readsLong(long, vs) {
				t.Errorf("%s: %s reads %s%s, which the long group records", fast.Name, r.Record, vs.Name, vs.LabelMatchers)
			}
			return nil
		})
	}
	long30d := windowed(recFinished, model.Duration(30*24*time.Hour))
	if inFast[long30d] || !inLong[long30d] {
		t.Errorf("the 30d window's finished requests are not the long group's alone")
	}
}

// readsLong reports whether a selector selects a series the long group
// records: its name and, when it matches one objective, that objective
// (an ITL objective's counts share their names with the long group's).
func readsLong(long Group, vs *parser.VectorSelector) bool {
	objective := ""
	for _, m := range vs.LabelMatchers {
		if m.Name == "objective" && m.Type == labels.MatchEqual {
			objective = m.Value
		}
	}
	for _, r := range long.Rules {
		if r.Record == vs.Name && (objective == "" || r.Labels["objective"] == objective) {
			return true
		}
	}
	return false
}

func recordsOf(g Group) map[string]bool {
	out := map[string]bool{}
	for _, r := range g.Rules {
		if r.Record != "" {
			out[r.Record] = true
		}
	}
	return out
}
