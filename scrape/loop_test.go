package scrape

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLoopWaitsItsOffsetFirst starts two loops together on a virtual clock:
// each one's first scrape lands at its own offset, not at the start, and the
// next one an interval later, so targets started together are spread over the
// interval from their first round on.
func TestLoopWaitsItsOffsetFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 15 * time.Second
		loops := []*Loop{{Target: "gpu-0", Interval: interval}, {Target: "gpu-1", Interval: interval}}
		if a, b := loops[0].Offset(), loops[1].Offset(); a == 0 || b == 0 || a == b {
			t.Fatalf("offsets %v and %v: the test wants two distinct, non-zero ones", a, b)
		}
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		got := map[string][]time.Duration{}
		var wg sync.WaitGroup
		for _, l := range loops {
			once := func(context.Context) Result { return Result{Target: l.Target, Time: time.Now()} }
			sink := func(r Result) {
				mu.Lock()
				defer mu.Unlock()
				got[r.Target] = append(got[r.Target], r.Time.Sub(start))
			}
			wg.Go(func() { l.run(ctx, once, sink) })
		}
		time.Sleep(2 * interval)
		cancel()
		wg.Wait()
		for _, l := range loops {
			want := []time.Duration{l.Offset(), l.Offset() + interval}
			if !slices.Equal(got[l.Target], want) {
				t.Errorf("%s: scrapes at %v after the start, want %v (its offset, then one interval later)", l.Target, got[l.Target], want)
			}
		}
	})
}
