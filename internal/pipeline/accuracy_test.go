package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// accuracyPresets are the simulated scenarios of the accuracy table, by sim
// preset name.
var accuracyPresets = []string{
	"steady", "bursty", "overload", "restart", "outage", "cancel15",
	"two-engines", "bimodal-prompts", "one-engine",
}

// accuracy accumulates, over windows, the width of the bounds and the error of
// the estimate for one quantity, and counts the windows whose truth left the
// bounds.
type accuracy struct {
	n, width, absErr, outside float64
	worst                     float64
}

// add checks one window: truth must lie in [b.Lower, b.Upper] exactly (no
// tolerance); width and error are taken as shares of scale.
func (a *accuracy) add(truth float64, b slo.Bounded, scale float64) bool {
	if !(scale > 0) {
		return true
	}
	a.n++
	w := (b.Upper - b.Lower) / scale
	a.width += w
	a.worst = math.Max(a.worst, w)
	a.absErr += math.Abs(b.Estimate-truth) / scale
	if truth < b.Lower || truth > b.Upper {
		a.outside++
		return false
	}
	return true
}

func (a *accuracy) merge(b accuracy) {
	a.n += b.n
	a.width += b.width
	a.absErr += b.absErr
	a.outside += b.outside
	a.worst = math.Max(a.worst, b.worst)
}

func (a accuracy) String() string {
	if a.n == 0 {
		return fmt.Sprintf("%-22s", "n/a")
	}
	return fmt.Sprintf("%6.4f %6.4f %6.4f", a.width/a.n, a.worst, a.absErr/a.n)
}

// windowTruth is what the simulator says about one window.
type windowTruth struct {
	finished, good, abandoned float64
	tokens, goodTokens        float64
}

// lostGap is the span between the last scrape before a vLLM crash and the
// crash: whatever happened there was counted by a process that died before
// anyone read it, so no scraper can see it.
type lostGap struct{ from, to time.Time }

func (g lostGap) holds(t time.Time) bool { return t.After(g.from) && !t.After(g.to) }

// truthOf counts the window (from, to] in the simulator's truth as a scraper
// can know it: finished requests whose finish was observed, and abandoned
// ones: first token observed, finish never observed (cancelled by the
// client, lost in a restart, or finished inside a lost gap), counted when
// they left.
func truthOf(truth sim.Truth, from, to time.Time, gaps []lostGap, meets func(sim.Request) bool) windowTruth {
	var wt windowTruth
	inGap := func(t time.Time) bool {
		for _, g := range gaps {
			if g.holds(t) {
				return true
			}
		}
		return false
	}
	for _, r := range truth {
		if r.Finish.IsZero() || !r.Finish.After(from) || r.Finish.After(to) {
			continue
		}
		observedFinish := r.Finished() && !inGap(r.Finish)
		switch {
		case observedFinish:
			wt.finished++
			wt.tokens += float64(r.OutputTokens)
			if meets(r) {
				wt.good++
				wt.goodTokens += float64(r.OutputTokens)
			}
		case !r.FirstToken.IsZero() && !inGap(r.FirstToken):
			wt.abandoned++
		}
	}
	return wt
}

// meetsInteractive says whether a simulated request met the interactive
// SLO's objectives (TTFT <= 0.5 s and TPOT <= 50 ms).
func meetsInteractive(r sim.Request) bool { return r.TTFT() <= 0.5+1e-9 && r.TPOT() <= 0.05+1e-9 }

// workload is one simulated preset scraped every 15 s into a pipeline.
type workload struct {
	sim  *sim.Sim
	p    *Pipeline
	gaps []lostGap // what each restart's crash hid from every scraper
}

// newWorkload builds preset name with seed, judged by slos over windows.
func newWorkload(t testing.TB, name string, seed uint64, slos []slo.SLO, windows ...time.Duration) workload {
	t.Helper()
	cfg, err := sim.Preset(name, seed, start)
	if err != nil {
		t.Fatal(err)
	}
	return newWorkloadOf(t, cfg, slos, windows...)
}

