package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
)

type recordOptions struct {
	url, target, out            string
	duration, interval, timeout time.Duration
}

// runRecord scrapes one URL at an interval for a duration and saves every
// scrape, failures included, with its time. Ctrl-C ends it early and keeps
// what was recorded.
func runRecord(logger *slog.Logger, o recordOptions) int {
	sched := recording.Schedule{Duration: o.duration, Interval: o.interval}
	if err := sched.Validate(); err != nil {
		return fail(logger, "record", err)
	}
	if o.timeout <= 0 {
		return fail(logger, "record", fmt.Errorf("--timeout must be positive (got %v)", o.timeout))
	}
	scr, err := recording.HTTPScraper(o.target, o.url, o.timeout)
	if err != nil {
		return fail(logger, "record", err)
	}
	w, err := recording.Create(o.out)
	if err != nil {
		return fail(logger, "record", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var outcome recording.Outcome
	write := func(e recording.Entry) error {
		outcome.Add(e)
		return w.Write(e)
	}
	n, err := recording.Record(ctx, scr, sched, recording.WallClock{}, write)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(logger, "record", err)
	}
	logger.Info("recording written", "file", o.out, "scrapes", n)
	if err := outcome.Err(); err != nil {
		return fail(logger, "record: nothing usable was recorded", err)
	}
	return 0
}
