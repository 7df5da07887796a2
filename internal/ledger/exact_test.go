package ledger

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// e2eOnly is an SLO whose one objective (e2e ≤ 1 s) lies between the
// buckets' edges (0.5, 2), so the histograms only bracket its good
// requests: those below 0.5 s are surely good, those above 2 s surely bad.
var e2eOnly = slo.SLO{Name: "e2e", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 1}}}

// scrapeInterval is the window of scrape k (15 s each from start) with
// fast finishers under 0.5 s, mid between 0.5 and 2 s, slow above 2 s.
func scrapeInterval(k int, fast, mid, slow float64) slo.Window {
	n := fast + mid + slow
	return slo.Window{
		Start: start.Add(time.Duration(k) * 15 * time.Second), End: start.Add(time.Duration(k+1) * 15 * time.Second),
		Latency:        map[slo.Metric]slo.Histogram{slo.E2E: {Edges: []float64{0.5, 2, math.Inf(1)}, Counts: []float64{fast, fast + mid, n}, Sum: n}},
		RequestSuccess: n, HasRequestSuccess: true,
	}
}

// spansSaying answers for interval k (by scrape index) as if counts[k]
// spans, of which counts[k][1] meet the objective, had ended in it; no
// answer for the intervals counts lacks or whose finishers the spans do
// not number.
func spansSaying(counts map[int][2]int) Spans {
	return func(from, to time.Time, finished int) (SpanCounts, bool) {
		k := int(from.Sub(start) / (15 * time.Second))
		c, ok := counts[k]
		if !ok || c[0] != finished {
			return SpanCounts{}, false
		}
		g := slo.Exact(float64(c[1]))
		// One objective: its count is the count of "all".
		return SpanCounts{Good: []slo.Bounded{g}, Tokens: []slo.Bounded{slo.Exact(0)}, Objectives: [][]slo.Bounded{{g}}}, true
	}
}

