package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
)

// liveTargets serves a fleet's scrapes after its history the way its vLLM
// servers would, for Prometheus to scrape: target i at /t/<i>/metrics,
// its latest scrape whose time has come, in the text format without
// timestamps (Prometheus stamps each sample at its own scrape, spreading
// the targets over the interval as it does in production).
//
// Why scraped rather than backfilled: Prometheus's TSDB takes backfilled
// blocks only before its head, so the scrapes after the history (the
// newest seconds, which the per-server rules read at every evaluation)
// reach it live or not at all; without them those rules read nothing and
// cost little.
type liveTargets struct {
	ln     net.Listener
	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	// err is why the walk stopped early (nil, or context.Canceled when
	// stopped); set before done is closed.
	err error
	// served is the server's end: why it stopped serving, once.
	served chan error
	// mu guards pages, each target's latest scrape (nil before its first).
	mu    sync.RWMutex
	pages [][]byte
}

// startLiveTargets listens on 127.0.0.1 and starts walking f (its history
// discarded, then its scrapes after End, each published once its time has
// come).
func startLiveTargets(f bench.Fleet) (*liveTargets, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("live targets: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lt := &liveTargets{ln: ln, cancel: cancel, done: make(chan struct{}), served: make(chan error, 1), pages: make([][]byte, f.Targets)}
	lt.srv = &http.Server{Handler: lt, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		err := lt.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		lt.served <- err
		cancel()
	}()
	go func() {
		defer close(lt.done)
		_, err := f.WriteImportLive(bench.LiveImport{
			History: nopWriteCloser{io.Discard},
			Scrape: func(at time.Time, body []byte) error {
				if err := sleepUntil(ctx, at); err != nil {
					return err
				}
				return lt.publish(body)
			},
		})
		lt.err = err
	}()
	return lt, nil
}

// nopWriteCloser is an io.WriteCloser whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// publish makes the scrapes in body (import lines, see
// bench.Fleet.WriteImportLive) each target's latest.
func (lt *liveTargets) publish(body []byte) error {
	pages, err := pagesByTarget(body, len(lt.pages))
	if err != nil {
		return err
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for i, p := range pages {
		if p != nil {
			lt.pages[i] = p
		}
	}
	return nil
}

// pagesByTarget splits import lines (`series value timestamp`) by their
// instance label, t<i> for target i of n, into each target's page of
// `series value` lines; lines without an instance label (the rules'
// recorded series, which Prometheus records itself) are left out.
func pagesByTarget(body []byte, n int) ([][]byte, error) {
	pages := make([][]byte, n)
	marker := []byte(`instance="t`)
	for line := range bytes.Lines(body) {
		j := bytes.Index(line, marker)
		if j < 0 {
			continue
		}
		rest := line[j+len(marker):]
		end := bytes.IndexByte(rest, '"')
		i, err := strconv.Atoi(string(rest[:max(end, 0)]))
		if end < 0 || err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("live targets: no target of %d in %q", n, line)
		}
		sp := bytes.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("live targets: no timestamp in %q", line)
		}
		pages[i] = append(append(pages[i], line[:sp]...), '\n')
	}
	return pages, nil
}

// ServeHTTP serves /t/<i>/metrics: target i's latest scrape, 503 before
// its first.
func (lt *liveTargets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	idx, ok := strings.CutPrefix(r.URL.Path, "/t/")
	idx, ok2 := strings.CutSuffix(idx, "/metrics")
	i, err := strconv.Atoi(idx)
	if !ok || !ok2 || err != nil || i < 0 || i >= len(lt.pages) {
		http.NotFound(w, r)
		return
	}
	lt.mu.RLock()
	page := lt.pages[i]
	lt.mu.RUnlock()
	if page == nil {
		http.Error(w, "no scrape yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write(page)
}

// scrapeConfig is the Prometheus scrape_configs section that scrapes
// every target every 15 s, each with the instance and job labels its
// history's series carry.
func (lt *liveTargets) scrapeConfig() string {
	var b strings.Builder
	b.WriteString("scrape_configs:\n  - job_name: vllm\n    honor_labels: true\n    scrape_interval: 15s\n    static_configs:\n")
	for i := range lt.pages {
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {__metrics_path__: /t/%d/metrics, instance: t%d}\n", lt.ln.Addr().String(), i, i)
	}
	return b.String()
}

// stop ends the walk and the server, and reports whether both ran
// without error until then.
func (lt *liveTargets) stop() error {
	lt.cancel()
	<-lt.done
	lt.srv.Close()
	var err error
	if serr := <-lt.served; serr != nil {
		err = fmt.Errorf("live targets: serve: %w", serr)
	}
	if lt.err != nil && !errors.Is(lt.err, context.Canceled) {
		err = errors.Join(err, fmt.Errorf("live targets: %w", lt.err))
	}
	return err
}