// newWorkloadOf builds the simulator of cfg (without per-token times, which
// no test here reads), judged by slos over windows.
func newWorkloadOf(t testing.TB, cfg sim.Config, slos []slo.SLO, windows ...time.Duration) workload {
	t.Helper()
	cfg.DiscardTokenTimes = true
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.SLOs = slos
	spec.Windows = windows
	w := workload{sim: s, p: New(spec)}
	for _, r := range cfg.Restarts {
		w.gaps = append(w.gaps, lostGap{from: start.Add(r.At.Truncate(scrapeStep)), to: start.Add(r.At)})
	}
	return w
}

// scrapeStep is the workloads' scrape interval.
const scrapeStep = 15 * time.Second

// TestJointAccuracyAgainstTruth runs every workload through the pipeline and
// compares, over every evaluated window, each SLO series with the
// simulator's per-request truth: the good requests ("all"), attainment with
// abandoned streams counted bad and excluded, goodput requests and tokens,
// the abandoned requests and the burn rate. The truth must lie inside every
// bound in every window, with no tolerance. The table (printed with -v)
// reports the mean and worst bound width and the mean estimate error, as
// shares of the finished requests (good, abandoned), as attainment shares,
// and as shares of the finished requests' tokens (goodput tokens).
func TestJointAccuracyAgainstTruth(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-16s %4s | %-20s | %-20s | %-20s | %-20s | %-20s | %s\n", "workload", "win",
		"good   width worst err", "att(bad) w worst err", "att(excl) w worst err", "goodput tok w wst err", "abandoned w worst err", "floor: good tokens")
	var all [5]accuracy
	// burnSpread is the largest upper burn rate minus its estimate over the
	// steady workload's 1m windows, with abandoned requests bad and excluded.
	var burnSpread [2]float64
	meets := meetsInteractive
	excluded := interactive
	excluded.Name = "interactive-excluded"
	excluded.Abandoned = slo.AbandonedExcluded
	for _, name := range accuracyPresets {
		run := newWorkload(t, name, 11, []slo.SLO{interactive, excluded}, time.Minute, 5*time.Minute)
		s, p, gaps, step := run.sim, run.p, run.gaps, scrapeStep
		var acc [5]accuracy
		var floor [3]float64
		var tokens []intervalTokens
		prev := start
		for at := start.Add(step); !at.After(start.Add(30 * time.Minute)); at = at.Add(step) {
			s.AdvanceTo(at)
			if !s.Serving() {
				continue
			}
			scrapeInto(t, p, s, at)
			tokens = append(tokens, tokensOf(p, at, at.Sub(prev)))
			prev = at
			if at.Sub(start) < 5*time.Minute || at.Sub(start)%time.Minute != 0 {
				continue
			}
			truth := s.Truth()
			for _, w := range p.Evaluate(at).Targets[0].Models[0].Windows {
				if len(w.SLOs) != 2 {
					continue
				}
				wt := truthOf(truth, w.Window.Start, w.Window.End, gaps, meets)
				secs := w.Window.Seconds()
				where := fmt.Sprintf("%s at %v window %v", name, at.Sub(start), w.Window.Nominal)
				checkWindow(t, where, w.SLOs[0], wt, secs, &acc, true)
				if wt.finished > 0 {
					floor[0] += frechetFloor(p, truth, w.Window.Start, w.Window.End, gaps) / wt.finished
					floor[1] += tokensFloor(tokens, truth, w.Window.Start, w.Window.End, gaps, meets) / wt.tokens
					floor[2]++
				}
				checkWindow(t, where+" (excluded)", w.SLOs[1], wt, secs, &acc, false)
				if name == "steady" && w.Window.Nominal == time.Minute {
					for k, r := range w.SLOs[:2] {
						burnSpread[k] = math.Max(burnSpread[k], r.BurnRate.Upper-r.BurnRate.Estimate)
					}
				}
			}
		}
		fmt.Fprintf(&table, "%-16s %4.0f | %s | %s | %s | %s | %s | %6.4f %6.4f\n", name, acc[0].n, acc[0], acc[1], acc[2], acc[3], acc[4], floor[0]/floor[2], floor[1]/floor[2])
		for i := range all {
			all[i].merge(acc[i])
		}
	}
	fmt.Fprintf(&table, "%-16s %4.0f | %s | %s | %s | %s | %s\n", "all", all[0].n, all[0], all[1], all[2], all[3], all[4])
	t.Logf("mean width, worst width and mean |estimate − truth| per window:\n%s", table.String())
	t.Logf("steady, 1m windows: upper burn rate − estimate at most %.2f (abandoned bad), %.2f (excluded)", burnSpread[0], burnSpread[1])
}

