package pipeline

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// lpContext is how far before a window the program reads intervals: the
// first tokens there feed the window's finishers (the ledger reads up to an
// hour; five minutes covers every decode time of the workloads).
const lpContext = 5 * time.Minute

var jointLPOnly = flag.String("joint.lp.only", "", "with -joint.lp, run only this workload")

var jointLP = flag.Bool("joint.lp", false, "compare the joint bounds with the linear program over (first-token, finish) interval pairs (slow: one LP per window)")

// lpInterval is what vLLM exposes about one scrape interval, as the linear
// program reads it.
type lpInterval struct {
	start, end time.Time
	seg        int
	restarted  bool
	// ft first tokens, of which between gLo and gHi met the TTFT threshold.
	ft, gLo, gHi float64
	// n finishers, of which between fLo and fHi met every finish-observed
	// objective; lag is their first-token-to-finish histogram.
	n, fLo, fHi  float64
	lag          slo.Histogram
	lagUpperOnly bool
	// rStart and rEnd are running + waiting at the start and end scrapes
	// (+Inf when unknown).
	rStart, rEnd float64
	// inWindow is false for the intervals before the window that the
	// program reads as context: their finishers are constrained like any
	// other but are not counted in the objective.
	inWindow bool
}

// lpIntervalOf reads one interval's facts for SLO s.
func lpIntervalOf(w slo.Window, seg int, s slo.SLO) lpInterval {
	fin := slo.FinishersOf(w)
	th, _ := slo.TTFTThreshold(s)
	rs, re := inFlightOf(w)
	if math.IsNaN(rs) {
		rs, re = math.Inf(1), math.Inf(1)
	}
	src := slo.TTFTSource(w.Start, w.End, w.Latency[slo.TTFT], th, re, slo.DefaultEstimator)
	res := slo.EvaluateInterval(s, nil, fin, w.Latency, w.GenerationTokens, slo.DefaultEstimator)
	return lpInterval{
		start: w.Start, end: w.End, seg: seg,
		ft: src.FirstTokens, gLo: src.FirstTokens - src.Bad, gHi: src.Good,
		n: fin.N, fLo: res.FinishGood.Lower, fHi: res.FinishGood.Upper,
		lag: fin.Lag, lagUpperOnly: fin.LagUpperOnly,
		rStart: rs, rEnd: re,
	}
}

// inFlightOf is running + waiting at the start and end of a window, NaN when
// unknown (as the ledger reads them).
func inFlightOf(w slo.Window) (start, end float64) {
	if !w.Running.Known || !w.Waiting.Known {
		return math.NaN(), math.NaN()
	}
	return math.Max(0, w.Running.AtStart) + math.Max(0, w.Waiting.AtStart),
		math.Max(0, w.Running.AtEnd) + math.Max(0, w.Waiting.AtEnd)
}

// lpBuilder assembles a linear program in standard form (minimise cᵀx, Ax =
// b, x ≥ 0) row by row; every inequality row gets its own slack column.
type lpBuilder struct {
	cols int
	rows []lpRow
	c    []float64
}

type lpRow struct {
	coef map[int]float64
	rhs  float64
	le   bool // Σ coef·x <= rhs (else =)
}

func (b *lpBuilder) variable() int {
	b.cols++
	b.c = append(b.c, 0)
	return b.cols - 1
}

func (b *lpBuilder) add(coef map[int]float64, rhs float64, le bool) {
	if math.IsInf(rhs, 1) {
		return
	}
	b.rows = append(b.rows, lpRow{coef: coef, rhs: rhs, le: le})
}

