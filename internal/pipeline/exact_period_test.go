package pipeline

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// tracing says, for a request that finished d after the start, whether its
// span reaches the exporter in TestExactPeriodTracingOnAndOff: tracing on
// for the first 20 minutes, off for 10, sampled (one span in ten lost) for
// 10, on again after 40 minutes.
func tracing(d time.Duration, n int) bool {
	switch {
	case d < 20*time.Minute || d >= 40*time.Minute:
		return true
	case d < 30*time.Minute:
		return false
	}
	return n%10 != 0
}

// periodRun is the day of TestExactPeriodTracingOnAndOff, compressed to an
// hour: the simulator, the exporter (replaced at its restart) and its
// current trace store, and which requests' spans were sent.
type periodRun struct {
	sim       *sim.Sim
	p         *Pipeline
	store     *traces.Store
	clock     time.Time
	sent      int
	intervals map[time.Time]scrapeInterval
	spec      Spec
}

func (r *periodRun) newStore() {
	r.store = traces.NewStore(traces.Limits{Retain: 2 * time.Hour, MaxRecords: 1 << 20, MaxModels: 10, MaxAdapters: 10,
		Now: func() time.Time { return r.clock }})
	r.spec.Traces = r.store
}

// restart replaces the exporter by one restored from its state file, with
// an empty trace store (the spans in memory are lost).
func (r *periodRun) restart(t *testing.T) {
	t.Helper()
	data, err := r.p.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	r.newStore()
	r.p = New(r.spec)
	if n, err := r.p.UnmarshalState(data); err != nil || n != 1 {
		t.Fatalf("restore: %d targets, %v", n, err)
	}
}

