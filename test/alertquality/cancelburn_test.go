package alertquality

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
)

// TestCancelBurnPagesPromptly plays the cancel-burn scenarios (both
// `abandoned` policies, 1-day and 30-day periods) through the daemon's
// pipeline from the histograms alone and in exact mode and, unless -short
// or without Debian's prometheus and promtool, through the generated rules
// in Prometheus, and holds every page of every path to: no false page, no
// missed page, and a first page within CancelBurnMaxDelay of the start of
// the true page condition it answers (both windows' true burn above the
// factor, before the alert's hold). With -v it prints, per path and page,
// when the condition held, when the truth and the path paged, and how long
// after the condition began.
func TestCancelBurnPagesPromptly(t *testing.T) {
	t.Parallel()
	var hists, exacts []*Run
	for _, sc := range Library() {
		if !strings.HasPrefix(sc.Name, "cancel-burn-") {
			continue
		}
		hist, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := playExactShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		hists, exacts = append(hists, hist), append(exacts, exact)
	}
	withRules := !testing.Short() && installed("prometheus", "promtool")
	if withRules {
		rulesShared(t, hists)
	} else {
		t.Log("generated rules not evaluated: -short, or prometheus/promtool not installed")
	}
	var table strings.Builder
	table.WriteString("| scenario | path | alert | true page condition | truth fires | path fires | false / missed | first page after the condition began |\n|---|---|---|---|---|---|---|---|\n")
	for i, hist := range hists {
		paths := []pagePath{{"histograms", hist, hist.Daemon}, {"exact", exacts[i], exacts[i].Daemon}}
		if withRules {
			paths = append(paths, pagePath{"rules", hist, hist.Rules})
		}
		for _, p := range paths {
			for _, k := range p.run.Keys {
				if k.Severity == "page" {
					checkPrompt(t, &table, p.run, p.name, k, p.fired[k])
				}
			}
		}
	}
	t.Log("\n" + table.String())
}

// pagePath is one path's pages of a run, by alert.
type pagePath struct {
	name  string
	run   *Run
	fired map[Key][]Episode
}

// checkPrompt scores one path's pages of alert k over run against the
// truth, fails the test on a false or missed page or a page later than
// CancelBurnMaxDelay after its true condition began, and adds the row of
// TestCancelBurnPagesPromptly's table.
func checkPrompt(t *testing.T, table *strings.Builder, run *Run, path string, k Key, got []Episode) {
	t.Helper()
	name := run.Scenario.Name
	cond, want := run.Condition[k], run.Truth[k]
	s := score(want, got)
	if s.False > 0 || s.Missed > 0 {
		t.Errorf("%s %s %s: truth %s, got %s: %d false, %d missed", name, path, k, describe(want), describe(got), s.False, s.Missed)
	}
	delays := pageDelays(cond, want, got)
	for _, d := range delays {
		if d > CancelBurnMaxDelay {
			t.Errorf("%s %s %s: paged %v after its true condition began (truth %s, got %s), want at most %v", name, path, k, d, describe(want), describe(got), CancelBurnMaxDelay)
		}
	}
	fmt.Fprintf(table, "| %s | %s | %s | %s | %s | %s | %d / %d | %s |\n", name, path, k,
		describe(episodes(cond)), describe(want), describe(got), s.False, s.Missed, delayList(delays))
}

// pageDelays is, for every true page (an episode of want, the held
// condition), how long after the start of the condition episode it holds
// in the first of got's episodes that detects it (as score counts one)
// fired; negative when the daemon fired before the condition began.
func pageDelays(cond []bool, want, got []Episode) []time.Duration {
	var out []time.Duration
	for _, w := range want {
		begin := w.From
		for i := int(w.From / Interval); i > 0 && cond[i-1]; i-- {
			begin = time.Duration(i-1) * Interval
		}
		for _, g := range got {
			if g.From < w.To+DetectGrace && g.To > w.From {
				out = append(out, g.From-begin)
				break
			}
		}
	}
	return out
}

// delayList writes delays as minutes and seconds, "–" for none.
func delayList(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = short(d)
	}
	return strings.Join(parts, ", ")
}

// TestCancelBurnIsWhatItSays checks the cancel-burn scenario's claim:
// over its hour of overloads, once the 30m window lies inside it, the
// finished requests' true burn rate over 30m is between 8 and 11 (the
// `abandoned: excluded` population), and healthy before the hour.
func TestCancelBurnIsWhatItSays(t *testing.T) {
	t.Parallel()
	sc := cancelBurn("excluded", "30d")
	run, err := playShared(sc)
	if err != nil {
		t.Fatal(err)
	}
	l := newTrueLedger(run.Requests, daemon.PipelineSpec(run.Config).SLOs[0])
	first := simEpoch().Add(sc.Lead)
	lo, hi := math.Inf(1), math.Inf(-1)
	for m := 50; m <= 80; m++ {
		now := first.Add(time.Duration(m) * time.Minute)
		b, _, ok := l.burn(now.Add(-30*time.Minute), now)
		if !ok {
			t.Fatalf("no request over the 30m before minute %d", m)
		}
		lo, hi = min(lo, b), max(hi, b)
	}
	if lo < 8 || hi > 11 {
		t.Errorf("the hour's true 30m burn rate ranges %.2f to %.2f, want within 8 to 11", lo, hi)
	}
	if b, _, _ := l.burn(first, first.Add(20*time.Minute)); b >= 1 {
		t.Errorf("the first 20 minutes burn at %.2f, want healthy (under 1)", b)
	}
	t.Logf("true 30m burn over the hour: %.2f to %.2f", lo, hi)
}