// solve minimises cᵀx with GLPK's glpsol (an exact simplex over a sparse
// matrix; gonum's dense one takes minutes on a 5-minute window) and returns
// the optimum.
func (b *lpBuilder) solve() (float64, error) {
	var f strings.Builder
	f.WriteString("Minimize\n obj:")
	for k, v := range b.c {
		if v != 0 {
			fmt.Fprintf(&f, " %+g x%d", v, k)
		}
	}
	f.WriteString(" + 0 x0\nSubject To\n")
	for i, r := range b.rows {
		fmt.Fprintf(&f, " r%d:", i)
		for _, k := range slices.Sorted(maps.Keys(r.coef)) {
			fmt.Fprintf(&f, " %+g x%d", r.coef[k], k)
		}
		op := "="
		if r.le {
			op = "<="
		}
		fmt.Fprintf(&f, " %s %.17g\n", op, r.rhs)
	}
	f.WriteString("End\n")
	dir, err := os.MkdirTemp("", "lp")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "p.lp"), filepath.Join(dir, "p.sol")
	if err := os.WriteFile(in, []byte(f.String()), 0o600); err != nil {
		return 0, err
	}
	if msg, err := exec.Command("glpsol", "--lp", in, "--exact", "-o", out).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("glpsol: %v: %s", err, msg)
	}
	sol, err := os.ReadFile(out)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^Status:\s+(\S+)`).FindSubmatch(sol)
	if m == nil || string(m[1]) != "OPTIMAL" {
		return 0, fmt.Errorf("glpsol: no optimum: %s", firstLines(sol, 8))
	}
	o := regexp.MustCompile(`obj = ([-+0-9.eE]+)`).FindSubmatch(sol)
	if o == nil {
		return 0, fmt.Errorf("glpsol: no objective in %s", firstLines(sol, 8))
	}
	return strconv.ParseFloat(string(o[1]), 64)
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// lpJoint bounds the requests of the window's intervals that met every
// objective by the linear program over (first-token interval, finish
// interval) pairs: the lower bound minimises, and the upper one maximises,
// the sum over finish intervals of their Fréchet bounds over every
// assignment of first tokens to finishes that the counts, the TTFT brackets,
// the decode-time histograms and running + waiting at every scrape allow.
func lpJoint(ivs []lpInterval) (lo, hi float64, err error) {
	lo, err = lpSolve(ivs, false)
	if err != nil {
		return 0, 0, err
	}
	neg, err := lpSolve(ivs, true)
	return lo, -neg, err
}

func lpSolve(ivs []lpInterval, upper bool) (float64, error) {
	const m = 1.0 // vLLM's clock margin, seconds (slo.MatchMargin)
	var b lpBuilder
	k := len(ivs)
	// Source -1 is everything before the window: in flight at its start.
	type pair struct{ i, j, good, bad int }
	var pairs []pair
	t0 := ivs[0].start
	reachable := func(i, j int) bool {
		if ivs[j].n <= 0 {
			return false
		}
		if i >= 0 && ivs[j].lag.Valid() && lagMinOf(ivs, i, j, m) >= topLag(ivs[j].lag) {
			return false
		}
		if i < 0 { // nothing is in flight across a restart
			return !ivs[0].restarted && ivs[0].seg == ivs[j].seg
		}
		return ivs[i].seg == ivs[j].seg
	}
	for j := 0; j < k; j++ {
		for i := -1; i <= j; i++ {
			if reachable(i, j) {
				pairs = append(pairs, pair{i, j, b.variable(), b.variable()})
			}
		}
	}
	lagMin := func(i, j int) float64 {
		if i < 0 {
			return ivs[j].start.Sub(t0).Seconds() - m
		}
		return lagMinOf(ivs, i, j, m)
	}
	lagMax := func(i, j int) float64 {
		if i < 0 {
			return math.Inf(1)
		}
		return ivs[j].end.Sub(ivs[i].start).Seconds() + m
	}
	// Rows of the sources: first tokens go to a finish in the window or are
	// left (abandoned or in flight at the end), good parts in the bracket.
	for i := 0; i < k; i++ {
		lg, lb := b.variable(), b.variable()
		all := map[int]float64{lg: 1, lb: 1}
		good := map[int]float64{lg: 1}
		for _, p := range pairs {
			if p.i == i {
				all[p.good], all[p.bad] = 1, 1
				good[p.good] = 1
			}
		}
		b.add(all, ivs[i].ft, false)
		b.add(good, ivs[i].gHi, true)
		neg := map[int]float64{}
		for v := range good {
			neg[v] = -1
		}
		b.add(neg, -ivs[i].gLo, true)
	}
	// Before the window: at most running + waiting at its start.
	pre := map[int]float64{}
	for _, p := range pairs {
		if p.i < 0 {
			pre[p.good], pre[p.bad] = 1, 1
		}
	}
	if len(pre) > 0 {
		b.add(pre, ivs[0].rStart, true)
	}
	// Crossing every inner scrape: first token before, finish after.
	for s := 1; s < k; s++ {
		cross := map[int]float64{}
		for _, p := range pairs {
			if p.i < s && p.j >= s {
				cross[p.good], cross[p.bad] = 1, 1
			}
		}
		if len(cross) > 0 {
			b.add(cross, ivs[s-1].rEnd, true)
		}
	}
	obj := 0
	for j := 0; j < k; j++ {
		iv := ivs[j]
		if iv.n <= 0 {
			continue
		}
		col := map[int]float64{}
		gj := map[int]float64{}
		for _, p := range pairs {
			if p.j == j {
				col[p.good], col[p.bad] = 1, 1
				gj[p.good] = 1
			}
		}
		b.add(col, iv.n, false)
		var triples [][3]int
		for _, p := range pairs {
			if p.j == j {
				triples = append(triples, [3]int{p.i, p.good, p.bad})
			}
		}
		addLagRows(&b, iv, j, triples, lagMin, lagMax)
		if !iv.inWindow {
			continue
		}
		z := b.variable()
		obj++
		if upper {
			// w_j <= G_j, w_j <= fHi; maximise Σ w_j.
			b.c[z] = -1
			row := map[int]float64{z: 1}
			for v := range gj {
				row[v] = -1
			}
			b.add(row, 0, true)
			b.add(map[int]float64{z: 1}, iv.fHi, true)
		} else {
			// z_j >= G_j + fLo − n; minimise Σ z_j.
			b.c[z] = 1
			row := map[int]float64{z: -1}
			for v := range gj {
				row[v] = 1
			}
			b.add(row, iv.n-iv.fLo, true)
		}
	}
	if obj == 0 {
		return 0, nil
	}
	return b.solve()
}

// lagMinOf is the least lag a request with first token in interval i and
// finish in interval j can have.
func lagMinOf(ivs []lpInterval, i, j int, margin float64) float64 {
	return ivs[j].start.Sub(ivs[i].end).Seconds() - margin
}

// topLag is the upper edge of the highest non-empty bucket of h.
func topLag(h slo.Histogram) float64 {
	prev, top := 0.0, 0.0
	for i, c := range h.Counts {
		if c > prev {
			top = h.Edges[i]
		}
		prev = c
	}
	return top
}

// addLagRows adds the decode-time constraints of sink j: the requests whose
// pair forces a lag of at most e are at most those the histogram counts at or
// below e, and those whose pair forces more than e at most those above.
func addLagRows(b *lpBuilder, iv lpInterval, j int, triples [][3]int, lagMin, lagMax func(i, j int) float64) {
	h := iv.lag
	if !h.Valid() {
		return
	}
	for e, edge := range h.Edges {
		below := h.Counts[e]
		if !iv.lagUpperOnly {
			row := map[int]float64{}
			for _, t := range triples {
				if lagMax(t[0], j) <= edge {
					row[t[1]], row[t[2]] = 1, 1
				}
			}
			if len(row) > 0 {
				b.add(row, below, true)
			}
		}
		row := map[int]float64{}
		for _, t := range triples {
			if lagMin(t[0], j) >= edge {
				row[t[1]], row[t[2]] = 1, 1
			}
		}
		if len(row) > 0 {
			b.add(row, iv.n-below, true)
		}
	}
}

// lpComparison is one workload's comparison of the published bounds on
// "all"'s good requests with the linear program's.
type lpComparison struct {
	windows, ours, lp float64 // window count and summed widths (shares of finished)
	worst             float64 // the largest ours/LP over windows with LP width > 0.005
}

func (c lpComparison) String() string {
	return fmt.Sprintf("%4.0f | %8.4f %8.4f %8.2f | %8.2f", c.windows, c.ours/c.windows, c.lp/c.windows, c.ours/c.lp, c.worst)
}

// compareWithLP runs a workload for span through the pipeline and, at every
// whole minute from the fifth, solves the linear program over each evaluated
// window (with lpContext of intervals before it). It fails the test when the
// truth leaves the program's bounds (every constraint is a fact about the
// true assignment, so that would be a wrong program) or, with strict, when a
// published bound is more than twice the program's width plus two requests.
func compareWithLP(t *testing.T, name string, span time.Duration, strict bool) lpComparison {
	t.Helper()
	run := newWorkload(t, name, 11, []slo.SLO{interactive}, time.Minute, 5*time.Minute)
	s, p, gaps, step, meets := run.sim, run.p, run.gaps, scrapeStep, meetsInteractive
	var ivs []lpInterval
	seg := 0
	prev := start
	var cmp lpComparison
	for at := start.Add(step); !at.After(start.Add(span)); at = at.Add(step) {
		s.AdvanceTo(at)
		if !s.Serving() {
			continue
		}
		scrapeInto(t, p, s, at)
		for _, tg := range p.targets {
			for _, model := range tg.store.History().Models() {
				if w, ok := tg.store.History().Window(model, at, at.Sub(prev), history.Options{}); ok {
					if w.Restarts > 0 {
						seg++
					}
					iv := lpIntervalOf(w, seg, interactive)
					iv.restarted = w.Restarts > 0
					ivs = append(ivs, iv)
				}
			}
		}
		prev = at
		if at.Sub(start) < 5*time.Minute || at.Sub(start)%time.Minute != 0 {
			continue
		}
		truth := s.Truth()
		for _, w := range p.Evaluate(at).Targets[0].Models[0].Windows {
			if len(w.SLOs) != 1 {
				continue
			}
			var in []lpInterval
			for _, iv := range ivs {
				if !iv.start.Before(w.Window.Start.Add(-lpContext)) && !iv.end.After(w.Window.End) {
					iv.inWindow = !iv.start.Before(w.Window.Start)
					in = append(in, iv)
				}
			}
			wt := truthOf(truth, w.Window.Start, w.Window.End, gaps, meets)
			if len(in) == 0 || wt.finished <= 0 {
				continue
			}
			where := fmt.Sprintf("%s at %v window %v", name, at.Sub(start), w.Window.Nominal)
			lo, hi, err := lpJoint(in)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if wt.good < lo-1e-6 || wt.good > hi+1e-6 {
				t.Errorf("%s: truth %v outside the program's [%v, %v]", where, wt.good, lo, hi)
			}
			good := w.SLOs[0].GoodRequests[slo.AllKey]
			ours, lpw := good.Upper-good.Lower, hi-lo
			if strict && ours > 2*lpw+2 {
				t.Errorf("%s: published [%v, %v] is more than twice the program's [%.1f, %.1f]", where, good.Lower, good.Upper, lo, hi)
			}
			cmp.windows++
			cmp.ours += ours / wt.finished
			cmp.lp += lpw / wt.finished
			if lpw/wt.finished > 0.005 {
				cmp.worst = math.Max(cmp.worst, ours/lpw)
			}
		}
	}
	return cmp
}

// glpsolOrSkip skips without GLPK's solver, except in CI, where make test
// has installed it and its absence is a failure.
func glpsolOrSkip(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("glpsol"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("glpsol not found: make test installs it (glpk-utils)")
		}
		t.Skip("needs GLPK's glpsol (apt-get install glpk-utils)")
	}
}

// TestJointWithinTwiceTheLinearProgram checks, on a bursty and a two-engine
// workload, that the truth lies inside the linear program's bounds and that
// every published bound on "all" is at most twice as wide as the program's
// (plus two requests for the rounding of small windows).
func TestJointWithinTwiceTheLinearProgram(t *testing.T) {
	glpsolOrSkip(t)
	for _, name := range []string{"bursty", "two-engines"} {
		cmp := compareWithLP(t, name, 10*time.Minute, true)
		if cmp.windows == 0 {
			t.Fatalf("%s: no window compared", name)
		}
		t.Logf("%-12s %s", name, cmp)
	}
}

// TestJointAgainstLinearProgram prints, for every accuracy workload over 30
// minutes, the mean width of the published bounds on "all"'s good requests
// beside the linear program's, their ratio, and the worst ratio over the
// windows. Run with -joint.lp -v (about four minutes on 2 cores).
func TestJointAgainstLinearProgram(t *testing.T) {
	if !*jointLP {
		t.Skip("measurement: run with -joint.lp")
	}
	glpsolOrSkip(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-16s %4s | %-8s %-8s %-8s | %s\n", "workload", "win", "ours", "LP", "ratio", "worst ratio (LP width > 0.005)")
	for _, name := range accuracyPresets {
		if *jointLPOnly != "" && name != *jointLPOnly {
			continue
		}
		fmt.Fprintf(&table, "%-16s %s\n", name, compareWithLP(t, name, 30*time.Minute, false))
	}
	t.Logf("mean width of all's good requests (share of finished) per window, ours and the linear program's:\n%s", table.String())
}
