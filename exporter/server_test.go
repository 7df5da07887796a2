package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestReloadRefusesCrossSite: POST /-/reload from another site (a form or a
// fetch on a page of http://evil.example, as the browser marks it) is
// refused with 403 and reloads nothing; the same request from a tool (no
// browser headers) or from our own origin reloads (a browser's own origin
// must be an address: TestReloadRefusesRebinding).
func TestReloadRefusesCrossSite(t *testing.T) {
	reloads := 0
	h := NewHandler(Endpoints{Report: func() *pipeline.Report { return nil }, Reload: func(context.Context) error { reloads++; return nil }})
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cross-origin Origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"cross-site form with credentials", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded", "Authorization": "Basic dTpw"}, http.StatusForbidden},
		{"curl", nil, http.StatusOK},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:10042"}, http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:10042/-/reload", strings.NewReader("a=b"))
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		before := reloads
		rec := serve(h, req)
		if rec.Code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, rec.Code, c.want)
		}
		if did := reloads - before; (c.want == http.StatusOK) != (did == 1) {
			t.Errorf("%s: %d reloads", c.name, did)
		}
	}
}

// TestLifecycleOff: without a reload function POST /-/reload answers 403.
func TestLifecycleOff(t *testing.T) {
	h := NewHandler(Endpoints{Report: func() *pipeline.Report { return nil }})
	if rec := serve(h, httptest.NewRequest(http.MethodPost, "/-/reload", nil)); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "--web.enable-lifecycle") {
		t.Errorf("POST /-/reload with the lifecycle API off: %d %q, want 403 naming the flag", rec.Code, rec.Body)
	}
}

// TestPagesCapped: while MaxPagesInFlight console pages are being rendered
// (held here inside the report source), one more is answered 503 at once,
// with Retry-After, while /-/healthy and /-/ready still answer 200; once the
// crowd has gone the console serves again.
func TestPagesCapped(t *testing.T) {
	var holding atomic.Bool
	holding.Store(true)
	release := make(chan struct{})
	entered := make(chan struct{}, MaxPagesInFlight)
	h := NewHandler(Endpoints{Report: func() *pipeline.Report {
		if holding.Load() {
			entered <- struct{}{}
			<-release
		}
		return nil
	}})
	var wg sync.WaitGroup
	for range MaxPagesInFlight {
		wg.Go(func() { serve(h, httptest.NewRequest(http.MethodGet, "/", nil)) })
	}
	for range MaxPagesInFlight {
		<-entered
	}
	holding.Store(false)
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("console page over the cap: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		if rec := serve(h, httptest.NewRequest(http.MethodGet, path, nil)); rec.Code != http.StatusOK {
			t.Errorf("GET %s while the console is full: %d, want 200 (probes are never capped)", path, rec.Code)
		}
	}
	close(release)
	wg.Wait()
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusOK {
		t.Errorf("console page after the crowd left: %d, want 200", rec.Code)
	}
}

// TestProbeHandler serves the two probes and nothing else.
func TestProbeHandler(t *testing.T) {
	ready := false
	h := NewProbeHandler(func() bool { return ready })
	for _, c := range []struct {
		path string
		want int
	}{{"/-/healthy", 200}, {"/-/ready", 503}, {"/metrics", 404}, {"/config", 404}, {"/", 404}} {
		if rec := serve(h, httptest.NewRequest(http.MethodGet, c.path, nil)); rec.Code != c.want {
			t.Errorf("GET %s: %d, want %d", c.path, rec.Code, c.want)
		}
	}
	ready = true
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/-/ready", nil)); rec.Code != 200 {
		t.Errorf("GET /-/ready once ready: %d", rec.Code)
	}
}

// TestServerLimits: the server carries every timeout and the header limit.
func TestServerLimits(t *testing.T) {
	s := NewServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= MetricsTimeout || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("server limits %+v", s)
	}
}