// TestExactPeriodTracingOnAndOff serves the admission preset (overload
// against vLLM's queue cap: requests turned away at admission, clients that
// cancel streams and leave the queue) for an hour, with tracing on, off,
// sampled and on again, and the exporter restarted from its state file in
// the last stretch, losing the spans it held. At every minute:
//
//   - the error budget, the burn rate of every alert window and "all" of
//     every window hold the truth with no tolerance, under abandoned and
//     rejected bad (an SLO period longer than the run) and excluded (a
//     ten-minute period);
//   - under excluded, every one of them whose span lies in intervals the
//     spans covered is exact: equal to the truth;
//   - the budget's traces coverage is exactly the covered intervals'
//     finished requests over the period's;
//   - the good-request total grows, in each covered interval, by exactly the
//     interval's good requests;
//   - per objective (TTFT and TPOT alone), every window's good requests,
//     every window's TPOT attainment, the TPOT bad share of every alert
//     window's evidence and the good-request totals hold the truth with no
//     tolerance wherever the spans covered an interval of the window (the
//     histograms' own TTFT bound elsewhere is a known one too high per
//     cancelled stream), exact over covered intervals under either policy
//     (the objectives count finished requests only). TTFT's attainment is
//     over first tokens, which no span describes, and is not checked here.
func TestExactPeriodTracingOnAndOff(t *testing.T) {
	cfg, err := sim.Preset("admission", 11, start)
	if err != nil {
		t.Fatal(err)
	}
	bad := periodSLO
	bad.Name, bad.Period = "bad", 2*time.Hour
	excl := periodSLO
	excl.Name, excl.Period, excl.Abandoned, excl.Rejected = "excl", 10*time.Minute, slo.AbandonedExcluded, slo.RejectedExcluded
	run := &periodRun{intervals: map[time.Time]scrapeInterval{}}
	cfg.OnDone = func(req sim.Request) {
		if !req.Finished() {
			return
		}
		run.sent++
		delivered := tracing(req.Finish.Sub(start), run.sent)
		if delivered {
			run.store.Add([]traces.Span{spanOf(req)})
		}
		run.finished(req, delivered)
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run.sim = s
	run.spec = testSpec(t)
	run.spec.SLOs, run.spec.Windows = []slo.SLO{bad, excl}, []time.Duration{time.Minute, 5 * time.Minute}
	run.spec.Alerts = []BurnAlert{{SLO: "bad", Severity: "page", Long: 10 * time.Minute, Short: 2 * time.Minute, Factor: 5, For: time.Minute},
		{SLO: "excl", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 5, For: time.Minute}}
	run.newStore()
	run.p = New(run.spec)
	restartAt := start.Add(47*time.Minute + 7*time.Second)
	covered := 0.0
	var c checks
	for at := start.Add(scrapeStep); !at.After(start.Add(time.Hour)); at = at.Add(scrapeStep) {
		if at.After(restartAt) && !at.Add(-scrapeStep).After(restartAt) {
			run.clock = restartAt
			run.sim.AdvanceTo(restartAt) // the spans of these seconds went to the old store
			run.restart(t)
		}
		run.clock = at
		scrapeInto(t, run.p, run.sim, at)
		rep := run.p.Evaluate(at)
		si := run.interval(at)
		if si.covered {
			covered += float64(si.finished)
		}
		c.goodTotal(t, rep, si)
		if at.Sub(start) < 3*time.Minute || at.Sub(start)%time.Minute != 0 {
			continue
		}
		truth := run.sim.Truth()
		m := rep.Targets[0].Models[0]
		for _, wr := range m.Windows {
			w := interval{run, truth, wr.Window.Start, wr.Window.End}
			for _, r := range wr.SLOs {
				def := run.spec.SLOs[indexOf(run.spec.SLOs, r.Name)]
				all, ok := r.Objectives[slo.AllKey]
				if !ok {
					t.Errorf("at %v window %v SLO %s: no \"all\"", at.Sub(start), wr.Window.Nominal, r.Name)
				}
				c.bound(t, fmt.Sprintf("at %v window %v SLO %s", at.Sub(start), wr.Window.Nominal, r.Name), all, w.attainment(def), w, def)
				c.objectives(t, fmt.Sprintf("at %v window %v SLO %s", at.Sub(start), wr.Window.Nominal, r.Name), r, def, w)
			}
		}
		for _, b := range m.Budgets {
			def := run.spec.SLOs[indexOf(run.spec.SLOs, b.SLO)]
			w := interval{run, truth, b.End.Add(-b.Covered), b.End}
			c.bound(t, fmt.Sprintf("at %v budget %s", at.Sub(start), b.SLO), b.Remaining, slo.ErrorBudgetRemaining(slo.Exact(w.attainment(def)), def.Goal).Estimate, w, def)
			if def.Name == bad.Name {
				n, _ := w.coveredFinished()
				want := n / float64(len(simtruth.FinishedIn(truth, w.from, w.to)))
				if !b.HasTracesCoverage || b.TracesCoverage != want {
					t.Errorf("at %v: traces coverage %v (present %v), want %v", at.Sub(start), b.TracesCoverage, b.HasTracesCoverage, want)
				}
			}
		}
		for _, bc := range m.Burns {
			def := run.spec.SLOs[indexOf(run.spec.SLOs, bc.Alert.SLO)]
			for _, side := range []struct {
				length time.Duration
				burn   slo.Bounded
			}{{bc.Alert.Long, bc.Long}, {bc.Alert.Short, bc.Short}} {
				w := interval{run, truth, maxTime(at.Add(-side.length), start.Add(scrapeStep)), at}
				want, _ := slo.BurnRate(slo.Exact(w.attainment(def)), def.Goal)
				c.bound(t, fmt.Sprintf("at %v burn %s %v", at.Sub(start), def.Name, side.length), side.burn, want.Estimate, w, def)
			}
			for _, side := range []struct {
				length time.Duration
				ev     slo.Evidence
			}{{bc.Alert.Long, bc.LongEvidence}, {bc.Alert.Short, bc.ShortEvidence}} {
				w := interval{run, truth, maxTime(at.Add(-side.length), start.Add(scrapeStep)), at}
				c.badShare(t, fmt.Sprintf("at %v evidence %s %v", at.Sub(start), def.Name, side.length), side.ev, w)
			}
		}
	}
	t.Logf("%d bounds checked, %d of them exact (the truth, bit for bit), %d good-total steps exact; %.0f finished requests in covered intervals",
		c.checked, c.exact, c.totals, covered)
	t.Logf("per objective: %d bounds checked, %d of them exact; %d good-total steps exact", c.objChecked, c.objExact, c.objTotals)
	if c.exact == 0 || c.checked == c.exact || c.totals == 0 || c.objExact == 0 || c.objChecked == c.objExact || c.objTotals == 0 {
		t.Fatalf("%d checked, %d exact, %d exact good-total steps; per objective %d, %d, %d: the run shows nothing",
			c.checked, c.exact, c.totals, c.objChecked, c.objExact, c.objTotals)
	}
}

// interval is a span of the run, (from, to], with the truth.
type interval struct {
	run      *periodRun
	truth    sim.Truth
	from, to time.Time
}

// scrapeInterval is what the truth says of one scrape interval: its
// finished requests, the good ones among them, and whether every one's
// span reached the store the exporter read at the interval's end.
type scrapeInterval struct {
	finished, good int
	// goodTTFT and goodTPOT count the finished requests meeting each
	// objective of periodSLO alone.
	goodTTFT, goodTPOT int
	covered            bool
}

// finished notes a request as it finishes (the simulator reports it while
// it advances to the next scrape) in the scrape interval (from, to] it
// finished in.
func (r *periodRun) finished(req sim.Request, delivered bool) {
	to := start.Add((req.Finish.Sub(start) + scrapeStep - 1).Truncate(scrapeStep))
	si := r.interval(to)
	si.finished++
	if meetsAll(req, periodSLO) {
		si.good++
	}
	if meetsObjective(req, periodSLO.Objectives[0]) {
		si.goodTTFT++
	}
	if meetsObjective(req, periodSLO.Objectives[1]) {
		si.goodTPOT++
	}
	si.covered = si.covered && delivered
	r.intervals[to] = si
}

// interval is what is known of the scrape interval ending at to: covered
// until a request without its span finished in it, never the one the
// restart cut (its spans went to the store that was lost).
func (r *periodRun) interval(to time.Time) scrapeInterval {
	si, seen := r.intervals[to]
	if !seen {
		restartAt := start.Add(47*time.Minute + 7*time.Second)
		si.covered = !(to.Add(-scrapeStep).Before(restartAt) && to.After(restartAt))
	}
	return si
}

// coveredFinished counts the finished requests of the scrape intervals of
// (from, to] that the spans covered, and reports whether they covered all.
func (iv interval) coveredFinished() (n float64, all bool) {
	all = true
	for at := iv.from.Add(scrapeStep); !at.After(iv.to); at = at.Add(scrapeStep) {
		si := iv.run.interval(at)
		if si.covered {
			n += float64(si.finished)
		}
		all = all && si.covered
	}
	return n, all
}

// good counts the requests of the interval meeting the SLO's objectives.
func (iv interval) good() int {
	n := 0
	for _, r := range simtruth.FinishedIn(iv.truth, iv.from, iv.to) {
		if meetsAll(r, periodSLO) {
			n++
		}
	}
	return n
}

// attainment is the truth of "all" over the interval under def's
// populations.
func (iv interval) attainment(def slo.SLO) float64 {
	pop := float64(len(simtruth.FinishedIn(iv.truth, iv.from, iv.to)))
	if def.Abandoned == slo.AbandonedBad {
		pop += float64(len(simtruth.AbandonedIn(iv.truth, iv.from, iv.to)) + len(simtruth.LostIn(iv.truth, iv.from, iv.to)))
	}
	if def.Rejected == slo.RejectedBad {
		pop += float64(len(simtruth.RejectedIn(iv.truth, iv.from, iv.to)))
	}
	return float64(iv.good()) / pop
}

// periodSLO is the interactive SLO with its thresholds between the
// buckets' edges (TTFT 0.5 and 0.75 s, TPOT 0.05 and 0.075 s), so that the
// histograms only bracket each objective's good requests and the spans'
// counts have something to make exact.
var periodSLO = slo.SLO{
	Name: "period", Goal: 0.99, Period: 24 * time.Hour,
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.6}, {Metric: slo.TPOT, Threshold: 0.06}},
}

