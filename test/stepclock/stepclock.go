// Package stepclock holds a clock that never waits, for the tests of the
// packages that take a recording.Clock (recording, benchreport): a schedule
// then runs at full speed in simulated time. It is test harness: no product
// package imports it.
package stepclock

import (
	"sync"
	"time"
)

// Clock is a recording.Clock that never waits: After moves it on by the
// whole wait at once. A schedule then runs at full speed in simulated time,
// against a simulated server that reads the same clock. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After moves the clock on by d and delivers the new time at once.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ready := make(chan time.Time, 1)
	ready <- c.Advance(d)
	return ready
}

// Advance moves the clock on by d, as time spent by a scrape, and returns
// the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
