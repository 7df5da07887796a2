package daemon

import (
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
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

// TestSpansFollowTheSteadyClockThroughAStep: vLLM stamps its spans with the
// wall clock, the daemon scrapes on its steady clock. The wall clock steps
// an hour forward; spans of requests finishing before and after the step
// are filed at the steady time they finished (where the scrapes see them),
// and none is refused as too new, because exact mode's store moves each
// span by steady − wall as it arrives. Without the move (a store on the
// wall clock's time line) the spans after the step land an hour off.
func TestSpansFollowTheSteadyClockThroughAStep(t *testing.T) {
	cfg, err := config.Parse([]byte("targets:\n  - name: gpu0\n    url: http://127.0.0.1:8000/metrics\notlp:\n  enabled: true\n  grpc_listen_address: 127.0.0.1:0\n  http_listen_address: 127.0.0.1:0\n"), "clock.yml")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var passed, step time.Duration
	wall := func() time.Time { return start.Add(passed + step) }
	clock := newSteadyClock(wall, func() time.Duration { return passed })
	e, err := exactFromConfig(cfg, slog.New(slog.DiscardHandler), clock)
	if err != nil {
		t.Fatal(err)
	}
	unmoved := traces.NewStore(traces.Limits{Retain: time.Hour, Now: clock.now})
	finish := func(id string) {
		// The request finishes now and its span arrives 2 s later.
		sp := traces.Span{Target: "gpu0", Model: "m", RequestID: id, End: wall(), TTFT: 0.1, E2E: 1, Queue: math.NaN(), Prefill: math.NaN(),
			Decode: math.NaN(), Inference: math.NaN(), PromptTokens: 10, CompletionTokens: 10, CachedTokens: -1}
		passed += 2 * time.Second
		if out := e.Store.Add([]traces.Span{sp}); out.Added != 1 {
			t.Fatalf("span %s: %+v", id, out)
		}
		unmoved.Add([]traces.Span{sp})
	}
	passed = 10 * time.Second
	finish("before")
	passed, step = 30*time.Second, time.Hour
	finish("after")
	for _, c := range []struct {
		from, to time.Duration
		want     int
	}{{0, 15 * time.Second, 1}, {15 * time.Second, 45 * time.Second, 1}, {0, 2 * time.Hour, 2}} {
		got := len(e.Store.Select("gpu0", "m", false, start.Add(c.from), start.Add(c.to)).All)
		if got != c.want {
			t.Errorf("(%v, %v] on the steady clock: %d spans, want %d", c.from, c.to, got, c.want)
		}
	}
	if n := len(unmoved.Select("gpu0", "m", false, start.Add(15*time.Second), start.Add(45*time.Second)).All); n != 0 {
		t.Errorf("the store on the wall clock's time line files %d spans after the step where they finished: the test no longer shows the step", n)
	}
}
