package alertquality

import (
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// evidenceScenarios are the scenarios whose observed burn rate the rules
// must compute as the daemon does: the population policies (abandoned
// streams under both policies, rejected requests under both), the joint-only
// breach, and a restart, whose counters start again from zero.
var evidenceScenarios = regexp.MustCompile(`^(cancel15-(bad|excluded)-1d|joint-only-(bad|excluded)|admission-(bad|excluded)|restart|fast-burn)$`)

// TestRulesEvidenceIsTheDaemons replays scenarios through the generated
// rules in Prometheus and checks, at every evaluation where the daemon's
// burn check is known and for both windows of every alert, that the rules'
// observed burn rate (model_name:vllm_slo_burn_rate_observed:ratio_rate<w>)
// is the daemon's slo.Evidence.Observed: the same formula over the same counter
// changes, so equal but for floating-point rounding (1e-9 relative). The
// page's evidence is the larger of it and the lower bound on both paths, so
// this is what makes the two paths page at the same steps. The rules are
// the flat ones over the staged harness (StartPrometheusWith), as the
// other replays: the hierarchy's windowed series, this one among them,
// equal the flat rules' at every evaluation (TestHierarchyEqualsFlat), and
// inlined whole the hierarchy re-evaluates every stored stage at each read.
func TestRulesEvidenceIsTheDaemons(t *testing.T) {
	t.Parallel()
	if testing.Short() || !installed("prometheus", "promtool") {
		t.Skip("needs Debian's prometheus and promtool, and not -short")
	}
	var runs []*Run
	for _, sc := range Library() {
		if !evidenceScenarios.MatchString(sc.Name) {
			continue
		}
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	rfs := inlinedRulesOf(t, runs)
	prom, rfs, err := StartPrometheusWith(t.TempDir(), runs, rfs)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Stop()
	for i, run := range runs {
		rf := rfs[i]
		shift := time.Duration(i) * runSpacing
		for _, k := range run.Keys {
			for wi, w := range []time.Duration{k.Long, k.Short} {
				got := rulesObserved(t, prom, rf, run, shift, w)
				// A window of the long group describes the scrape its lag
				// before (described).
				lag := windowLag(rf, w)
				compared, unserved, late := 0, 0.0, 0
				for j, sc := range run.Scrapes {
					d := described(run, j, lag)
					if d < 0 {
						continue
					}
					if rulesStartLate(run, d, w) {
						late++
						continue
					}
					c := run.Checks[k][d]
					if !c.Known {
						continue
					}
					ev := c.LongEvidence
					if wi == 1 {
						ev = c.ShortEvidence
					}
					r, ok := got[sc.At.Add(shift).Unix()]
					if !ok {
						t.Errorf("%s %s at %v: the daemon observes %v, the rules record nothing", run.Scenario.Name, model.Duration(w), sc.Offset, ev.Observed)
						continue
					}
					compared++
					unserved += ev.Unserved
					if math.Abs(r-ev.Observed) > 1e-9*math.Max(1, math.Abs(ev.Observed)) {
						t.Errorf("%s %s at %v: observed burn rate %v in the daemon, %v in the rules", run.Scenario.Name, model.Duration(w), sc.Offset, ev.Observed, r)
					}
				}
				if compared+late == 0 {
					t.Errorf("%s %s: no evaluation compared", run.Scenario.Name, model.Duration(w))
				}
				t.Logf("%s %s %s: %d evaluations compared (mean unserved %.1f), %d left out (rulesStartLate)", run.Scenario.Name, k, model.Duration(w), compared, unserved/math.Max(1, float64(compared)), late)
			}
		}
	}
}

// rulesObserved queries the rules' observed burn rate over window w at
// every scrape step of a run, keyed by Unix second.
func rulesObserved(t *testing.T, prom *Prometheus, rf *rules.RuleFile, run *Run, shift, w time.Duration) map[int64]float64 {
	t.Helper()
	expr, err := Inline(rf, fmt.Sprintf("model_name:vllm_slo_burn_rate_observed:ratio_rate%s{slo=%q}", model.Duration(w), run.Config.SLOs[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := prom.values(expr, run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift))
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// rulesStartLate reports whether the rules' window over w read at run's
// evaluation j lacks the run's first scrape interval, which the daemon's
// holds: the window reaches back to the run's first evaluation, and the
// run's first two scrapes were both taken in the interval after it (the
// first late, the second early). The rules' per-interval ledger records a
// counter's change from its sample an interval before each evaluation,
// and the second scrape's evaluation has none, so the change from the
// first sample to the second is in no interval: the rules' windows begin
// at the second sample, the daemon's at the first (docs/alert-quality.md).
func rulesStartLate(run *Run, j int, w time.Duration) bool {
	s := run.Scrapes
	if len(s) < 2 || !s[0].Taken.After(s[0].At) || s[1].Taken.After(s[1].At) {
		return false
	}
	return !s[j].At.Add(-w).After(s[0].At)
}
