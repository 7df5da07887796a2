package reliability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// stormDaemon is a real daemon in this process, serving on a loopback port,
// scraping one simulated vLLM that counts its scrapes.
type stormDaemon struct {
	base    string // http://127.0.0.1:PORT
	scrapes atomic.Int64
	stop    func() error
}

// startStormDaemon runs a daemon scraping a "steady" simulator every
// interval, and waits until it is ready.
func startStormDaemon(t *testing.T, interval time.Duration) (*stormDaemon, string) {
	t.Helper()
	sd := &stormDaemon{}
	s := newSim(t, "steady", 3, time.Now())
	preset, err := sim.Preset("steady", 3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	model := preset.Models[0].Name
	h := s.Handler(time.Now)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sd.scrapes.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(target.Close)
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: %s
  windows: [1m, 5m]
targets:
  - name: a
    url: %s/metrics
slos:
  - name: interactive
    objectives: {ttft: 500ms}
    goal: 0.99
    period: 1h
`, interval, interval, interval, target.URL)
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(daemon.Options{ConfigFile: file, Logger: slog.New(slog.DiscardHandler), Serve: func(srv *http.Server) error { return srv.Serve(ln) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- d.Run(ctx) }()
	sd.base = "http://" + ln.Addr().String()
	sd.stop = func() error { cancel(); return <-result }
	waitUntil(t, 10*time.Second, "the daemon ready", func() bool {
		resp, err := http.Get(sd.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return sd, model
}

// waitUntil polls cond every 10 ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// connGoroutines counts the goroutines of HTTP connections in this
// process: the server's, one per connection (net/http.(*conn).serve), and
// the clients', two per kept-alive connection (persistConn's readLoop and
// writeLoop).
func connGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*conn).serve") || strings.Contains(g, "net/http.(*persistConn).") {
			count++
		}
	}
	return count
}

// heapInUse is the Go heap in use, after a collection when gc is set.
func heapInUse(gc bool) uint64 {
	if gc {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestClientStorm: many clients hammer every endpoint of a real daemon on
// loopback for a while (100 clients for 3 s; with -soak.long 500 for 20 s).
// Every answer is a 200 or, beyond an endpoint's cap, an immediate 503; the
// probes always answer 200; the console refuses some of the 500 (it has a
// cap); the heap stays bounded; and the scrape loop keeps its cadence: the
// target is scraped at least half the times its interval allows during the
// storm (a scrape loop starved by the crowd would fall far behind).
func TestClientStorm(t *testing.T) {
	clients, length := 100, 3*time.Second
	if *soakLong {
		clients, length = 500, 20*time.Second
	}
	const interval = 500 * time.Millisecond
	sd, model := startStormDaemon(t, interval)
	paths := []string{
		"/", "/metrics", "/config", "/-/healthy", "/-/ready",
		"/slo?target=a&model=" + model + "&slo=interactive&range=1h",
		"/api/series?target=a&model=" + model + "&slo=interactive&range=1h",
	}
	baseHeap := heapInUse(true)
	baseConns := connGoroutines()
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	type tally struct {
		mu    sync.Mutex
		codes map[string]map[int]int // path -> status -> count
		errs  []error
	}
	got := &tally{codes: map[string]map[int]int{}}
	record := func(path string, code int, err error) {
		got.mu.Lock()
		defer got.mu.Unlock()
		if err != nil {
			got.errs = append(got.errs, err)
			return
		}
		if got.codes[path] == nil {
			got.codes[path] = map[int]int{}
		}
		got.codes[path][code]++
	}
	var peakHeap atomic.Uint64
	scrapesBefore := sd.scrapes.Load()
	start := time.Now()
	end := start.Add(length)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n := i; time.Now().Before(end); n++ {
				path := paths[n%len(paths)]
				resp, err := client.Get(sd.base + path)
				if err != nil {
					record(path, 0, err)
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				record(path, resp.StatusCode, err)
			}
		})
	}
	// Sample the heap through the storm (without forcing collections, so
	// the figure is what the process really holds at its peak).
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for time.Now().Before(end) {
			peakHeap.Store(max(peakHeap.Load(), heapInUse(false)))
			<-tick.C
		}
	}()
	wg.Wait()
	<-sampled
	elapsed := time.Since(start)
	scrapes := sd.scrapes.Load() - scrapesBefore

	total, rejected, consoleRejected := 0, 0, 0
	for path, codes := range got.codes {
		for code, n := range codes {
			total += n
			switch {
			case code == http.StatusOK:
			case code == http.StatusServiceUnavailable && path != "/-/healthy" && path != "/-/ready":
				rejected += n
				if path != "/metrics" && path != "/config" {
					consoleRejected += n
				}
			default:
				t.Errorf("GET %s answered %d %d times", path, code, n)
			}
		}
	}
	if len(got.errs) > 0 {
		t.Errorf("%d requests failed, e.g. %v", len(got.errs), got.errs[0])
	}
	// Whether the short crowd fills the console's slots depends on the
	// machine (under -race it is too slow to); the long one always does.
	// exporter's TestPagesCapped proves the cap itself.
	if *soakLong && consoleRejected == 0 {
		t.Errorf("no console request was refused over a cap: the console has no cap, or the crowd of %d did not reach it", clients)
	}
	// The floor of scrapes is loose (half the schedule) because the
	// machine is shared and the crowd runs in this very process; a starved
	// loop misses most of them.
	if want := int64(elapsed / interval / 2); scrapes < want {
		t.Errorf("%d scrapes in %v of storm, want at least %d (interval %v)", scrapes, elapsed.Round(time.Millisecond), want, interval)
	}
	const heapBound = 128 << 20
	if peak := peakHeap.Load(); peak > baseHeap+heapBound {
		t.Errorf("heap in use peaked at %d MiB during the storm, %d MiB before: more than %d MiB above", peak>>20, baseHeap>>20, heapBound>>20)
	}
	t.Logf("codes %v", got.codes)
	t.Logf("%d clients × %v: %d requests (%d refused by a cap), %d scrapes at %v (schedule %d), heap %d MiB before, peak %d MiB",
		clients, elapsed.Round(time.Millisecond), total, rejected, scrapes, interval, int64(elapsed/interval), baseHeap>>20, peakHeap.Load()>>20)

	// Once the crowd has gone, its connections and their goroutines go
	// too: the daemon's side of each (net/http's conn.serve) and the
	// crowd's (a persistConn's read and write loops). Only those are
	// counted: the live daemon's scrapes and evaluations start goroutines
	// of their own all along, and on a loaded machine there may be no
	// instant without one.
	transport.CloseIdleConnections()
	waitUntil(t, 30*time.Second, "the connections of the storm to end", func() bool {
		return connGoroutines() <= baseConns
	})
	if err := sd.stop(); err != nil {
		t.Errorf("daemon: %v", err)
	}
}
