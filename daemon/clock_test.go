package daemon

import (
	"testing"
	"time"
)

// TestSteadyClockIgnoresSteps: the system clock steps an hour forward, then
// back. Scrape times stamped with it would go back an hour, and the history
// would refuse every scrape of that hour (counted below as the regression
// this clock fixes); the daemon's clock moves on by exactly the time that
// passed, 15 s per scrape, through both steps.
func TestSteadyClockIgnoresSteps(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var passed, step time.Duration // monotonic time passed; the system clock's step
	wall := func() time.Time { return start.Add(passed + step) }
	clock := newSteadyClock(wall, func() time.Duration { return passed })

	const scrapes = 600
	var newestWall, prev time.Time
	refusedByWall := 0
	for i := range scrapes {
		switch i {
		case 100:
			step = time.Hour
		case 200:
			step = 0
		}
		got := clock.now()
		if want := start.Add(passed); !got.Equal(want) {
			t.Fatalf("scrape %d stamped %v, want %v (start plus the time passed)", i, got, want)
		}
		if i > 0 && got.Sub(prev) != 15*time.Second {
			t.Fatalf("scrape %d stamped %v after the previous one, want 15s", i, got.Sub(prev))
		}
		prev = got
		if w := wall(); !w.After(newestWall) {
			refusedByWall++
		} else {
			newestWall = w
		}
		passed += 15 * time.Second
	}
	// The regression: with the system clock, every scrape of the hour after
	// the step back is at or before the newest stamp (240 at 15 s).
	if refusedByWall != 240 {
		t.Fatalf("the stepping wall clock refuses %d scrapes, want 240: the test no longer reproduces the step", refusedByWall)
	}
}

// TestSteadyClockIsWallClockAtStart: with no step the daemon's clock is the
// system clock, and it carries no monotonic reading of its own (times
// compare by their wall value, as restored history times do).
func TestSteadyClockIsWallClockAtStart(t *testing.T) {
	before := time.Now()
	c := newSteadyClock(time.Now, nil)
	got := c.now()
	after := time.Now()
	if got.Before(before.Round(0)) || got.After(after.Round(0)) {
		t.Errorf("clock read %v, outside [%v, %v]", got, before, after)
	}
	if got != got.Round(0) {
		t.Errorf("clock reading %v carries a monotonic reading", got)
	}
}