// meetsAll reports whether a request meets every objective of s.
func meetsAll(r sim.Request, s slo.SLO) bool {
	for _, o := range s.Objectives {
		if !meetsObjective(r, o) {
			return false
		}
	}
	return true
}

// meetsObjective reports whether a request meets one objective alone, as
// meetsInteractive judges it.
func meetsObjective(r sim.Request, o slo.Objective) bool {
	v, ok := r.Value(string(o.Metric))
	return ok && v <= o.Threshold+1e-9
}

// goodOf counts the interval's finished requests meeting one objective.
func (iv interval) goodOf(o slo.Objective) int {
	n := 0
	for _, r := range simtruth.FinishedIn(iv.truth, iv.from, iv.to) {
		if meetsObjective(r, o) {
			n++
		}
	}
	return n
}

// checks counts what TestExactPeriodTracingOnAndOff checked.
type checks struct {
	checked, exact, totals int
	objChecked, objExact   int
	objTotals              int
	prevTotal              float64
	prevObjective          map[string]float64
	hasPrev                bool
}

// objectives checks r's good requests of each objective of def, and its
// TPOT attainment, against the truth of w with no tolerance, and that
// they are exact when the spans covered every interval of w.
func (c *checks) objectives(t *testing.T, where string, r slo.SLOResult, def slo.SLO, w interval) {
	t.Helper()
	n := float64(len(simtruth.FinishedIn(w.truth, w.from, w.to)))
	for _, o := range def.Objectives {
		key := string(o.Metric)
		good := float64(w.goodOf(o))
		g, ok := r.GoodRequests[key]
		if !ok {
			t.Errorf("%s: no good requests of %s", where, key)
			continue
		}
		if covered, _ := w.coveredFinished(); o.Metric == slo.TTFT && covered == 0 {
			// Not touched by the spans: the histograms' TTFT bound, carried
			// from first tokens onto finishers, can be one too high per
			// stream cancelled after its first token (slo's evaluateSLO).
			continue
		}
		c.objective(t, where+" good "+key, g, good, w)
		if o.Metric == slo.TPOT {
			c.objective(t, where+" attainment "+key, r.Objectives[key], good/n, w)
		}
	}
}

