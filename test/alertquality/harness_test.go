package alertquality

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var (
	full     = flag.Bool("full", false, "run every scenario of the library, the slow ones too")
	scenario = flag.String("scenario", "", "run only the scenarios whose name matches this regular expression")
)

// selected is the library as the flags choose it: without -full the fast
// scenarios only, with -scenario those whose name matches.
func selected(t *testing.T) []Scenario {
	t.Helper()
	re, err := regexp.Compile(*scenario)
	if err != nil {
		t.Fatalf("-scenario: %v", err)
	}
	var out []Scenario
	for _, sc := range Library() {
		if (sc.Full && !*full) || !re.MatchString(sc.Name) {
			continue
		}
		out = append(out, sc)
	}
	return out
}

// TestAlertQuality plays the library (the fast subset unless -full; those
// matching -scenario when given) through
// the daemon's pipeline and, unless -short or without Debian's prometheus
// and promtool, replays the same scrapes through the generated rules in
// Prometheus. For every alert of both paths it checks the targets: no false
// page, no missed page, firing within DetectGrace of the truth and resolving
// within ResolveGrace of its end. With -v it prints the table of
// docs/alert-quality.md and the candidate policies the daemon's was chosen
// against.
func TestAlertQuality(t *testing.T) {
	t.Parallel()
	var runs []*Run
	for _, sc := range selected(t) {
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	withRules := !testing.Short() && installed("prometheus", "promtool")
	if withRules {
		rulesShared(t, runs)
	} else {
		t.Log("generated rules not evaluated: -short, or prometheus/promtool not installed")
	}
	var table, policies strings.Builder
	totals := map[string]*Score{}
	table.WriteString("| scenario | what happens | alert | truth fires | daemon fires | rules fire | false / missed | delay / resolve |\n|---|---|---|---|---|---|---|---|\n")
	for _, run := range runs {
		for _, k := range run.Keys {
			want := run.Truth[k]
			ds := check(t, run, k, "daemon", run.Daemon[k])
			rs, rulesCell := Score{}, "not run"
			if withRules {
				rs = check(t, run, k, "rules", run.Rules[k])
				rulesCell = describe(run.Rules[k])
				sameLabels(t, run, k)
			}
			if len(want) > 0 || len(run.Daemon[k]) > 0 || len(run.Rules[k]) > 0 {
				fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s | %d / %d, %d / %d | %s; %s |\n",
					run.Scenario.Name, run.Scenario.What, k, describe(want), describe(run.Daemon[k]), rulesCell,
					ds.False, ds.Missed, rs.False, rs.Missed, delays(ds), delays(rs))
			}
			comparePolicies(&policies, totals, run, k)
		}
		if len(run.TargetDown) > 0 {
			fmt.Fprintf(&table, "| %s | %s | target down | | %s | | | |\n", run.Scenario.Name, run.Scenario.What, describe(run.TargetDown))
		}
	}
	t.Log("\n" + table.String() + "\nCandidate daemon policies (false/missed per alert):\n" + policies.String() +
		"\nCandidate daemon policies over these runs:\n" + policyTotals(totals) +
		"\nThe evidence against the true burn rate:\n" + evidenceError(runs) +
		"\nPages by policy (steps of 15 s):\n" + pageTable(runs, withRules))
}

// check scores one path's episodes of an alert against the truth and fails
// the test when a target is missed.
func check(t *testing.T, run *Run, k Key, path string, got []Episode) Score {
	t.Helper()
	want := run.Truth[k]
	s := score(want, got)
	known := run.Scenario.Known[k.String()]
	if s.False != known.False || s.Missed > 0 {
		t.Errorf("%s %s %s: truth %s, got %s: %d false (%d known), %d missed", run.Scenario.Name, k, path, describe(want), describe(got), s.False, known.False, s.Missed)
	}
	for i := range s.Delays {
		if s.Delays[i] > DetectGrace || s.Resolves[i] > ResolveGrace {
			t.Errorf("%s %s %s: fired %v after the truth, resolved %v after it", run.Scenario.Name, k, path, s.Delays[i], s.Resolves[i])
		}
	}
	return s
}

// sameLabels checks that when both paths fire an alert they fire it with
// the same label sets, so that Alertmanager holds one alert per breach.
func sameLabels(t *testing.T, run *Run, k Key) {
	t.Helper()
	if len(run.Daemon[k]) == 0 || len(run.Rules[k]) == 0 {
		return
	}
	if !maps.Equal(run.DaemonLabels[k], run.RuleLabels[k]) {
		t.Errorf("%s %s: the daemon fires with %v, the rules with %v", run.Scenario.Name, k,
			slices.Sorted(maps.Keys(run.DaemonLabels[k])), slices.Sorted(maps.Keys(run.RuleLabels[k])))
	}
}

