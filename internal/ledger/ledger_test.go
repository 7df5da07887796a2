package ledger

import (
	"testing"
	"time"
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
