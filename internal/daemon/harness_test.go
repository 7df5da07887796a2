package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

// The daemon's tests run inside synctest bubbles: time is virtual (a 15 s
// scrape interval costs nothing), and every connection is an in-memory pipe,
// so a goroutine waiting on one is durably blocked and synctest.Wait returns
// once everything has settled. synctest.Test fails a test that leaves a
// goroutine behind, which is how "all joined on shutdown" is checked.

// advance lets virtual time pass by d, then waits for every goroutine of the
// bubble to settle.
func advance(d time.Duration) {
	<-time.After(d)
	synctest.Wait()
}

// bubbleGoroutines counts the goroutines of the caller's synctest bubble,
// the caller included, from the runtime's own goroutine headers ("[select
// (durable), synctest bubble 3]"). Goroutines outside the bubble, such as
// the runtime's finalizer goroutine, do not count, so the figure depends on
// the daemon alone.
func bubbleGoroutines() int {
	self := string(stacks(false))
	i := strings.Index(self, ", synctest bubble ")
	j := strings.Index(self, "]:")
	if i < 0 || j < i {
		panic("bubbleGoroutines called outside a synctest bubble")
	}
	return strings.Count(string(stacks(true)), self[i:j+1])
}

// stacks is runtime.Stack with a buffer large enough for every goroutine.
func stacks(all bool) []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// memNet is an in-memory network: servers listen on a host:port, and dial
// connects to them through net.Pipe.
type memNet struct {
	mu        sync.Mutex
	listeners map[string]*memListener
}

func newMemNet() *memNet { return &memNet{listeners: map[string]*memListener{}} }

// listen returns a listener for addr.
func (n *memNet) listen(addr string) *memListener {
	l := &memListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.listeners[addr] = l
	return l
}

// dial connects to the listener of addr; a missing or closed one refuses.
func (n *memNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memListener struct {
	addr   string
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr(l.addr) }

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// fakeTarget is a simulated vLLM served on the memNet; it remembers when it
// was scraped.
type fakeTarget struct {
	host string
	srv  *http.Server

	mu      sync.Mutex
	scrapes []time.Time
}

// serveTarget starts a "steady" simulator at host:80, stopped when the test
// ends.
func serveTarget(t *testing.T, n *memNet, host string) *fakeTarget {
	t.Helper()
	cfg, err := sim.Preset("steady", 7, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTarget{host: host}
	h := s.Handler(time.Now)
	ft.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ft.mu.Lock()
		ft.scrapes = append(ft.scrapes, time.Now())
		ft.mu.Unlock()
		r.Header.Del("Accept-Encoding") // plain text: compression would only cost time here
		h.ServeHTTP(w, r)
	})}
	l := n.listen(host + ":80")
	go ft.srv.Serve(l)
	t.Cleanup(func() { ft.srv.Close() })
	return ft
}

// url is the target's /metrics URL.
func (ft *fakeTarget) url() string { return "http://" + ft.host + ":80/metrics" }

// scrapedAt returns the times it was scraped.
func (ft *fakeTarget) scrapedAt() []time.Time {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return slices.Clone(ft.scrapes)
}

// scrapedSince counts the scrapes at or after from.
func (ft *fakeTarget) scrapedSince(from time.Time) int {
	n := 0
	for _, at := range ft.scrapedAt() {
		if !at.Before(from) {
			n++
		}
	}
	return n
}

// testConfig is a daemon configuration; targets are "name url [extra
// target yaml]" entries, extra is appended at the top level.
func testConfig(targets []string, extra string) string {
	var b strings.Builder
	b.WriteString(`global:
  scrape_interval: 15s
  scrape_timeout: 10s
  evaluation_interval: 15s
  state_save_interval: 1h
  windows: [1m, 5m, 1h]
targets:
`)
	for _, t := range targets {
		f := strings.SplitN(t, " ", 3)
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n", f[0], f[1])
		if len(f) == 3 {
			fmt.Fprintf(&b, "    %s\n", f[2])
		}
	}
	b.WriteString(`slos:
  - name: interactive
    objectives: {ttft: 500ms}
    goal: 0.99
    period: 1d
`)
	b.WriteString(extra)
	return b.String()
}

// rig is a daemon running in the test's bubble.
type rig struct {
	t       *testing.T
	d       *Daemon
	net     *memNet
	file    string
	log     *testlog.Buffer
	signals chan os.Signal
	result  chan error // Run's return value
	web     *http.Client
	served  chan struct{} // closed when the HTTP server has returned
}

// startRig writes cfg and runs a daemon on it, with its HTTP server at
// daemon:80 on n; it waits until every goroutine has settled (the first
// scrapes done). The daemon is stopped when the test ends, if still running.
func startRig(t *testing.T, n *memNet, cfg string) *rig {
	t.Helper()
	r := &rig{t: t, net: n, log: &testlog.Buffer{}, signals: make(chan os.Signal, 1), result: make(chan error, 1), served: make(chan struct{})}
	r.file = filepath.Join(t.TempDir(), "config.yaml")
	r.write(cfg)
	ln := n.listen("daemon:80")
	d, err := New(Options{
		ConfigFile: r.file,
		Logger:     slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Serve: func(srv *http.Server) error {
			defer close(r.served)
			return srv.Serve(ln)
		},
		Signals:         r.signals,
		EnableLifecycle: true,
		Dial:            n.dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	r.web = &http.Client{Transport: &http.Transport{DialContext: n.dial}}
	go func() { r.result <- d.Run(context.Background()) }()
	t.Cleanup(func() {
		r.web.CloseIdleConnections()
		select {
		case <-r.served:
		default:
			r.stop(syscall.SIGTERM)
		}
	})
	synctest.Wait()
	return r
}

// write replaces the configuration file.
func (r *rig) write(cfg string) {
	r.t.Helper()
	if err := os.WriteFile(r.file, []byte(cfg), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// stop sends sig and returns Run's result.
func (r *rig) stop(sig os.Signal) error {
	r.signals <- sig
	return <-r.result
}

// report is the daemon's latest report.
func (r *rig) report() *pipeline.Report {
	r.t.Helper()
	rep := r.d.report.Load()
	if rep == nil {
		r.t.Fatal("no report yet")
	}
	return rep
}

// targetReport returns the named target's part of the latest report.
func (r *rig) targetReport(name string) pipeline.TargetReport {
	r.t.Helper()
	for _, tr := range r.report().Targets {
		if tr.Name == name {
			return tr
		}
	}
	r.t.Fatalf("target %q not in the report", name)
	return pipeline.TargetReport{}
}

// windowStart is where the target's longest window starts: the oldest point
// of its history within the hour.
func (r *rig) windowStart(name string) time.Time {
	r.t.Helper()
	tr := r.targetReport(name)
	if len(tr.Models) == 0 || len(tr.Models[0].Windows) == 0 {
		r.t.Fatalf("target %q has no window yet", name)
	}
	ws := tr.Models[0].Windows
	return ws[len(ws)-1].Window.Start
}

// do sends a request to the daemon's HTTP server and returns the status and
// body.
func (r *rig) do(method, path string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, "http://daemon:80"+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	resp, err := r.web.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil && !errors.Is(err, net.ErrClosed) {
		r.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b.String()
}
