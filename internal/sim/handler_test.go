package sim_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// fakeClock is a settable clock for handler tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestHandler(t *testing.T) {
	cfg := smallConfig(2)
	cfg.Style = sim.Style{Format: sim.OpenMetrics}
	s := mustNew(t, cfg)
	clock := &fakeClock{t: t0.Add(30 * time.Second)}
	srv := httptest.NewServer(s.Handler(clock.now))
	defer srv.Close()

	get := func(path string, gz bool) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		} else {
			req.Header.Set("Accept-Encoding", "identity")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	resp, body := get("/metrics", false)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != sim.ContentTypeOpenMetrics {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !s.Now().Equal(clock.now()) {
		t.Errorf("handler advanced the sim to %v, want %v", s.Now(), clock.now())
	}
	p := parse(t, []byte(body), sim.ContentTypeOpenMetrics)
	n1 := p.must(t, "vllm:e2e_request_latency_seconds_count", "engine", "0", "model_name", "m")
	if n1 == 0 {
		t.Fatal("no finished request after 30 s")
	}

	clock.set(t0.Add(60 * time.Second))
	resp, body = get("/metrics", true)
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Error("gzip not used although accepted")
	}
	p = parse(t, []byte(body), sim.ContentTypeOpenMetrics)
	if n2 := p.must(t, "vllm:e2e_request_latency_seconds_count", "engine", "0", "model_name", "m"); n2 <= n1 {
		t.Errorf("count did not grow with the clock: %v then %v", n1, n2)
	}
	if !strings.HasSuffix(body, "# EOF\n") {
		t.Error("gzipped body lost its # EOF")
	}

	// A clock going backwards never rewinds the sim.
	clock.set(t0)
	get("/metrics", false)
	if !s.Now().Equal(t0.Add(60 * time.Second)) {
		t.Errorf("sim moved back to %v", s.Now())
	}
	if resp, _ := get("/other", false); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/other: status %d", resp.StatusCode)
	}
}

// TestConcurrentUse exercises the sim from several goroutines (meaningful
// under -race).
func TestConcurrentUse(t *testing.T) {
	s := mustNew(t, smallConfig(6))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				switch g {
				case 0:
					s.AdvanceTo(t0.Add(time.Duration(i) * time.Second))
				case 1:
					s.Exposition()
				case 2:
					s.Truth()
				default:
					s.ExpositionStyle(sim.Style{Format: sim.MultiProcess})
				}
			}
		}()
	}
	wg.Wait()
	checkTruth(t, s)
}

// TestHandlerOutage checks that /metrics answers before and after a
// scheduled outage and drops the connection without a response during it.
func TestHandlerOutage(t *testing.T) {
	cfg := smallConfig(2)
	cfg.Restarts = []sim.ScheduledRestart{{At: 20 * time.Second, Down: 30 * time.Second}}
	s := mustNew(t, cfg)
	clock := &fakeClock{t: t0.Add(10 * time.Second)}
	srv := httptest.NewServer(s.Handler(clock.now))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() error {
		resp, err := client.Get(srv.URL + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return nil
	}
	for _, st := range []struct {
		at   time.Duration
		down bool
	}{{10 * time.Second, false}, {20 * time.Second, true}, {49 * time.Second, true}, {50 * time.Second, false}} {
		clock.set(t0.Add(st.at))
		err := get()
		if (err != nil) != st.down {
			t.Errorf("at %v: error %v, want down=%v", st.at, err, st.down)
		}
	}
}