// checkWindow compares one SLO result with the truth of its window; acc
// gathers good, attainment (bad), attainment (excluded), goodput tokens and
// abandoned, and bad says which attainment this result is.
func checkWindow(t *testing.T, where string, res slo.SLOResult, wt windowTruth, secs float64, acc *[5]accuracy, bad bool) {
	t.Helper()
	if res.Requests != wt.finished {
		t.Errorf("%s: %v finished requests, truth %v", where, res.Requests, wt.finished)
	}
	good, ok := res.GoodRequests[slo.AllKey]
	if !ok || !res.HasAbandoned || !res.HasGoodputTokens || !res.HasBurnRate {
		t.Errorf("%s: all %v, abandoned %v, goodput tokens %v, burn %v: want all present", where, ok, res.HasAbandoned, res.HasGoodputTokens, res.HasBurnRate)
		return
	}
	att := res.Objectives[slo.AllKey]
	pop := wt.finished
	if bad {
		pop += wt.abandoned
	}
	truthAtt := wt.good / pop
	truthBurn := math.Max(0, 1-truthAtt) / (1 - interactive.Goal)
	checks := []struct {
		what  string
		truth float64
		b     slo.Bounded
		into  int
		scale float64
	}{
		{"good requests", wt.good, good, 0, wt.finished},
		{"attainment", truthAtt, att, 2, 1},
		{"goodput tokens/s", wt.goodTokens / secs, res.GoodputTokensPerSecond, 3, wt.tokens / secs},
		{"goodput requests/s", wt.good / secs, res.GoodputRequestsPerSecond, -1, 1},
		{"abandoned", wt.abandoned, res.Abandoned, 4, wt.finished},
		{"burn rate", truthBurn, res.BurnRate, -1, 1},
	}
	if bad {
		checks[1].into = 1
	}
	for _, c := range checks {
		if !bad && (c.into == 0 || c.into == 3 || c.into == 4) {
			c.into = -1 // the same numbers as the "bad" SLO's
		}
		var sink accuracy
		target := &sink
		if c.into >= 0 {
			target = &acc[c.into]
		}
		if !target.add(c.truth, c.b, c.scale) {
			t.Errorf("%s: %s truth %v outside [%v, %v]", where, c.what, c.truth, c.b.Lower, c.b.Upper)
		}
	}
	if got, want := res.FinishedTokensPerSecond, wt.tokens/secs; math.Abs(got-want) > 1e-9*want {
		t.Errorf("%s: finished tokens/s %v, truth %v", where, got, want)
	}
	if u := res.GoodputTokensPerSecond.Upper; u > res.FinishedTokensPerSecond {
		t.Errorf("%s: goodput tokens/s upper %v above the finished requests' %v", where, u, res.FinishedTokensPerSecond)
	}
}

