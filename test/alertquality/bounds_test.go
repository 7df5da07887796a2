package alertquality

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestRulesBoundsHoldDaemonAndTruth replays the fast library through the
// generated rules in Prometheus and checks, at every scrape and for every
// window of the alert policy, that the rules' bounds on the joint
// attainment ("all", abandoned requests counted bad) hold the true
// attainment of the window's requests and meet the daemon's bounds (both
// hold the same truth, so the two brackets overlap). Neither contains the
// other in general: the daemon matches first tokens to finishes across
// intervals per model, the rules bound each server's finishers on their
// own before summing (rules.finisherRules), so each is at times the
// tighter one; the test counts the scrapes where the rules are.
// Scenarios whose exporter clock steps are left out: their scrape times
// are not the simulator's; so are those with a configuration of their own
// (the policy variants), which the default scenarios' rules do not judge.
func TestRulesBoundsHoldDaemonAndTruth(t *testing.T) {
	t.Parallel()
	if testing.Short() || !installed("prometheus", "promtool") {
		t.Skip("needs Debian's prometheus and promtool, and not -short")
	}
	var runs []*Run
	for _, sc := range Library() {
		if sc.Full || sc.StepBy != 0 || sc.Config != "" {
			continue
		}
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	rf, err := InlinedRules(runs[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	prom, rfs, err := StartPrometheusWith(t.TempDir(), runs, repeat(rf, len(runs)))
	if err != nil {
		t.Fatal(err)
	}
	rf = rfs[0]
	defer prom.Stop()
	goal := runs[0].Config.SLOs[0].Goal
	for i, run := range runs {
		shift := time.Duration(i) * runSpacing
		index := newTruthIndex(run)
		for _, k := range run.Keys {
			for wi, w := range []time.Duration{k.Long, k.Short} {
				lo, hi := rulesAttainment(t, prom, rf, run, shift, w)
				var checked, daemonChecked, tighter int
				var rulesWidth, daemonWidth float64
				for j, sc := range run.Scrapes {
					l, okL := lo[sc.At.Add(shift).Unix()]
					h, okH := hi[sc.At.Add(shift).Unix()]
					if !okL || !okH {
						continue
					}
					if truth, ok := index.attainment(j, w); ok {
						checked++
						if truth < l || truth > h {
							t.Errorf("%s %s at %v: true attainment %v outside the rules' [%v, %v]", run.Scenario.Name, model.Duration(w), sc.Offset, truth, l, h)
						}
					}
					c := run.Checks[k][j]
					if !c.Known {
						continue
					}
					daemonChecked++
					b := c.Long
					if wi == 1 {
						b = c.Short
					}
					daemonLo, daemonHi := 1-b.Upper*(1-goal), 1-b.Lower*(1-goal)
					rulesWidth += h - l
					daemonWidth += daemonHi - daemonLo
					// 1e-9: the daemon's bounds come back from its burn
					// rates, (1 - a) / (1 - goal), through float rounding.
					if max(l, daemonLo) > min(h, daemonHi)+1e-9 {
						t.Errorf("%s %s at %v: the daemon's [%v, %v] and the rules' [%v, %v] do not overlap", run.Scenario.Name, model.Duration(w), sc.Offset, daemonLo, daemonHi, l, h)
					}
					if l > daemonLo+1e-9 || h < daemonHi-1e-9 {
						tighter++
					}
				}
				if daemonChecked > 0 {
					t.Logf("%s %s: truth checked at %d scrapes, daemon at %d (the rules tighter on a side at %d); mean width rules %.4f, daemon %.4f",
						run.Scenario.Name, model.Duration(w), checked, daemonChecked, tighter, rulesWidth/float64(daemonChecked), daemonWidth/float64(daemonChecked))
				}
			}
		}
		streamingHoldsTruth(t, prom, rf, run, shift)
	}
}

// streamingHoldsTruth checks, at every scrape of a run, that the rules'
// bound on the requests past their first token in flight
// (model_name:vllm_slo_streaming_requests_upper:sum) holds the true number
// at the latest scrape that succeeded by the evaluation (the samples it
// reads), and that it
// is there at most scrapes. The windows' abandoned and joint
// bounds take it at their edges.
func streamingHoldsTruth(t *testing.T, prom *Prometheus, rf *rules.RuleFile, run *Run, shift time.Duration) {
	t.Helper()
	expr, err := Inline(rf, "model_name:vllm_slo_streaming_requests_upper:sum")
	if err != nil {
		t.Fatal(err)
	}
	bound, err := prom.values(expr, run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift))
	if err != nil {
		t.Fatal(err)
	}
	checked, exact := 0, 0
	evals, taken := run.realTimes()
	var seen time.Time // the latest scrape that succeeded by the evaluation, whose samples the rules read
	next := 0
	for j, sc := range run.Scrapes {
		for ; next < len(taken) && !taken[next].After(evals[j]); next++ {
			if run.Scrapes[next].Body != nil {
				seen = taken[next]
			}
		}
		b, ok := bound[sc.At.Add(shift).Unix()]
		if !ok || seen.IsZero() {
			continue
		}
		truth := 0
		for _, r := range run.Requests {
			if !r.FirstToken.IsZero() && !r.FirstToken.After(seen) && (r.Finish.IsZero() || r.Finish.After(seen)) {
				truth++
			}
		}
		checked++
		if float64(truth) > b {
			t.Errorf("%s at %v: %d requests past their first token in flight, above the rules' bound %v", run.Scenario.Name, sc.Offset, truth, b)
		}
		if float64(truth) == b {
			exact++
		}
	}
	if checked < len(run.Scrapes)/2 {
		t.Errorf("%s: the bound on the requests past their first token at %d of %d scrapes", run.Scenario.Name, checked, len(run.Scrapes))
	}
	t.Logf("%s: requests past their first token in flight within the bound at %d scrapes (equal at %d)", run.Scenario.Name, checked, exact)
}

// truthIndex is what the true attainment of a window reads of a run,
// computed once per run: its SLO, the evaluation and scrape times, and its
// requests sorted by the time they ended, so that each window's requests
// are a slice of them rather than a scan of all (the scans were most of
// the harness's own CPU).
type truthIndex struct {
	spec         slo.SLO
	evals, taken []time.Time
	byEnd        sim.Truth
	abandonedBad bool // the SLO counts abandoned requests bad
}

// newTruthIndex indexes run for attainment.
func newTruthIndex(run *Run) *truthIndex {
	evals, taken := run.realTimes()
	byEnd := slices.SortedStableFunc(slices.Values(run.Requests), func(a, b sim.Request) int { return a.Finish.Compare(b.Finish) })
	return &truthIndex{spec: daemon.PipelineSpec(run.Config).SLOs[0], evals: evals, taken: taken, byEnd: byEnd,
		abandonedBad: run.Config.SLOs[0].AbandonedPopulation() == slo.AbandonedBad}
}

// endedIn is the requests that ended in (from, to] (a request that has not
// ended has a zero Finish, before every from).
func (x *truthIndex) endedIn(from, to time.Time) sim.Truth {
	lo := sort.Search(len(x.byEnd), func(i int) bool { return x.byEnd[i].Finish.After(from) })
	hi := sort.Search(len(x.byEnd), func(i int) bool { return x.byEnd[i].Finish.After(to) })
	return x.byEnd[lo:hi]
}

// attainment is, for the window of length w read at the run's evaluation
// j, the share of the requests that ended between the scrapes it reads
// (scrapeEdge; finished, or abandoned after their first token, which count
// as bad) that finished meeting every objective.
func (x *truthIndex) attainment(j int, w time.Duration) (float64, bool) {
	if x.evals[j].Add(-w).Before(x.taken[0]) {
		return 0, false // the window reaches before the first scrape
	}
	from, to := scrapeEdge(x.taken, x.evals[j].Add(-w)), scrapeEdge(x.taken, x.evals[j])
	// One pass over the window's requests, with simtruth's filters'
	// predicates (FinishedIn, AbandonedIn, LostIn): building their lists
	// for every evaluation and window was most of this test's own CPU.
	finished, abandoned, good := 0, 0, 0
	for _, r := range x.endedIn(from, to) {
		if r.Finished() {
			finished++
			if meetsAll(r, x.spec) {
				good++
			}
		}
		if r.Abandoned() {
			abandoned++
		}
		if r.Aborted && !r.FirstToken.IsZero() {
			abandoned++ // lost in a restart after its first token: left unfinished
		}
	}
	n := finished + abandoned
	if n == 0 || !x.abandonedBad {
		return 0, false
	}
	return float64(good) / float64(n), true
}

// rulesAttainment queries the rules' joint attainment bounds over window w
// at every scrape step of a run, keyed by Unix second.
func rulesAttainment(t *testing.T, prom *Prometheus, rf *rules.RuleFile, run *Run, shift, w time.Duration) (lo, hi map[int64]float64) {
	t.Helper()
	q := func(name string) map[int64]float64 {
		expr, err := Inline(rf, fmt.Sprintf("%s%s{objective=\"all\"}", name, model.Duration(w)))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := prom.values(expr, run.Scrapes[0].At.Add(shift), run.Scrapes[len(run.Scrapes)-1].At.Add(shift))
		if err != nil {
			t.Fatal(err)
		}
		return vals
	}
	return q("model_name:vllm_slo_attainment_lower:ratio_rate"), q("model_name:vllm_slo_attainment_upper:ratio_rate")
}

// values runs a range query that returns at most one series and gives its
// values by Unix second.
func (p *Prometheus) values(expr string, start, end time.Time) (map[int64]float64, error) {
	series, err := p.seriesValues(expr, start, end)
	if err != nil {
		return nil, err
	}
	if len(series) > 1 {
		return nil, fmt.Errorf("query_range: %d series, want at most 1", len(series))
	}
	for _, vals := range series {
		return vals, nil
	}
	return map[int64]float64{}, nil
}

// seriesValues runs a range query and gives each series' values by Unix
// second, keyed by the series' labels (labelText).
func (p *Prometheus) seriesValues(expr string, start, end time.Time) (map[string]map[int64]float64, error) {
	qr, err := p.queryRange(expr, start, end)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int64]float64{}
	for _, r := range qr.Data.Result {
		vals := map[int64]float64{}
		for _, v := range r.Values {
			ts, ok := v[0].(float64)
			s, ok2 := v[1].(string)
			if !ok || !ok2 {
				return nil, fmt.Errorf("query_range: sample %v", v)
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("query_range: value %q: %w", s, err)
			}
			vals[int64(math.Round(ts))] = f
		}
		out[labelText(r.Metric)] = vals
	}
	return out, nil
}
