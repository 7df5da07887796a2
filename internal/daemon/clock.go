package daemon

import (
	"sync"
	"time"
)

// steadyClock gives the daemon's scrape and evaluation times: the wall clock
// read once, at start, plus the time elapsed since on the monotonic clock.
//
// Why: the history refuses a point older than its newest, so timestamps that
// follow the system clock through a step forward then back (an NTP
// correction, a VM resumed, an operator's date command) would refuse every
// scrape until the clock caught up with the step, an hour of lost scrapes
// for a one-hour step; and a step forward alone would stretch every window
// that spans it. Monotonic time never steps, so scrape times always
// increase, by exactly the time that really passed.
//
// The price: a clock that was wrong when the daemon started stays wrong by
// the same amount in its timestamps until the daemon restarts (NTP's slow
// frequency corrections still apply, as they also slew the monotonic
// clock). The exporter publishes windows and rates, which depend on
// differences between timestamps, so an offset costs nothing there; a
// restarted daemon reads the wall clock again, and a history restored from
// the state file accepts scrapes once they are past its newest point.
type steadyClock struct {
	// wall is the wall clock itself, read again by exact mode to move the
	// spans' wall-clock end times onto the steady clock's time line.
	wall    func() time.Time
	mu      sync.Mutex
	start   time.Time            // the wall clock at start, without its monotonic reading
	elapsed func() time.Duration // time since start on the monotonic clock
}

// newSteadyClock reads wall now; elapsed measures from that moment on.
// newSteadyClock(time.Now, nil) is the daemon's clock; tests pass a wall
// clock that steps and an elapsed function of their own.
func newSteadyClock(wall func() time.Time, elapsed func() time.Duration) *steadyClock {
	origin := wall()
	if elapsed == nil {
		elapsed = func() time.Duration { return time.Since(origin) }
	}
	return &steadyClock{wall: wall, start: origin.Round(0), elapsed: elapsed}
}

// now returns the start's wall time plus the monotonic time elapsed since.
func (c *steadyClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(c.elapsed())
}
