package ledger

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestReachIndexBeyondDroppedIntervals: once compact has dropped the
// interval a finisher's reach started in, the reach extends beyond the kept
// intervals (-1), never stops at the oldest kept one, which would keep the
// window coupling from drawing on everything before it.
func TestReachIndexBeyondDroppedIntervals(t *testing.T) {
	at := func(s int) time.Time { return start.Add(time.Duration(s) * 15 * time.Second) }
	l := &Ledger{}
	for k := 4; k < 8; k++ { // intervals 0-3 were dropped
		l.intervals = append(l.intervals, interval{start: at(k), end: at(k + 1), reachStart: at(k).UnixNano()})
	}
	l.intervals[2].reachStart = at(5).UnixNano() // within the kept ones
	l.intervals[3].reachStart = at(2).UnixNano() // in a dropped one
	l.intervals[1].reachOlder = true
	for k, want := range []int{0, -1, 1, -1} {
		if got := l.reachIndex(k); got != want {
			t.Errorf("interval %d: reach index %d, want %d", k, got, want)
		}
	}
}

// TestWindowOnlyAtItsOwnEdges: a joint is taken between the checkpoints at
// exactly the window's two scrapes. A ledger begun after the history (its
// first checkpoint at scrape 2, as after a reload that changed the SLOs)
// answers nothing for a window from scrape 0, and nothing for edges between
// its scrapes, rather than the joint of the nearest checkpoints, whose
// finished, good and abandoned requests are of other scrapes than the
// window's; Since says where its windows may start.
func TestWindowOnlyAtItsOwnEdges(t *testing.T) {
	l := New([]slo.SLO{e2eOnly})
	if _, ok := l.Since(); ok {
		t.Error("an empty ledger has a first scrape")
	}
	for k := 2; k < 6; k++ {
		l.Append(scrapeInterval(k, 4, 4, 2), true)
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
	if s, ok := l.Since(); !ok || !s.Equal(at(2)) {
		t.Errorf("Since = %v, %v; want scrape 2 (%v)", s, ok, at(2))
	}
	j, ok := l.Window(0, at(2), at(6))
	if !ok || j.Finished != 40 || !j.Start.Equal(at(2)) || !j.End.Equal(at(6)) {
		t.Fatalf("window (2, 6]: %+v, %v; want its 40 finishers between those scrapes", j, ok)
	}
	for _, w := range [][2]time.Time{
		{at(0), at(6)},                   // before the first checkpoint
		{at(2).Add(time.Second), at(6)},  // between two scrapes
		{at(2), at(6).Add(-time.Second)}, // ends between two scrapes
		{at(3), at(3)},                   // empty
	} {
		if j, ok := l.Window(0, w[0], w[1]); ok {
			t.Errorf("window (%v, %v]: joint over (%v, %v], want none", w[0].Sub(start), w[1].Sub(start), j.Start.Sub(start), j.End.Sub(start))
		}
		if _, ok := l.Sums(0, w[0], w[1]); ok {
			t.Errorf("window (%v, %v]: sums, want none", w[0].Sub(start), w[1].Sub(start))
		}
		if _, _, ok := l.Covered(0, w[0], w[1]); ok {
			t.Errorf("window (%v, %v]: coverage, want none", w[0].Sub(start), w[1].Sub(start))
		}
	}
}
