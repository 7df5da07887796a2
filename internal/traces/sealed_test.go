package traces

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// sealedSLOs judge the differential test's spans: two objectives on the
// same metric (the last one keys it), an ITL objective no span measures,
// and an SLO of ITL alone.
var sealedSLOs = []slo.SLO{
	{Name: "a", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.3}, {Metric: slo.TPOT, Threshold: 0.05}, {Metric: slo.E2E, Threshold: 2}}},
	{Name: "b", Goal: 0.99, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 1}, {Metric: slo.E2E, Threshold: 3}, {Metric: slo.ITL, Threshold: 0.1}}},
	{Name: "itl", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.ITL, Threshold: 0.1}}},
}

// randomSpans makes n spans ending in (0, d], of the model m and of no
// model, over three adapters, with latencies on a coarse grid (so that
// quantiles fall on runs of equal values), some absent (NaN), some zero,
// and some without their token counts.
func randomSpans(r *rand.Rand, n int, d time.Duration) []Span {
	grid := func(scale float64) float64 {
		switch r.IntN(20) {
		case 0:
			return math.NaN()
		case 1:
			return 0
		}
		return math.Round(r.ExpFloat64()*scale*100) / 100
	}
	out := make([]Span, n)
	for i := range out {
		sp := Span{
			Target: "gpu0", Model: []string{"m", "m", ""}[r.IntN(3)], Adapter: []string{"", "lora-a", "lora-b"}[r.IntN(3)],
			RequestID: fmt.Sprint("r", i), End: t0.Add(time.Duration(1 + r.Int64N(int64(d)))),
			TTFT: grid(0.3), E2E: grid(1.5), Queue: grid(0.05), Prefill: grid(0.1), Decode: grid(1), Inference: grid(1.2),
			PromptTokens: r.IntN(500), CompletionTokens: r.IntN(200), FinishReason: []string{"stop", "length"}[r.IntN(2)],
		}
		if r.IntN(30) == 0 {
			sp.CompletionTokens = -1
		}
		out[i] = sp
	}
	return out
}

// TestSealedEqualsRows: a window evaluated from sealed scrape intervals
// (their sorted columns and counts) and from rows equals, bit for bit, the
// evaluation of the same spans never sealed (Select, then Evaluate), for
// windows of every length over intervals sealed or not, with and without
// the spans that named no model; a window holding a block sealed under
// other SLOs, or cutting across one, is not covered and counts its spans.
func TestSealedEqualsRows(t *testing.T) {
	const step, intervals = 15 * time.Second, 40
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 7))
		spans := randomSpans(r, 4000, intervals*step)
		limits := Limits{Retain: 2 * time.Hour, Now: at(intervals * step)}
		sealedStore, rows := NewStore(limits), NewStore(limits)
		sealedStore.Add(spans)
		rows.Add(spans)
		for k := range intervals {
			if r.IntN(4) == 0 {
				continue // left as rows (its spans never numbered its finishers)
			}
			from, to := t0.Add(time.Duration(k)*step), t0.Add(time.Duration(k+1)*step)
			n := len(rows.Select("gpu0", "m", true, from, to).All)
			if _, ok := sealedStore.Interval("gpu0", "m", true, from, to, n, sealedSLOs); !ok {
				t.Fatalf("seed %d interval %d: not answered", seed, k)
			}
		}
		if got, want := retained(sealedStore), retained(rows); got != want {
			t.Fatalf("seed %d: %d records kept sealed, %d as rows", seed, got, want)
		}
		checked := 0
		for _, unnamed := range []bool{true, false} {
			for from := 0; from < intervals; from += 1 + r.IntN(7) {
				for to := from + 1; to <= intervals; to += 1 + r.IntN(9) {
					w := slo.Window{Start: t0.Add(time.Duration(from) * step), End: t0.Add(time.Duration(to) * step), Nominal: time.Minute}
					sel := rows.Select("gpu0", "m", unnamed, w.Start, w.End)
					w.RequestSuccess, w.HasRequestSuccess = float64(len(sel.All)), true
					want := Evaluate(sel, w, slo.WindowReport{}, sealedSLOs, []float64{0, 0.1, 0.5, 0.9, 0.99, 1, -1})
					got := sealedStore.EvaluateWindow("gpu0", "m", unnamed, w, slo.WindowReport{}, sealedSLOs, []float64{0, 0.1, 0.5, 0.9, 0.99, 1, -1})
					if g, e := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != e {
						t.Fatalf("seed %d window (%d, %d] unnamed %v:\nsealed %s\nrows   %s", seed, from, to, unnamed, g, e)
					}
					if !got.Covered {
						t.Fatalf("seed %d window (%d, %d]: not covered", seed, from, to)
					}
					checked++
				}
			}
		}
		// Another goal keeps the blocks; another SLO list, or a window
		// cutting across a block, cannot read them.
		goal := slices.Clone(sealedSLOs)
		goal[0].Goal = 0.5
		sel := rows.Select("gpu0", "m", true, t0, t0.Add(intervals*step))
		whole := slo.Window{Start: t0, End: t0.Add(intervals * step), Nominal: time.Hour, RequestSuccess: float64(len(sel.All)), HasRequestSuccess: true}
		if g, e := fmt.Sprintf("%#v", sealedStore.EvaluateWindow("gpu0", "m", true, whole, slo.WindowReport{}, goal, nil)), fmt.Sprintf("%#v", Evaluate(sel, whole, slo.WindowReport{}, goal, nil)); g != e {
			t.Errorf("seed %d: under another goal\nsealed %s\nrows   %s", seed, g, e)
		}
		w := slo.Window{Start: t0, End: t0.Add(intervals * step), Nominal: time.Hour}
		n := len(rows.Select("gpu0", "m", true, w.Start, w.End).All)
		w.RequestSuccess, w.HasRequestSuccess = float64(n), true
		if res := sealedStore.EvaluateWindow("gpu0", "m", true, w, slo.WindowReport{}, sealedSLOs[:1], nil); res.Covered || res.Spans != n {
			t.Errorf("seed %d: under other SLOs covered %v with %d spans, want not covered with %d", seed, res.Covered, res.Spans, n)
		}
		cut := slo.Window{Start: t0.Add(step / 2), End: t0.Add(intervals * step), Nominal: time.Hour}
		n = len(rows.Select("gpu0", "m", true, cut.Start, cut.End).All)
		cut.RequestSuccess, cut.HasRequestSuccess = float64(n), true
		if res := sealedStore.EvaluateWindow("gpu0", "m", true, cut, slo.WindowReport{}, sealedSLOs, nil); res.Spans != n || (res.Covered && sealedStore.sealedAt(0)) {
			t.Errorf("seed %d: a window cutting across a block: covered %v with %d spans, want %d", seed, res.Covered, res.Spans, n)
		}
		t.Logf("seed %d: %d windows equal", seed, checked)
	}
}

