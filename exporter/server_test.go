package exporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
)

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestReloadRefusesCrossSite: POST /-/reload from another site (a form or a
// fetch on a page of http://evil.example, as the browser marks it) is
// refused with 403 and reloads nothing; the same request from a tool (no
// browser headers) or from our own origin reloads.
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
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://exporter:10042"}, http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://exporter:10042/-/reload", strings.NewReader("a=b"))
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