// TestMetricsBounded: a /metrics exposition over its limit is not sent: the
// connection is dropped without a response, whatever the encoding, and the
// drop is counted; one under the limit is served whole, gzip-compressed when
// asked for.
func TestMetricsBounded(t *testing.T) {
	self := prometheus.NewRegistry()
	big := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "big", Help: "Many series."}, []string{"l"})
	self.MustRegister(big)
	const limit = 64 << 10
	srv := httptest.NewServer(NewHandler(Endpoints{Report: func() *pipeline.Report { return nil }, Self: self, MetricsLimit: limit}))
	defer srv.Close()
	counter := tooLargeCounter(self)
	get := func(gzipped bool) (int, []byte, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if gzipped {
			req.Header.Set("Accept-Encoding", "gzip") // the transport then leaves the body compressed
		}
		// A fresh connection each time: net/http retries an idempotent
		// request once when a reused connection drops it.
		resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && gzipped {
			if resp.Header.Get("Content-Encoding") != "gzip" {
				return 0, nil, fmt.Errorf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
			}
			zr, zerr := gzip.NewReader(bytes.NewReader(body))
			if zerr != nil {
				return 0, nil, zerr
			}
			body, err = io.ReadAll(zr)
		}
		return resp.StatusCode, body, err
	}

	big.WithLabelValues("small").Set(1)
	for _, gz := range []bool{false, true} {
		code, body, err := get(gz)
		if err != nil || code != http.StatusOK || !bytes.Contains(body, []byte(`big{l="small"} 1`)) {
			t.Errorf("small exposition (gzip %v): %d, %v, %.200q", gz, code, err, body)
		}
	}
	for i := range 2000 {
		big.WithLabelValues(strings.Repeat("x", 40) + strconv.Itoa(i)).Set(1) // about 100 KB
	}
	for i, gz := range []bool{false, true} {
		if code, body, err := get(gz); err == nil {
			t.Errorf("exposition over the limit (gzip %v) answered %d with %d bytes, want the connection dropped", gz, code, len(body))
		}
		if got := testutil.ToFloat64(counter); got != float64(i+1) {
			t.Errorf("too-large answers counted %v, want %d", got, i+1)
		}
	}
}

// TestReloadRefusesRebinding: a browser's POST /-/reload whose Host and
// Origin are both a name (a page of evil.example re-pointed at the daemon:
// DNS rebinding) is refused; through an IP address or localhost a browser
// reloads, and a tool reloads under any name.
func TestReloadRefusesRebinding(t *testing.T) {
	reloads := 0
	h := NewHandler(Endpoints{Report: func() *pipeline.Report { return nil }, Reload: func(context.Context) error { reloads++; return nil }})
	for _, c := range []struct {
		host, origin, fetchSite string
		want                    int
	}{
		{"evil.example", "http://evil.example", "", http.StatusForbidden},
		{"evil.example:10042", "http://evil.example:10042", "same-origin", http.StatusForbidden},
		{"evil.example", "", "same-origin", http.StatusForbidden},
		{"127.0.0.1:10042", "http://127.0.0.1:10042", "same-origin", http.StatusOK},
		{"[::1]:10042", "http://[::1]:10042", "", http.StatusOK},
		{"localhost:10042", "http://localhost:10042", "same-origin", http.StatusOK},
		{"exporter.monitoring.svc:10042", "", "", http.StatusOK}, // curl
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+c.host+"/-/reload", nil)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", c.fetchSite)
		}
		before := reloads
		if rec := serve(h, req); rec.Code != c.want {
			t.Errorf("Host %s, Origin %q, Sec-Fetch-Site %q: %d, want %d", c.host, c.origin, c.fetchSite, rec.Code, c.want)
		}
		if did := reloads - before; (c.want == http.StatusOK) != (did == 1) {
			t.Errorf("Host %s: %d reloads", c.host, did)
		}
	}
}

// TestConnectionsCapped: a listener holds at most its cap of connections. At
// the cap, a new connection replaces the one idle the longest, so a probe
// still gets its answer past a crowd of idle keep-alive clients; with every
// slot busy (clients that have not sent their request yet) it is closed at
// once.
func TestConnectionsCapped(t *testing.T) {
	const max = 8
	srv, l := newServer(NewProbeHandler(nil), max)
	var mu sync.Mutex
	changed := sync.NewCond(&mu)
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.track(c, s)
		mu.Lock()
		changed.Broadcast()
		mu.Unlock()
	}
	waitHeld := func(want int) {
		mu.Lock()
		defer mu.Unlock()
		for l.held() != want {
			changed.Wait()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/-/healthy"
	get := func(c *http.Client) error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}

	// A crowd of idle keep-alive clients fills every slot.
	var crowd []*http.Client
	for range max {
		c := &http.Client{Transport: &http.Transport{}}
		if err := get(c); err != nil {
			t.Fatal(err)
		}
		crowd = append(crowd, c)
	}
	waitHeld(max)
	for i := range 3 * max {
		if err := get(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}); err != nil {
			t.Fatalf("probe %d past %d idle connections: %v", i, max, err)
		}
		if n := l.held(); n > max {
			t.Fatalf("%d connections held, cap %d", n, max)
		}
	}
	for _, c := range crowd {
		c.CloseIdleConnections()
	}
	waitHeld(0)

	// Every slot busy: connections that have sent nothing yet.
	for range max {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitHeld(max)
	extra, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a connection past %d busy ones read %d bytes, %v; want it closed (EOF)", max, n, err)
	}
	if n := l.held(); n != max {
		t.Errorf("%d connections held, want the %d busy ones", n, max)
	}
}

// held returns how many connections are open.
func (l *connLimit) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}