// sealedAt reports whether the first scrape interval of the differential
// test was sealed in the model's series.
func (s *Store) sealedAt(k int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ser := s.targets["gpu0"].models["m"]
	from := t0.Add(time.Duration(k) * 15 * time.Second).UnixNano()
	return slices.ContainsFunc(ser.sealed, func(b sealed) bool { return b.start == from })
}

func retained(s *Store) int {
	n, _ := s.Retained()
	return n
}

// TestSealedDuplicatesAndCaps: a span resent after its interval was sealed
// is a duplicate; expiry and the record cap drop sealed blocks whole, and
// the records kept count them.
func TestSealedDuplicatesAndCaps(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute), MaxRecords: 4})
	sp := []Span{span("a", 5*time.Second, 1), span("b", 10*time.Second, 1), span("c", 20*time.Second, 1)}
	s.Add(sp)
	if _, ok := s.Interval("gpu0", "m", false, t0, t0.Add(15*time.Second), 2, sealedSLOs); !ok {
		t.Fatal("interval not answered")
	}
	if out := s.Add(sp[:1]); out.Duplicates != 1 || out.Added != 0 {
		t.Errorf("a resent sealed span: %+v, want a duplicate", out)
	}
	if n := retained(s); n != 3 {
		t.Errorf("%d records kept, want 3 (2 sealed)", n)
	}
	// Two more: the cap of 4 drops the sealed block (the oldest), whole.
	s.Add([]Span{span("d", 25*time.Second, 1), span("e", 30*time.Second, 1)})
	if n := retained(s); n != 3 || s.sealedAt(0) {
		t.Errorf("%d records kept, block kept %v; want 3 rows and no block", n, s.sealedAt(0))
	}
	// Expiry drops a block once all its records are too old.
	e := NewStore(Limits{Retain: time.Minute, Now: at(time.Minute)})
	e.Add(sp)
	e.Interval("gpu0", "m", false, t0, t0.Add(15*time.Second), 2, sealedSLOs)
	e.limits.Now = at(time.Minute + 11*time.Second)
	if n := retained(e); n != 1 {
		t.Errorf("after expiry %d records kept, want 1 (the block's newest ended 10 s in)", n)
	}
}

// TestSelectRankIsTheSort: the selection across sorted runs is the value a
// sort of their union puts at every rank, on runs of one distribution, of
// disjoint ranges, and of equal values.
func TestSelectRankIsTheSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(run, i int) float64{
		"same":     func(int, int) float64 { return r.ExpFloat64() },
		"disjoint": func(run, _ int) float64 { return float64(run) + r.Float64() },
		"ties":     func(int, int) float64 { return float64(r.IntN(3)) },
		"reversed": func(run, _ int) float64 { return float64(-run) - r.Float64() },
	}
	for name, value := range shapes {
		for _, sizes := range [][]int{{1}, {5, 1, 7}, {100, 3, 0, 50, 200}, {1, 1, 1, 1, 1, 1, 1, 1}} {
			checkSelectRank(t, name, runsOf(sizes, value))
		}
	}
}

func runsOf(sizes []int, value func(run, i int) float64) [][]float64 {
	var runs [][]float64
	for k, n := range sizes {
		if n == 0 {
			continue
		}
		run := make([]float64, n)
		for i := range run {
			run[i] = value(k, i)
		}
		slices.Sort(run)
		runs = append(runs, run)
	}
	return runs
}

func checkSelectRank(t *testing.T, name string, runs [][]float64) {
	t.Helper()
	all := slices.Concat(runs...)
	slices.Sort(all)
	for k, want := range all {
		if got := selectRank(runs, k); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: rank %d of %d: %v, the sort says %v", name, k, len(all), got, want)
		}
	}
}

// FuzzSelectRank checks the selection against the sort on runs made of
// any bytes (finite values only: the columns hold no NaN or infinity).
func FuzzSelectRank(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 9, 9, 9, 0, 4}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var runs [][]float64
		var run []float64
		for i, b := range data {
			if b == 0 || (cut > 0 && i%int(cut) == 0 && len(run) > 0) {
				if len(run) > 0 {
					slices.Sort(run)
					runs = append(runs, run)
				}
				run = nil
				continue
			}
			run = append(run, float64(int(b)-128)/8)
		}
		if len(run) > 0 {
			slices.Sort(run)
			runs = append(runs, run)
		}
		if len(runs) == 0 {
			return
		}
		checkSelectRank(t, "fuzz", runs)
	})
}