// evaluateRules replays every run through the generated rules in Prometheus.
func evaluateRules(t *testing.T, runs []*Run) {
	t.Helper()
	rfs := inlinedRulesOf(t, runs)
	prom, rfs, err := StartPrometheusWith(t.TempDir(), runs, rfs)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	// The runs side by side, as many at once as there are CPUs: Prometheus
	// evaluates a query on one goroutine, so queried one at a time the
	// harness's longest step kept one core busy while the suite's other
	// jobs were done. Each run's results are its own.
	errs := make([]error, len(runs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, run := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = prom.EvaluateRules(rfs[i], run, i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// inlinedRulesOf is each run's InlinedRules, in the runs' order.
func inlinedRulesOf(t *testing.T, runs []*Run) []*rules.RuleFile {
	t.Helper()
	rfs := make([]*rules.RuleFile, len(runs))
	for i, run := range runs {
		rf, err := InlinedRules(run.Config)
		if err != nil {
			t.Fatal(err)
		}
		rfs[i] = rf
	}
	return rfs
}

// repeat is n times the same rule file, one per run.
func repeat(rf *rules.RuleFile, n int) []*rules.RuleFile {
	out := make([]*rules.RuleFile, n)
	for i := range out {
		out[i] = rf
	}
	return out
}

func installed(bins ...string) bool {
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	return true
}

// delays writes the detection and resolve delays of a score.
func delays(s Score) string {
	var parts []string
	for i := range s.Delays {
		parts = append(parts, short(s.Delays[i])+" / "+short(s.Resolves[i]))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// pageTable writes, for the scenarios with a configuration of their own (the
// population policies and periods), the steps at which the truth's page
// condition held, the steps each path paged, the false and missed pages and
// the latest first page after the start of its true condition, beside the
// gate and hold this release replaces replayed on the daemon's checks
// (before: the slow first tokens spread over every first token, and the
// 6h/30m page held 15 minutes, scaled to the period), scored against the
// truth held as long.
func pageTable(runs []*Run, withRules bool) string {
	var b strings.Builder
	b.WriteString("| scenario | policies | period | alert | true page condition | truth paging | daemon paging | rules paging | false / missed (daemon, rules) | latest page after its condition | before: paging, false / missed, latest page after its condition |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range runs {
		if run.Scenario.Config == "" {
			continue
		}
		s := run.Config.SLOs[0]
		for _, k := range run.Keys {
			cond := run.Condition[k]
			ds, rs := score(run.Truth[k], run.Daemon[k]), score(run.Truth[k], run.Rules[k])
			rules, rulesScore := "not run", "–"
			if withRules {
				rules, rulesScore = fmt.Sprint(steps(run.Rules[k])), fmt.Sprintf("%d / %d", rs.False, rs.Missed)
			}
			held := beforeHold(run, k)
			truthBefore, before := episodes(hold(cond, held)), run.ReplayHeld(k, spreadFirstTokens(), held)
			bs := score(truthBefore, before)
			fmt.Fprintf(&b, "| %s | `abandoned: %s`, `rejected: %s` | %s | %s | %d of %d | %d | %d | %s | %d / %d, %s | %s | %d, %d / %d, %s |\n",
				run.Scenario.Name, policyName(s.Abandoned), policyName(s.Rejected), s.Period, k,
				count(cond), len(cond), steps(run.Truth[k]), steps(run.Daemon[k]), rules,
				ds.False, ds.Missed, rulesScore, latest(pageDelays(cond, run.Truth[k], run.Daemon[k])),
				steps(before), bs.False, bs.Missed, latest(pageDelays(cond, truthBefore, before)))
		}
	}
	return b.String()
}

// beforeHold is the hold an alert of run had before the 6h/30m page's fell
// from 15 minutes to one evaluation: 15 minutes scaled to the SLO's period
// for that page (its long window 6h scaled alike), the run's own hold for
// every other alert.
func beforeHold(run *Run, k Key) time.Duration {
	scale := float64(run.Config.SLOs[0].Period) / float64(30*24*time.Hour)
	if k.Severity == "page" && k.Long == max(time.Duration(float64(6*time.Hour)*scale).Round(time.Second), 5*time.Minute) {
		return time.Duration(float64(15*time.Minute) * scale).Round(time.Second)
	}
	return run.For[k]
}

// latest is the largest of delays, "–" for none.
func latest(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	return short(slices.Max(ds))
}

// policyName is a population policy as the configuration spells it, the
// default when unset.
func policyName(p string) string {
	if p == "" {
		return "bad"
	}
	return p
}

// steps counts the evaluations episodes fire at.
func steps(es []Episode) int {
	n := 0
	for _, e := range es {
		n += int((e.To - e.From) / Interval)
	}
	return n
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// TestJointOnlyBreach checks that the joint-only scenarios are what they
// claim: the page's true condition holds for the SLO, while for each of its
// objectives alone (the same requests judged on that objective only) it
// never does; and the daemon pages.
func TestJointOnlyBreach(t *testing.T) {
	t.Parallel()
	for _, sc := range Library() {
		if !strings.HasPrefix(sc.Name, "joint-only") {
			continue
		}
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		sp := daemon.PipelineSpec(run.Config)
		evals, taken := run.realTimes()
		for i, a := range sp.Alerts {
			k := run.Keys[i]
			if count(run.Condition[k]) == 0 || len(run.Daemon[k]) == 0 {
				t.Errorf("%s %s: the joint's true condition holds %d times, the daemon fires %s", sc.Name, k, count(run.Condition[k]), describe(run.Daemon[k]))
			}
			for _, o := range sp.SLOs[0].Objectives {
				alone := sp.SLOs[0]
				alone.Objectives = []slo.Objective{o}
				if n := count(trueCondition(newTrueLedger(run.Requests, alone), a, evals, taken)); n > 0 {
					t.Errorf("%s %s: %s alone meets the page condition at %d evaluations, want none", sc.Name, k, o.Metric, n)
				}
			}
		}
	}
}
