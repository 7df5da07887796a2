package scrape

import (
	"context"
	"hash/fnv"
	"time"
)

// Result is the outcome of one scrape of a target, handed to a Loop's sink.
type Result struct {
	Target string
	// Time is when the scrape started.
	Time time.Time
	// Duration is how long fetching and parsing took.
	Duration time.Duration
	// Snapshot is set on success.
	Snapshot *Snapshot
	// Err is set on failure; FailureReason(Err) classifies it.
	Err error
}

// Loop scrapes one target on its interval, never overlapping itself: a scrape
// that outlives its interval delays the next one instead of running beside it.
// Each target's loop runs in its own goroutine, so one slow target never delays
// another.
type Loop struct {
	Target   string
	Fetcher  *Fetcher
	Profile  Profile
	Interval time.Duration
	Timeout  time.Duration
	// Now returns the current time; time.Now in the daemon.
	Now func() time.Time
}

// Offset spreads targets over the interval deterministically by name, as
// Prometheus does, so that a fleet is not scraped in one burst: it is where in
// every interval the target's scrapes fall, the first one included.
func (l *Loop) Offset() time.Duration {
	if l.Interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(l.Target))
	return time.Duration(h.Sum64() % uint64(l.Interval))
}

// Run waits the loop's offset, then scrapes once per interval until ctx
// ends; every result goes to sink, which must not block for long.
//
// The offset comes first, as in Prometheus's scrape loop: targets started
// together (a daemon's start, a reload) then begin at their own offsets
// instead of all at once, so the first round is spread like every later
// one. The price is a first scrape up to one interval after the start.
func (l *Loop) Run(ctx context.Context, sink func(Result)) {
	l.run(ctx, l.Once, sink)
}

// run is Run with the scrape itself given as once.
func (l *Loop) run(ctx context.Context, once func(context.Context) Result, sink func(Result)) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(l.Offset()):
	}
	tick := time.NewTicker(l.Interval)
	defer tick.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		sink(once(ctx))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Once performs one scrape with the loop's timeout.
func (l *Loop) Once(ctx context.Context) Result {
	start := l.Now()
	sctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	snap, _, err := l.Fetcher.Scrape(sctx, l.Profile, start)
	return Result{Target: l.Target, Time: start, Duration: l.Now().Sub(start), Snapshot: snap, Err: err}
}
