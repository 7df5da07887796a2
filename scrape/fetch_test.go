package scrape

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"
)

// newServer starts a loopback server that is closed when the test ends.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newFetcher(t *testing.T, url string, cfg config.HTTPClientConfig, timeout time.Duration, limit int64) *Fetcher {
	t.Helper()
	f, err := NewFetcher("rtx4090", url, cfg, timeout, limit)
	if err != nil {
		t.Fatalf("NewFetcher: %v", err)
	}
	return f
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFetchSuccess(t *testing.T) {
	body := readTestdata(t, "single_process.txt")
	for _, tc := range []struct {
		name  string
		cfg   config.HTTPClientConfig
		check func(r *http.Request) bool // the server answers 401 when false
		gzip  bool
	}{
		{
			name:  "plain",
			cfg:   config.DefaultHTTPClientConfig,
			check: func(r *http.Request) bool { return r.Header.Get("Authorization") == "" },
		},
		{
			name: "bearer token",
			cfg:  config.HTTPClientConfig{BearerToken: "s3cret", FollowRedirects: true},
			check: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer s3cret"
			},
		},
		{
			name: "basic auth",
			cfg:  config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "ops", Password: "pw"}},
			check: func(r *http.Request) bool {
				u, p, ok := r.BasicAuth()
				return ok && u == "ops" && p == "pw"
			},
		},
		{
			name:  "gzip",
			cfg:   config.DefaultHTTPClientConfig,
			check: func(r *http.Request) bool { return true },
			gzip:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got http.Header
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Clone()
				if !tc.check(r) {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", ctText004)
				if tc.gzip {
					w.Header().Set("Content-Encoding", "gzip")
					w.Write(gzipped(t, body))
					return
				}
				w.Write(body)
			})
			f := newFetcher(t, srv.URL+"/metrics", tc.cfg, 2*time.Second, 1<<20)
			resp, err := f.Fetch(context.Background())
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !bytes.Equal(resp.Body, body) || resp.Status != 200 || resp.ContentType != ctText004 || resp.Duration <= 0 {
				t.Errorf("response: status %d, type %q, %d bytes, duration %v", resp.Status, resp.ContentType, len(resp.Body), resp.Duration)
			}
			if a := got.Get("Accept"); !strings.HasPrefix(a, "application/openmetrics-text;version=1.0.0") || !strings.Contains(a, "text/plain;version=0.0.4") {
				t.Errorf("Accept = %q", a)
			}
			if e := got.Get("Accept-Encoding"); e != "gzip" {
				t.Errorf("Accept-Encoding = %q", e)
			}
			if ua := got.Get("User-Agent"); !strings.HasPrefix(ua, "vllm-slo-exporter/") {
				t.Errorf("User-Agent = %q", ua)
			}
			secs, err := strconv.ParseFloat(got.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64)
			if err != nil || secs <= 0 || secs > 2 {
				t.Errorf("X-Prometheus-Scrape-Timeout-Seconds = %q", got.Get("X-Prometheus-Scrape-Timeout-Seconds"))
			}
		})
	}
}

func TestFetchFailures(t *testing.T) {
	big := bytes.Repeat([]byte("# padding comment line\n"), 100) // 2300 bytes
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		cfg      config.HTTPClientConfig
		timeout  time.Duration
		limit    int64
		reason   string
		contains string
	}{
		{
			name:     "404",
			handler:  func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			reason:   ReasonHTTPStatus,
			contains: "status 404",
		},
		{
			name:     "500",
			handler:  func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
			reason:   ReasonHTTPStatus,
			contains: "status 500",
		},
		{
			name: "redirect loop",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path, http.StatusFound)
			},
			cfg:      config.HTTPClientConfig{FollowRedirects: true},
			reason:   ReasonConnection,
			contains: "redirects",
		},
		{
			name: "redirect not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			cfg:      config.HTTPClientConfig{FollowRedirects: false},
			reason:   ReasonHTTPStatus,
			contains: "status 302",
		},
		{
			name:     "body over the limit",
			handler:  func(w http.ResponseWriter, r *http.Request) { w.Write(big) },
			limit:    1000,
			reason:   ReasonBodyTooLarge,
			contains: "1000 bytes",
		},
		{
			name: "gzip body over the limit once decompressed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gzipped(t, big))
			},
			limit:  1000,
			reason: ReasonBodyTooLarge,
		},
		{
			name: "lying gzip",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write([]byte("vllm:num_requests_running 1\n"))
			},
			reason:   ReasonDecompress,
			contains: "gzip",
		},
		{
			name: "truncated gzip",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				z := gzipped(t, big)
				w.Write(z[:len(z)/2])
			},
			reason: ReasonDecompress,
		},
		{
			name: "unknown encoding",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "br")
				w.Write(big)
			},
			reason:   ReasonDecompress,
			contains: `"br"`,
		},
		{
			name: "connection dropped mid-body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "5000")
				w.Write(big)
			},
			reason: ReasonRead,
		},
		{
			name: "server never answers",
			handler: func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			},
			timeout:  100 * time.Millisecond,
			reason:   ReasonTimeout,
			contains: "deadline",
		},
		{
			name: "body stalls",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Write(big)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			timeout: 100 * time.Millisecond,
			reason:  ReasonTimeout,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			url := srv.URL + "/metrics"
			f := newFetcher(t, url, tc.cfg, timeout, tc.limit)
			resp, err := f.Fetch(context.Background())
			if err == nil {
				t.Fatalf("no error; got %d bytes", len(resp.Body))
			}
			var fe *FetchError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v is not a *FetchError", err)
			}
			if tc.reason == ReasonHTTPStatus && resp.Status < 300 {
				t.Errorf("status %d not reported with the error", resp.Status)
			}
			if resp.Body != nil {
				t.Errorf("a body came back with the error")
			}
			if got := FailureReason(err); got != tc.reason {
				t.Errorf("reason %q, want %q (err: %v)", got, tc.reason, err)
			}
			prefix := `target "rtx4090": GET ` + url + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.contains) {
				t.Errorf("message %q: want prefix %q and %q inside", msg, prefix, tc.contains)
			}
		})
	}
}

func TestFetchConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/metrics"
	srv.Close()
	f := newFetcher(t, url, config.DefaultHTTPClientConfig, time.Second, 0)
	_, err := f.Fetch(context.Background())
	if got := FailureReason(err); got != ReasonConnection {
		t.Errorf("reason %q, want connection (err: %v)", got, err)
	}
}

func TestFetchBodyAtLimit(t *testing.T) {
	body := []byte("vllm:num_requests_running{model_name=\"m\"} 1\n")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	f := newFetcher(t, srv.URL, config.DefaultHTTPClientConfig, time.Second, int64(len(body)))
	if resp, err := f.Fetch(context.Background()); err != nil || !bytes.Equal(resp.Body, body) {
		t.Errorf("a body exactly at the limit: %v", err)
	}
}

func TestNewFetcherRejects(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		cfg       config.HTTPClientConfig
	}{
		{"bad url", "http://[::1", config.DefaultHTTPClientConfig},
		{"no scheme", "127.0.0.1:8000/metrics", config.DefaultHTTPClientConfig},
		{"ftp", "ftp://host/metrics", config.DefaultHTTPClientConfig},
		{"two bearer tokens", "http://h/metrics", config.HTTPClientConfig{BearerToken: "a", BearerTokenFile: "/f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewFetcher("rtx4090", tc.url, tc.cfg, time.Second, 0); err == nil || !strings.Contains(err.Error(), `target "rtx4090"`) {
				t.Errorf("err = %v, want an error naming the target", err)
			}
		})
	}
}

func TestScrape(t *testing.T) {
	bodies := map[string][]byte{
		"/ok":  readTestdata(t, "openmetrics.txt"),
		"/bad": []byte("vllm:num_requests_running{model_name=\"m\"} -1\nvllm:generation_tokens_total{model_name=\"m\"} -1\n"),
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctOM)
		if r.URL.Path == "/bad" {
			w.Header().Set("Content-Type", ctText004)
		}
		w.Write(bodies[r.URL.Path])
	})
	now := time.Unix(1_800_000_000, 0)

	f := newFetcher(t, srv.URL+"/ok", config.DefaultHTTPClientConfig, time.Second, 1<<20)
	snap, resp, err := f.Scrape(context.Background(), VLLM, now)
	if err != nil {
		t.Fatalf("Scrape: %v", err)
	}
	if !snap.Time.Equal(now) || resp.ContentType != ctOM || snap.Models[qwen].Counters[GenerationTokens] != 4234 {
		t.Errorf("snapshot time %v, content type %q, models %v", snap.Time, resp.ContentType, keys(snap.Models))
	}

	f = newFetcher(t, srv.URL+"/bad", config.DefaultHTTPClientConfig, time.Second, 1<<20)
	snap, resp, err = f.Scrape(context.Background(), VLLM, now)
	if snap != nil || err == nil {
		t.Fatalf("snapshot %v, err %v; want only an error", snap, err)
	}
	if FailureReason(err) != ReasonInvalidValue || resp.Status != 200 {
		t.Errorf("reason %q, status %d", FailureReason(err), resp.Status)
	}
	want := `target "rtx4090": parse ` + srv.URL + `/bad: line 2: family "vllm:generation_tokens_total" model "m": invalid_value`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want prefix %q", err.Error(), want)
	}
}

func TestFailureReasonUnknown(t *testing.T) {
	for _, err := range []error{nil, errors.New("x"), context.Canceled} {
		if got := FailureReason(err); got != ReasonUnknown {
			t.Errorf("FailureReason(%v) = %q", err, got)
		}
	}
}

// TestDisplayURL: passwords and query values are hidden, everything else
// (scheme, user, host, path, parameter names) is shown as written.
func TestDisplayURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8000/metrics":       "http://127.0.0.1:8000/metrics",
		"http://u:pw@h:1/metrics":             "http://u:xxxxx@h:1/metrics",
		"https://h/metrics?api_key=K&b=2&b=3": "https://h/metrics?api_key=xxxxx&b=xxxxx&b=xxxxx",
		"http://u:pw@h/m?token=T#frag":        "http://u:xxxxx@h/m?token=xxxxx#frag",
		"http://h/m?flag":                     "http://h/m?flag=xxxxx",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := DisplayURL(u); got != want {
			t.Errorf("DisplayURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