// TestMissingTPOTFamilyIsUnknown serves vLLM without the per-request TPOT
// family (before v0.11): an SLO with a TPOT objective must publish no "all",
// goodput, burn rate or budget, and name TPOT as unknown, while TTFT alone is
// still judged.
func TestMissingTPOTFamilyIsUnknown(t *testing.T) {
	run := newWorkload(t, "no-tpot", 11, []slo.SLO{interactive}, time.Minute, 5*time.Minute)
	s, p, step := run.sim, run.p, scrapeStep
	end := start.Add(12 * time.Minute)
	for at := start.Add(step); !at.After(end); at = at.Add(step) {
		scrapeInto(t, p, s, at)
	}
	m := p.Evaluate(end).Targets[0].Models[0]
	for _, w := range m.Windows {
		if len(w.SLOs) != 1 {
			t.Fatalf("window %v: %d SLO results, want 1", w.Window.Nominal, len(w.SLOs))
		}
		r := w.SLOs[0]
		if _, ok := r.Objectives[slo.AllKey]; ok || r.HasBurnRate || r.HasGoodputTokens || r.GoodputRequestsPerSecond.Upper != 0 {
			t.Errorf("window %v: all %v, burn %v, goodput tokens %v, goodput requests %+v: want none", w.Window.Nominal, ok, r.HasBurnRate, r.HasGoodputTokens, r.GoodputRequestsPerSecond)
		}
		if len(r.Unknown) != 1 || r.Unknown[0] != slo.TPOT {
			t.Errorf("window %v: unknown %v, want [tpot]", w.Window.Nominal, r.Unknown)
		}
		if _, ok := r.Objectives["ttft"]; !ok {
			t.Errorf("window %v: TTFT attainment missing", w.Window.Nominal)
		}
	}
	for _, b := range m.Budgets {
		if b.Known {
			t.Errorf("budget of %s known without TPOT: %+v", b.SLO, b.Remaining)
		}
	}
	for _, c := range m.Burns {
		if c.Known {
			t.Errorf("burn check of %s known without TPOT", c.Alert.SLO)
		}
	}
}

// frechetFloor (the table's last column, as a share of the finished
// requests) is the width, in requests, that the per-interval Fréchet
// bounds on "all" would have over the window (from, to] if each interval's
// TTFT-good finishers were known exactly: Σ_j min(G_j, F_j.hi) − max(0, G_j
// + F_j.lo − n_j), with G_j the truth and F_j the bounds the ledger found on
// the finishers meeting the finish-observed objectives. Any bound that
// judges each interval's joint by Fréchet from what vLLM exposes, the linear
// program over (first-token, finish) intervals included, is at least this
// wide: the true G_j is one of the values it must allow.
func frechetFloor(p *Pipeline, truth sim.Truth, from, to time.Time, gaps []lostGap) float64 {
	l := onlyLedger(p)
	width := 0.0
	for _, iv := range l.JudgedIntervals(0) {
		if iv.Start.Before(from) || iv.End.After(to) {
			continue
		}
		g := 0.0
		for _, r := range truth {
			lost := slices.ContainsFunc(gaps, func(g lostGap) bool { return g.holds(r.Finish) })
			if r.Finished() && !lost && r.Finish.After(iv.Start) && !r.Finish.After(iv.End) && r.TTFT() <= 0.5+1e-9 {
				g++
			}
		}
		width += math.Max(0, math.Min(g, iv.FinishGood.Upper)-math.Max(0, g+iv.FinishGood.Lower-iv.Finished))
	}
	return width
}

