package recording

import (
	"context"
	"fmt"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// Clock is where a recording's time comes from: the wall clock for the
// record and report commands, a fake one in tests, so that a schedule can be
// checked without waiting for it.
type Clock interface {
	// Now stamps each scrape and places it in the schedule.
	Now() time.Time
	// After delivers once d has passed.
	After(d time.Duration) <-chan time.Time
}

// WallClock is the system clock.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// After is time.After.
func (WallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Scraper takes one scrape of a target now. A failed scrape is an entry with
// Error set, not an error: a recording keeps failures with their times. The
// recorder stamps the entry's Time.
type Scraper func(ctx context.Context) Entry

// maxBodyBytes bounds one scraped body. It is a quarter of MaxLineBytes: JSON
// at most doubles exposition text (valid UTF-8 whose only control characters
// are newlines and tabs), so its line stays under the reader's limit; a body
// that escapes worse is refused by the reader with the line's number.
const maxBodyBytes = MaxLineBytes / 4

// HTTPScraper scrapes url with the daemon's fetcher (package scrape: the
// same Accept header, gzip, timeout and body limit) and records the
// response, or the failure with the HTTP status when one arrived, under the
// target name.
func HTTPScraper(target, url string, timeout time.Duration) (Scraper, error) {
	f, err := scrape.NewFetcher(target, url, commoncfg.DefaultHTTPClientConfig, timeout, maxBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	return func(ctx context.Context) Entry {
		resp, err := f.Fetch(ctx)
		e := Entry{Target: target, Status: resp.Status}
		if err != nil {
			e.Error = err.Error()
			return e
		}
		e.ContentType, e.Body = resp.ContentType, string(resp.Body)
		return e
	}, nil
}

// Schedule is when a recording scrapes: at once, then at every multiple of
// Interval from the start, and once more at the end of Duration when that
// is not itself a multiple, so that the scrapes cover all of Duration.
type Schedule struct {
	Duration, Interval time.Duration
}

// Validate reports whether the schedule can run.
func (s Schedule) Validate() error {
	if s.Duration <= 0 || s.Interval <= 0 {
		return fmt.Errorf("recording: duration %s and interval %s must be positive", s.Duration, s.Interval)
	}
	return nil
}

// next is the first scrape time of the schedule after now, for a schedule
// that started at start; it is end when no slot is left before it. A scrape
// that overran one or more slots skips them, as a ticker drops its ticks.
func (s Schedule) next(start, now time.Time) time.Time {
	slots := now.Sub(start)/s.Interval + 1
	return minTime(start.Add(slots*s.Interval), start.Add(s.Duration))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Record scrapes on the schedule, stamps each scrape with the clock's time
// when it began, and hands the entries to save in order; it returns how
// many were saved. It ends after the scrape at the end of the schedule (so
// it runs for Duration plus one scrape), at the first error of save, or
// early and without error when ctx ends: a scrape cut short by ctx is not
// saved, since it is not a failure of the target.
func Record(ctx context.Context, scrapeNow Scraper, sched Schedule, clock Clock, save func(Entry) error) (int, error) {
	if err := sched.Validate(); err != nil {
		return 0, err
	}
	start := clock.Now()
	end := start.Add(sched.Duration)
	saved := 0
	for {
		at := clock.Now()
		e := scrapeNow(ctx)
		if ctx.Err() != nil {
			return saved, nil
		}
		e.Time = at
		if err := save(e); err != nil {
			return saved, fmt.Errorf("recording: save the scrape of %s: %w", at.Format(time.RFC3339Nano), err)
		}
		saved++
		now := clock.Now()
		if !now.Before(end) {
			return saved, nil
		}
		select {
		case <-ctx.Done():
			return saved, nil
		case <-clock.After(sched.next(start, now).Sub(now)):
		}
	}
}