// TestSettleCoversExactlyTheIntervalsTheSpansNumber walks the cases of
// Settle on three intervals of 10 finishers (4 fast, 4 between the edges,
// 2 slow: the histograms say 4 to 8 good): an interval waits while its
// spans may still arrive, is covered once they number its finishers, and
// settles uncovered once they can no longer arrive, at once when vLLM's
// own counts disagree, or when the spans contradict its bound. A window
// is then the sum of exact and bounded intervals, exact when all are
// covered.
func TestSettleCoversExactlyTheIntervalsTheSpansNumber(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	l.ExpectSpans()
	for k := range 4 {
		w := scrapeInterval(k, 4, 4, 2)
		if k == 3 {
			w.RequestSuccess = 11 // vLLM's counter and its histogram disagree
		}
		l.Append(w, true)
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
	window := func(from, to int) slo.Bounded {
		j, ok := l.Window(0, at(from), at(to))
		if !ok {
			t.Fatalf("no window (%d, %d]", from, to)
		}
		return j.Good
	}
	if g := window(0, 3); g.Lower != 12 || g.Upper != 24 {
		t.Fatalf("before any span: good %+v, want the histograms' [12, 24]", g)
	}
	// Interval 0's spans arrived (6 good); 1's are incomplete; 2 is not
	// ready yet.
	settled := l.Settle(at(2), at(0), spansSaying(map[int][2]int{0: {10, 6}, 1: {9, 5}}))
	if len(settled) != 1 || !settled[0].Covered || settled[0].Good[0] != 6 {
		t.Fatalf("settled %+v, want interval 0 covered with 6 good", settled)
	}
	if g := window(0, 1); !g.IsExact() || g.Estimate != 6 {
		t.Errorf("the covered interval: %+v, want exactly 6", g)
	}
	if g := window(0, 3); g.Lower != 14 || g.Upper != 22 {
		t.Errorf("one interval covered: %+v, want [4+4+6, 8+8+6]", g)
	}
	// Interval 1's last span arrives; interval 2's spans contradict its
	// bound (9 good of 10, above the 8 the histograms allow); 3 settles
	// uncovered at once (its counts disagree).
	settled = l.Settle(at(4), at(0), spansSaying(map[int][2]int{1: {10, 7}, 2: {10, 9}, 3: {10, 5}, 4: {10, 5}}))
	if len(settled) != 3 || !settled[0].Covered || settled[1].Covered || settled[2].Covered {
		t.Fatalf("settled %+v, want 1 covered, 2 (inconsistent) and 3 (counts disagree) not", settled)
	}
	if g := window(0, 2); !g.IsExact() || g.Estimate != 13 {
		t.Errorf("two covered intervals: %+v, want exactly 6+7", g)
	}
	if g := window(0, 3); g.Lower != 17 || g.Upper != 21 {
		t.Errorf("two of three covered: %+v, want [6+7+4, 6+7+8]", g)
	}
	if c, n, ok := l.Covered(0, at(0), at(3)); !ok || c != 20 || n != 30 {
		t.Errorf("covered %v of %v (%v), want 20 of 30", c, n, ok)
	}
	if j, _ := l.WindowOf(0, at(0), at(3), false); j.Good.Lower != 12 || j.Good.Upper != 24 {
		t.Errorf("the histograms alone: %+v, want [12, 24] still", j.Good)
	}
	if len(l.pending) != 0 {
		t.Errorf("%d intervals still waiting", len(l.pending))
	}
}

// TestSettleGivesUpOnceSpansCannotArrive: an interval whose spans stay
// incomplete waits until it ended at or before expired, then settles
// uncovered with the histograms' estimate.
func TestSettleGivesUpOnceSpansCannotArrive(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	l.ExpectSpans()
	l.Append(scrapeInterval(0, 4, 4, 2), true)
	end := start.Add(15 * time.Second)
	none := spansSaying(nil)
	if s := l.Settle(end, end.Add(-time.Nanosecond), none); len(s) != 0 {
		t.Fatalf("settled %+v while its spans may still arrive", s)
	}
	s := l.Settle(end.Add(time.Minute), end, none)
	if len(s) != 1 || s[0].Covered || !s[0].Known[0] || s[0].Good[0] < 4 || s[0].Good[0] > 8 {
		t.Fatalf("settled %+v, want uncovered with an estimate in [4, 8]", s)
	}
}

// TestExactStateRoundTrip: the running sums over the covered intervals and
// the intervals waiting for spans survive State and Restore, and a state
// for another number of SLOs is refused.
func TestExactStateRoundTrip(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	l.ExpectSpans()
	for k := range 3 {
		l.Append(scrapeInterval(k, 4, 4, 2), true)
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
	l.Settle(at(1), at(0), spansSaying(map[int][2]int{0: {10, 6}}))
	r, err := Restore(l.State(), []slo.SLO{e2eOnly})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Ledger{l, r} {
		x.Settle(at(3), at(0), spansSaying(map[int][2]int{1: {10, 5}, 2: {10, 8}}))
	}
	a, _ := l.Window(0, at(0), at(3))
	b, _ := r.Window(0, at(0), at(3))
	if a.Good != b.Good || !a.Good.IsExact() || a.Good.Estimate != 19 {
		t.Errorf("restored %+v, kept %+v, want both exactly 19", b.Good, a.Good)
	}
	st := l.State()
	st.Pending = append(st.Pending, pendingState{Start: 1, End: 2})
	if _, err := Restore(st, []slo.SLO{e2eOnly}); err == nil {
		t.Error("a waiting interval without its SLO's bounds was restored")
	}
}

// TestUnboundedSpanTokensStayOutOfTheSums: spans that bound their tokens
// from below only (a span without its count) leave the interval's token
// bound to the histograms, and the running sums finite, so that every
// later window's tokens are still a number.
func TestUnboundedSpanTokensStayOutOfTheSums(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	l.ExpectSpans()
	for k := range 3 {
		w := scrapeInterval(k, 4, 4, 2)
		w.GenerationTokens = slo.Histogram{Edges: []float64{10, math.Inf(1)}, Counts: []float64{10, 10}, Sum: 100}
		l.Append(w, true)
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
	l.Settle(at(3), at(0), func(from, to time.Time, finished int) (SpanCounts, bool) {
		return SpanCounts{Good: []slo.Bounded{slo.Exact(6)}, Tokens: []slo.Bounded{{Lower: 50, Estimate: 50, Upper: math.Inf(1)}}}, finished == 10
	})
	for _, w := range [][2]int{{0, 3}, {1, 3}, {2, 3}} {
		j, _ := l.Window(0, at(w[0]), at(w[1]))
		if !j.HasTokens || math.IsNaN(j.Tokens.Lower) || math.IsNaN(j.Tokens.Upper) || math.IsInf(j.Tokens.Upper, 0) {
			t.Errorf("window %v: tokens %+v (present %v)", w, j.Tokens, j.HasTokens)
		}
		if !j.Good.IsExact() {
			t.Errorf("window %v: good %+v, want exact", w, j.Good)
		}
	}
}

// TestRestoreRefusesNonFiniteExactSums: a state file whose running sums
// over the covered intervals are not numbers (a corrupt or foreign file) is
// refused, not restored into windows of NaN.
func TestRestoreRefusesNonFiniteExactSums(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	l.ExpectSpans()
	l.Append(scrapeInterval(0, 4, 4, 2), true)
	l.Settle(start.Add(time.Minute), start, spansSaying(map[int][2]int{0: {10, 6}}))
	st := l.State()
	last := &st.Points[len(st.Points)-1]
	if len(last.Exact) != 1 {
		t.Fatalf("the covered interval's sums are not in the state: %+v", last)
	}
	last.Exact[0].SpanHi = math.Inf(1)
	if _, err := Restore(st, []slo.SLO{e2eOnly}); err == nil {
		t.Error("restored an infinite exact sum")
	}
}

// twoObjectives has e2e ≤ 1 s and queue ≤ 0.1 s, each between its
// histogram's edges, so the histograms only bracket either count.
var twoObjectives = slo.SLO{Name: "two", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 1}, {Metric: slo.Queue, Threshold: 0.1}}}

// queuedInterval is scrapeInterval(k, 4, 4, 2) with a queue histogram of
// its 10 finishers: 5 under 0.05 s, 3 between 0.05 and 0.2 s, 2 above, so
// 5 to 8 meet queue ≤ 0.1 s.
func queuedInterval(k int) slo.Window {
	w := scrapeInterval(k, 4, 4, 2)
	w.Latency[slo.Queue] = slo.Histogram{Edges: []float64{0.05, 0.2, math.Inf(1)}, Counts: []float64{5, 8, 10}, Sum: 1}
	return w
}

// objectiveSpans answers for interval k with counts[k] = {finished, all,
// e2e-good, queue-good}.
func objectiveSpans(counts map[int][4]int) Spans {
	return func(from, to time.Time, finished int) (SpanCounts, bool) {
		c, ok := counts[int(from.Sub(start)/(15*time.Second))]
		if !ok || c[0] != finished {
			return SpanCounts{}, false
		}
		return SpanCounts{
			Good: []slo.Bounded{slo.Exact(float64(c[1]))}, Tokens: []slo.Bounded{slo.Exact(0)},
			Objectives: [][]slo.Bounded{{slo.Exact(float64(c[2])), slo.Exact(float64(c[3]))}},
		}, true
	}
}

// TestObjectivesAreSumsOfExactAndBoundedIntervals: each per-request
// objective of a window is the sum of the covered intervals' span counts
// and the other intervals' bounds, exact when every interval is covered;
// an interval whose span count of one objective contradicts its bound is
// not covered at all; the settled intervals carry their per-objective
// counts; and the sums survive State and Restore, while a state written
// before them answers no window across its checkpoints.
func TestObjectivesAreSumsOfExactAndBoundedIntervals(t *testing.T) {
	l := New([]slo.SLO{twoObjectives})
	l.ExpectSpans()
	for k := range 4 {
		l.Append(queuedInterval(k), true)
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
	objectives := func(l *Ledger, from, to int) [2]slo.Bounded {
		t.Helper()
		g, n, ok := l.Objectives(0, at(from), at(to))
		if !ok || len(g) != 2 || n != float64(10*(to-from)) {
			t.Fatalf("window (%d, %d]: %+v of %v finishers (%v)", from, to, g, n, ok)
		}
		return [2]slo.Bounded{g[0].Good, g[1].Good}
	}
	if _, _, ok := l.Objectives(0, at(0), at(3)); ok {
		t.Error("objectives answered before any interval was covered")
	}
	settled := l.Settle(at(1), at(0), objectiveSpans(map[int][4]int{0: {10, 5, 6, 7}}))
	if len(settled) != 1 || !settled[0].Covered || len(settled[0].Objectives[0]) != 2 || settled[0].Objectives[0][0] != 6 || settled[0].Objectives[0][1] != 7 {
		t.Fatalf("settled %+v, want interval 0 covered with 6 and 7 good", settled)
	}
	g := objectives(l, 0, 3)
	if g[0].Lower != 14 || g[0].Upper != 22 || g[1].Lower != 17 || g[1].Upper != 23 {
		t.Errorf("one of three covered: e2e %+v, queue %+v; want [4+4+6, 8+8+6] and [5+5+7, 8+8+7]", g[0], g[1])
	}
	// Interval 1's queue count (9) is above its bound (8): not covered,
	// "all" included. Interval 2 is covered.
	settled = l.Settle(at(3), at(0), objectiveSpans(map[int][4]int{1: {10, 5, 6, 9}, 2: {10, 4, 5, 6}}))
	if len(settled) != 2 || settled[0].Covered || !settled[1].Covered {
		t.Fatalf("settled %+v, want 1 not covered and 2 covered", settled)
	}
	if e := settled[0].Objectives[0]; len(e) != 2 || e[0] < 4 || e[0] > 8 || e[1] < 5 || e[1] > 8 {
		t.Errorf("an uncovered interval's estimates %v, want the histograms' within [4, 8] and [5, 8]", e)
	}
	if j, _ := l.Window(0, at(1), at(2)); j.Good.IsExact() {
		t.Errorf("the contradicted interval's \"all\" is exact: %+v", j.Good)
	}
	g = objectives(l, 0, 3)
	if g[0].Lower != 6+4+5 || g[0].Upper != 6+8+5 || g[1].Lower != 7+5+6 || g[1].Upper != 7+8+6 {
		t.Errorf("two of three covered: e2e %+v, queue %+v", g[0], g[1])
	}
	if g := objectives(l, 2, 3); !g[0].IsExact() || g[0].Estimate != 5 || !g[1].IsExact() || g[1].Estimate != 6 {
		t.Errorf("a covered interval alone: %+v, want exactly 5 and 6", g)
	}
	r, err := Restore(l.State(), []slo.SLO{twoObjectives})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Ledger{l, r} {
		x.Settle(at(4), at(0), objectiveSpans(map[int][4]int{3: {10, 6, 8, 8}}))
	}
	if a, b := objectives(l, 2, 4), objectives(r, 2, 4); a != b || !a[0].IsExact() || a[0].Estimate != 13 || a[1].Estimate != 14 {
		t.Errorf("restored %+v, kept %+v, want both exactly 5+8 and 6+8", b, a)
	}
	// A state written before the objective sums: no window is answered
	// across its checkpoints, "all" still is.
	st := l.State()
	for k := range st.Points {
		st.Points[k].Objective = nil
	}
	old, err := Restore(st, []slo.SLO{twoObjectives})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := old.Objectives(0, at(0), at(4)); ok {
		t.Error("a state without objective sums answered a window")
	}
	if j, ok := old.Window(0, at(2), at(4)); !ok || !j.Good.IsExact() || j.Good.Estimate != 10 {
		t.Errorf("the old state's \"all\": %+v, want exactly 4+6", j.Good)
	}
}

// TestRestoreRefusesBadObjectiveSums: objective sums of another layout or
// that are not numbers are refused.
func TestRestoreRefusesBadObjectiveSums(t *testing.T) {
	l := New([]slo.SLO{twoObjectives})
	l.ExpectSpans()
	l.Append(queuedInterval(0), true)
	l.Append(queuedInterval(1), true)
	good := l.State()
	last := len(good.Points) - 1
	if len(good.Points[last].Objective) != 1+8*2 || len(good.Pending) != 2 || len(good.Pending[0].SLOs[0].Obj) != 6 {
		t.Fatalf("the objective sums are not in the state: %+v", good.Points[last])
	}
	for name, spoil := range map[string]func(*State){
		"short":        func(st *State) { st.Points[last].Objective = st.Points[last].Objective[:3] },
		"NaN":          func(st *State) { st.Points[last].Objective[2] = math.NaN() },
		"pending size": func(st *State) { st.Pending[0].SLOs[0].Obj = []float64{1} },
		"pending Inf":  func(st *State) { st.Pending[1].SLOs[0].Obj[4] = math.Inf(1) },
	} {
		st := l.State()
		spoil(&st)
		if _, err := Restore(st, []slo.SLO{twoObjectives}); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// BenchmarkCheckpointBytes prints the heap a ledger holds per checkpoint
// for one SLO of two per-request objectives over 2,000 scrape intervals:
// without spans, with spans expected but none arriving, and with every
// interval covered by them.
func BenchmarkCheckpointBytes(b *testing.B) {
	const n = 2000
	for _, mode := range []string{"histograms", "spans-uncovered", "spans-covered"} {
		b.Run(mode, func(b *testing.B) {
			var perPoint float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				l := New([]slo.SLO{twoObjectives})
				if mode != "histograms" {
					l.ExpectSpans()
				}
				for k := range n {
					l.Append(queuedInterval(k), true)
					switch end := start.Add(time.Duration(k+1) * 15 * time.Second); mode {
					case "spans-covered":
						l.Settle(end, start, coverEvery)
					case "spans-uncovered":
						l.Settle(end, end, spansSaying(nil))
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				_, points := l.Len()
				perPoint = float64(after.HeapAlloc-before.HeapAlloc) / float64(points)
				runtime.KeepAlive(l)
			}
			b.ReportMetric(perPoint, "B/checkpoint")
		})
	}
}

// coverEvery answers every interval of queuedInterval (10 finishers) with
// 5 good of "all", 6 meeting e2e and 7 queue.
func coverEvery(from, to time.Time, finished int) (SpanCounts, bool) {
	return objectiveSpans(map[int][4]int{int(from.Sub(start) / (15 * time.Second)): {10, 5, 6, 7}})(from, to, finished)
}