// objective checks one per-objective bound; exact when every interval of
// w was covered, under either policy.
func (c *checks) objective(t *testing.T, where string, b slo.Bounded, want float64, w interval) {
	t.Helper()
	c.objChecked++
	if want < b.Lower || want > b.Upper {
		t.Errorf("%s: %+v, truth %v", where, b, want)
	}
	if _, all := w.coveredFinished(); all && !b.IsExact() {
		t.Errorf("%s: %+v over covered intervals, want exactly %v", where, b, want)
	} else if all {
		c.objExact++
	}
}

// badShare checks that the TPOT bad share of an alert window's evidence
// is at least the truth's (it is 1 − the attainment's lower bound), and is
// the truth when every interval was covered.
func (c *checks) badShare(t *testing.T, where string, ev slo.Evidence, w interval) {
	t.Helper()
	tpot := periodSLO.Objectives[1]
	share, ok := ev.BadShares[string(tpot.Metric)]
	if !ok {
		t.Errorf("%s: no TPOT bad share", where)
		return
	}
	n := float64(len(simtruth.FinishedIn(w.truth, w.from, w.to)))
	want := 1 - math.Min(1, math.Max(0, float64(w.goodOf(tpot))/n))
	c.objective(t, where+" TPOT bad share", slo.Bounded{Lower: want, Estimate: share, Upper: share}, want, w)
	if _, all := w.coveredFinished(); all && share != want {
		t.Errorf("%s: TPOT bad share %v over covered intervals, want exactly %v", where, share, want)
	}
}

// bound checks that b holds want with no tolerance, and that it is exact
// (b.Lower = b.Upper = want) when every interval of w was covered and def
// counts the finished requests alone.
func (c *checks) bound(t *testing.T, where string, b slo.Bounded, want float64, w interval, def slo.SLO) {
	t.Helper()
	c.checked++
	if want < b.Lower || want > b.Upper {
		t.Errorf("%s: %+v, truth %v", where, b, want)
	}
	if _, all := w.coveredFinished(); def.Abandoned != slo.AbandonedExcluded || !all {
		return
	}
	if !b.IsExact() {
		t.Errorf("%s: %+v over covered intervals, want exactly %v", where, b, want)
		return
	}
	c.exact++
}

// goodTotal checks that the "excl" good-request total grew by exactly the
// interval's good requests when the spans covered it.
func (c *checks) goodTotal(t *testing.T, rep *Report, si scrapeInterval) {
	t.Helper()
	total := 0.0
	for _, g := range rep.Targets[0].Models[0].GoodRequests {
		if g.SLO == "excl" && g.Objective == slo.AllKey {
			total = g.Value
		}
	}
	if si.covered && c.hasPrev {
		if got := total - c.prevTotal; got != float64(si.good) {
			t.Errorf("at %v: good total grew by %v over a covered interval, truth %v", rep.Time.Sub(start), got, si.good)
		} else {
			c.totals++
		}
	}
	c.prevTotal, c.hasPrev = total, true
	c.objectiveTotals(t, rep, si)
}

// objectiveTotals checks that the "excl" per-objective good-request totals
// grew by exactly the interval's requests meeting each objective when the
// spans covered it.
func (c *checks) objectiveTotals(t *testing.T, rep *Report, si scrapeInterval) {
	t.Helper()
	totals := map[string]float64{}
	for _, g := range rep.Targets[0].Models[0].GoodRequests {
		if g.SLO == "excl" && g.Objective != slo.AllKey {
			totals[g.Objective] = g.Value
		}
	}
	want := map[string]int{string(slo.TTFT): si.goodTTFT, string(slo.TPOT): si.goodTPOT}
	if si.covered && c.prevObjective != nil {
		for key, n := range want {
			if got := totals[key] - c.prevObjective[key]; got != float64(n) {
				t.Errorf("at %v: %s good total grew by %v over a covered interval, truth %v", rep.Time.Sub(start), key, got, n)
			} else {
				c.objTotals++
			}
		}
	}
	c.prevObjective = totals
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