// TestLongWindowJointAgainstTruth runs workloads for three hours and checks
// the 1h window (as long as the intervals the ledger keeps) and the 2h one
// (longer, built from the closed blocks' coupled bounds) against the
// simulator's truth: "all"'s good requests must lie inside the published
// bounds. The log compares the 2h windows' mean width with the
// per-interval sums alone.
func TestLongWindowJointAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulated hours per workload")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-12s %4s | %-9s %-9s\n", "workload", "win", "blocks", "intervals")
	for _, name := range []string{"one-engine", "cancel15", "restart"} {
		// The 1h window reaches the oldest intervals kept: its coupling
		// must let finishers draw on the dropped ones before them.
		run := newWorkload(t, name, 5, []slo.SLO{interactive}, time.Hour, 2*time.Hour)
		s, p, gaps, step, meets := run.sim, run.p, run.gaps, scrapeStep, meetsInteractive
		var n, published, perInterval float64
		for at := start.Add(step); !at.After(start.Add(3 * time.Hour)); at = at.Add(step) {
			s.AdvanceTo(at)
			if !s.Serving() {
				continue
			}
			scrapeInto(t, p, s, at)
			if at.Sub(start) < 2*time.Hour || at.Sub(start)%(7*time.Minute) != 0 {
				continue
			}
			truth := s.Truth()
			for _, w := range p.Evaluate(at).Targets[0].Models[0].Windows {
				good := w.SLOs[0].GoodRequests[slo.AllKey]
				wt := truthOf(truth, w.Window.Start, w.Window.End, gaps, meets)
				if wt.good < good.Lower || wt.good > good.Upper {
					t.Errorf("%s at %v: %v good requests outside [%v, %v]", name, at.Sub(start), wt.good, good.Lower, good.Upper)
				}
				if w.Window.Nominal != 2*time.Hour {
					continue
				}
				sums, ok := onlyLedger(p).Sums(0, w.Window.Start, w.Window.End)
				if !ok {
					t.Fatalf("%s at %v: the ledger holds no 2h window", name, at.Sub(start))
				}
				n++
				published += (good.Upper - good.Lower) / wt.finished
				perInterval += (sums.Upper - sums.Lower) / wt.finished
			}
		}
		if n == 0 {
			t.Fatalf("%s: no window judged", name)
		}
		fmt.Fprintf(&table, "%-12s %4.0f | %9.4f %9.4f\n", name, n, published/n, perInterval/n)
	}
	t.Logf("mean width of all's good requests over 2h windows (share of finished):\n%s", table.String())
}

// intervalTokens is one scrape interval's generation-token histogram.
type intervalTokens struct {
	start, end time.Time
	hist       slo.Histogram
}

// tokensOf reads the generation-token histogram of the interval of length
// that ends at at.
func tokensOf(p *Pipeline, at time.Time, length time.Duration) intervalTokens {
	for _, tg := range p.targets {
		for _, model := range tg.store.History().Models() {
			if w, ok := tg.store.History().Window(model, at, length, history.Options{}); ok {
				return intervalTokens{start: w.Start, end: w.End, hist: w.GenerationTokens}
			}
		}
	}
	return intervalTokens{}
}

// tokensFloor (the table's last column, as a share of the finished
// requests' tokens) is the width the goodput tokens of the window (from, to]
// would have if each interval's count of requests meeting every objective
// were known exactly: vLLM's histograms still do not say which of an
// interval's requests those are, so their tokens lie anywhere between the
// fewest and the most the token histogram allows for that many requests.
func tokensFloor(ivs []intervalTokens, truth sim.Truth, from, to time.Time, gaps []lostGap, meets func(sim.Request) bool) float64 {
	width := 0.0
	for _, iv := range ivs {
		if iv.start.Before(from) || iv.end.After(to) || !iv.hist.Valid() {
			continue
		}
		wt := truthOf(truth, iv.start, iv.end, gaps, meets)
		if b, ok := slo.GoodputTokens(slo.Exact(wt.good), iv.hist); ok {
			width += b.Upper - b.Lower
		}
	}
	return width
}

// onlyLedger is the ledger of a pipeline's only model.
func onlyLedger(p *Pipeline) *ledger.Ledger {
	for _, tg := range p.targets {
		for _, model := range tg.store.Models() {
			if l := tg.store.Ledger(model); l != nil {
				return l
			}
		}
	}
	return nil
}
