package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

type recordOptions struct {
	url, target, out            string
	duration, interval, timeout time.Duration
}

// runRecord scrapes one URL at an interval for a duration and saves every
// scrape, failures included, with its time. Ctrl-C ends it early and keeps
// what was recorded.
func runRecord(logger *slog.Logger, o recordOptions) int {
	if o.duration <= 0 || o.interval <= 0 || o.timeout <= 0 {
		return fail(logger, "record", fmt.Errorf("--duration, --interval and --timeout must be positive (got %v, %v, %v)", o.duration, o.interval, o.timeout))
	}
	// Stay under the recording's line limit even when JSON escapes the body.
	f, err := scrape.NewFetcher(o.target, o.url, commoncfg.DefaultHTTPClientConfig, o.timeout, recording.MaxLineBytes/4)
	if err != nil {
		return fail(logger, "record", err)
	}
	w, err := recording.Create(o.out)
	if err != nil {
		return fail(logger, "record", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	n := 0
	for {
		e := recordOnce(ctx, f, o)
		if ctx.Err() != nil {
			// The recording ended during this scrape: it is not a failure of
			// the target, so it is not recorded as one.
			if err := w.Close(); err != nil {
				return fail(logger, "record", err)
			}
			logger.Info("recording written", "file", o.out, "scrapes", n)
			return 0
		}
		if err := w.Write(e); err != nil {
			w.Close()
			return fail(logger, "record", err)
		}
		n++
		select {
		case <-ctx.Done():
			if err := w.Close(); err != nil {
				return fail(logger, "record", err)
			}
			logger.Info("recording written", "file", o.out, "scrapes", n)
			return 0
		case <-tick.C:
		}
	}
}

func recordOnce(ctx context.Context, f *scrape.Fetcher, o recordOptions) recording.Entry {
	sctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	at := time.Now()
	resp, err := f.Fetch(sctx)
	e := recording.Entry{Time: at, Target: o.target, Status: resp.Status}
	if err != nil {
		e.Error = err.Error()
		return e
	}
	e.ContentType = resp.ContentType
	e.Body = string(resp.Body)
	return e
}
