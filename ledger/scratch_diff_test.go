package ledger

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// coupledPlain is coupled as it was written before its slices were kept
// from one window to the next: both allocated at every call.
func coupledPlain(l *Ledger, i int, from, to int64) (ivs []slo.CoupledInterval, pre int, ok bool) {
	first, last, ok := l.span(from, to)
	if !ok {
		return nil, 0, false
	}
	reaches := make([]int, last-first)
	reach := first
	for k := first; k < last; k++ {
		reaches[k-first] = l.reachIndex(k)
		reach = min(reach, reaches[k-first])
	}
	head := max(reach, 0)
	ivs = make([]slo.CoupledInterval, 0, last-head)
	for k := head; k < last; k++ {
		iv := &l.intervals[k]
		j, src := &iv.judged[i], &iv.sources[i]
		var from int
		if k >= first {
			from = reaches[k-first]
		} else {
			from = l.reachIndex(k)
		}
		if from >= 0 {
			from -= head
		}
		ivs = append(ivs, slo.CoupledInterval{
			Bad: src.Bad, Good: src.Good, Counted: k >= first && iv.counted && !j.unknown,
			N: j.n, FinishLo: j.finLo, FinishHi: j.finHi, TTFTLo: j.ttftLo, TTFTHi: j.ttftHi,
			From: from,
		})
	}
	return ivs, first - head, true
}

// tokenCurvesPlain is tokenCurves as it was written before its slice was
// kept from one window to the next.
func tokenCurvesPlain(l *Ledger, i int, from, to int64) ([]*slo.TokenCurve, bool) {
	first, last, ok := l.span(from, to)
	if !ok {
		return nil, false
	}
	out := make([]*slo.TokenCurve, 0, last-first)
	for k := first; k < last; k++ {
		iv := &l.intervals[k]
		if !iv.counted {
			continue
		}
		j := &iv.judged[i]
		if j.unknown || !j.hasTokens {
			return nil, false
		}
		out = append(out, &j.tokens)
	}
	return out, len(out) > 0
}

// randomIntervals is a ledger of n kept intervals of 15 s for two SLOs,
// with reaches inside, before and beyond the kept ones, intervals not
// counted or not judged, curves missing now and then, and NaN among the
// counts.
func randomIntervals(r *rand.Rand, n int) *Ledger {
	at := func(s int) time.Time { return start.Add(time.Duration(s) * 15 * time.Second) }
	l := &Ledger{}
	for k := range n {
		iv := interval{start: at(k), end: at(k + 1), counted: r.IntN(8) > 0, reachStart: at(k - r.IntN(12)).UnixNano(), reachOlder: r.IntN(30) == 0,
			judged: make([]judged, 2), sources: make([]slo.Source, 2)}
		for i := range 2 {
			n := float64(r.IntN(40))
			if r.IntN(50) == 0 {
				n = math.NaN()
			}
			iv.judged[i] = judged{n: n, finLo: n / 2, finHi: n, ttftLo: float64(r.IntN(20)), ttftHi: n, unknown: r.IntN(40) == 0, hasTokens: r.IntN(60) > 0}
			iv.sources[i] = slo.Source{Bad: float64(r.IntN(10)), Good: float64(r.IntN(30))}
		}
		l.intervals = append(l.intervals, iv)
	}
	return l
}

// TestWindowScratchIsThePlainMemory: coupled and tokenCurves keep their
// slices in the ledger from one window to the next; over 1,500 random
// ledgers, each read at 8 windows in any order (nested, overlapping,
// uncovered), every result is the one of the allocating form, field for
// field and curve for curve.
func TestWindowScratchIsThePlainMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 53))
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	read := 0
	for trial := range 1500 {
		n := 1 + r.IntN(300)
		l := randomIntervals(r, n)
		for range 8 {
			a := r.IntN(n+2) - 1
			b := a + r.IntN(n+2-a)
			from, to := l.intervals[0].start.Add(time.Duration(a)*15*time.Second).UnixNano(), l.intervals[0].start.Add(time.Duration(b)*15*time.Second).UnixNano()
			i := r.IntN(2)
			ivs, pre, ok := l.coupled(i, from, to)
			wIvs, wPre, wOK := coupledPlain(l, i, from, to)
			if ok != wOK || pre != wPre || len(ivs) != len(wIvs) {
				t.Fatalf("trial %d, window (%d, %d]: coupled %d intervals, pre %d, %v; the plain one %d, %d, %v", trial, a, b, len(ivs), pre, ok, len(wIvs), wPre, wOK)
			}
			for k := range ivs {
				g, w := ivs[k], wIvs[k]
				if g.Counted != w.Counted || g.From != w.From || !same(g.Bad, w.Bad) || !same(g.Good, w.Good) || !same(g.N, w.N) ||
					!same(g.FinishLo, w.FinishLo) || !same(g.FinishHi, w.FinishHi) || !same(g.TTFTLo, w.TTFTLo) || !same(g.TTFTHi, w.TTFTHi) {
					t.Fatalf("trial %d, window (%d, %d], interval %d: %+v, the plain one %+v", trial, a, b, k, g, w)
				}
			}
			curves, ok := l.tokenCurves(i, from, to)
			wCurves, wOK := tokenCurvesPlain(l, i, from, to)
			if ok != wOK || len(curves) != len(wCurves) {
				t.Fatalf("trial %d, window (%d, %d]: %d curves %v, the plain %d %v", trial, a, b, len(curves), ok, len(wCurves), wOK)
			}
			for k := range curves {
				if curves[k] != wCurves[k] {
					t.Fatalf("trial %d, window (%d, %d]: curve %d is another interval's", trial, a, b, k)
				}
			}
			if ok {
				read++
			}
		}
	}
	if read < 2500 {
		t.Fatalf("only %d windows had their curves", read)
	}
}
