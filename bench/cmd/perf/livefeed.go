package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
)

// liveFeed imports a fleet into VictoriaMetrics the way a live engine
// receives it: the history up to the fleet's End in one import, then each
// later scrape (the fleet's Ahead) in its own import request once its time
// has come.
//
// Why not import the later scrapes with the history, ahead of the clock:
// VictoriaMetrics decodes whole blocks, and one import leaves each series'
// newest day in one block of thousands of samples, which every read of the
// last seconds then decodes; scrapes that arrive as their time comes sit in
// small recent parts until the engine's own merges move them, as in
// production.
type liveFeed struct {
	cancel  context.CancelFunc
	done    chan struct{}
	history chan error
	// err is the feed's end: nil, or why it stopped early; set before done
	// is closed.
	err error
	// historyLines is the number of samples of the history, set when it is
	// closed; fed is the newest scrape time imported, in milliseconds.
	historyLines, fed atomic.Int64
	// mu guards imports, the span of each scrape's import request.
	mu      sync.Mutex
	imports []evaluation
}

// startLiveFeed starts feeding f into the VictoriaMetrics at base.
func startLiveFeed(f bench.Fleet, base string) *liveFeed {
	ctx, cancel := context.WithCancel(context.Background())
	lf := &liveFeed{cancel: cancel, done: make(chan struct{}), history: make(chan error, 1)}
	pr, pw := io.Pipe()
	go func() {
		lf.history <- postImport(ctx, base, pr)
		// A failed import stops the writer rather than blocking it.
		pr.CloseWithError(errors.New("the history's import ended"))
	}()
	go func() {
		defer close(lf.done)
		_, err := f.WriteImportLive(bench.LiveImport{
			History: &lineCounter{w: pw, lines: &lf.historyLines},
			Scrape: func(at time.Time, body []byte) error {
				if err := sleepUntil(ctx, at); err != nil {
					return err
				}
				began := time.Now()
				if err := postImport(ctx, base, bytes.NewReader(body)); err != nil {
					return fmt.Errorf("the scrape at %s: %w", at.Format(time.TimeOnly), err)
				}
				lf.record(evaluation{end: time.Now(), dur: time.Since(began)})
				lf.fed.Store(at.UnixMilli())
				return nil
			},
		})
		pw.CloseWithError(err)
		lf.err = err
	}()
	return lf
}

// record keeps one scrape import's span.
func (lf *liveFeed) record(e evaluation) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.imports = append(lf.imports, e)
}

// importSpans are the spans of the scrape imports so far.
func (lf *liveFeed) importSpans() []evaluation {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return slices.Clone(lf.imports)
}

// waitHistory waits for the history's import to be answered and returns
// the number of its samples.
func (lf *liveFeed) waitHistory() (int, error) {
	if err := <-lf.history; err != nil {
		return 0, fmt.Errorf("the history's import: %w", err)
	}
	return int(lf.historyLines.Load()), nil
}

// caughtUp reports whether the feed has imported the scrape of the last
// two intervals.
func (lf *liveFeed) caughtUp() (bool, error) {
	select {
	case <-lf.done:
		return false, fmt.Errorf("the live feed stopped: %v", lf.err)
	default:
	}
	return time.Since(time.UnixMilli(lf.fed.Load())) <= 2*bench.Interval, nil
}

// stop ends the feed and reports whether it ran without error until then.
func (lf *liveFeed) stop() error {
	lf.cancel()
	<-lf.done
	if lf.err != nil && !errors.Is(lf.err, context.Canceled) {
		return fmt.Errorf("live feed: %w", lf.err)
	}
	return nil
}

// sleepUntil waits until at, or until ctx ends.
func sleepUntil(ctx context.Context, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postImport sends body to VictoriaMetrics' /api/v1/import/prometheus.
func postImport(ctx context.Context, base string, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/import/prometheus", body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("import: %s: %s", resp.Status, b)
	}
	return nil
}

// lineCounter passes writes to w, counting their newlines (one per
// sample), and stores the count in lines when closed.
type lineCounter struct {
	w     io.WriteCloser
	n     int64
	lines *atomic.Int64
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return c.w.Write(p)
}

func (c *lineCounter) Close() error {
	c.lines.Store(c.n)
	return c.w.Close()
}
