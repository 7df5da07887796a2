package main

import (
	"testing"
	"time"
)

// TestEvaluationOverlaps checks the overlap of two evaluations' spans
// (each ending at end, lasting dur, widened by the polls' 100 ms).
func TestEvaluationOverlaps(t *testing.T) {
	at := time.Unix(1000, 0)
	long := []evaluation{{end: at, dur: time.Second}} // [999 s, 1000 s]
	for _, tc := range []struct {
		name string
		e    evaluation
		want bool
	}{
		{"inside", evaluation{end: at.Add(-300 * time.Millisecond), dur: 200 * time.Millisecond}, true},
		{"ends inside", evaluation{end: at.Add(-900 * time.Millisecond), dur: time.Second}, true},
		{"starts inside", evaluation{end: at.Add(time.Second), dur: 1500 * time.Millisecond}, true},
		{"well before", evaluation{end: at.Add(-2 * time.Second), dur: 500 * time.Millisecond}, false},
		{"well after", evaluation{end: at.Add(2 * time.Second), dur: 500 * time.Millisecond}, false},
		{"within the polls' slack after", evaluation{end: at.Add(550 * time.Millisecond), dur: 500 * time.Millisecond}, true},
	} {
		if got := tc.e.overlaps(long); got != tc.want {
			t.Errorf("%s: overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (evaluation{end: at, dur: time.Second}).overlaps(nil) {
		t.Error("an evaluation overlaps nothing when there is nothing")
	}
}
