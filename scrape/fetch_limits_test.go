package scrape

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
)

// TestHeadersCountedAsTooLarge: response headers over MaxHeaderBytes fail
// the fetch as body_too_large, including headers past net/http's own 10 MiB
// limit, which it refuses itself (counted as connection before); headers
// within the limit pass.
func TestHeadersCountedAsTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header int // bytes of one padding header
		limit  int64
		reason string
	}{
		{"small", 1 << 10, 0, ""},
		{"just under the limit", MaxHeaderBytes - 1024, 0, ""},
		{"over MaxHeaderBytes", MaxHeaderBytes + 1, 0, ReasonBodyTooLarge},
		{"over net/http's 10 MiB", 11 << 20, 0, ReasonBodyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pad := strings.Repeat("p", tc.header)
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Pad", pad)
				w.Write([]byte("up 1\n"))
			})
			_, err := newFetcher(t, srv.URL+"/metrics", config.DefaultHTTPClientConfig, 0, tc.limit).Fetch(context.Background())
			if got := FailureReason(err); (err == nil) != (tc.reason == "") || (err != nil && got != tc.reason) {
				t.Errorf("fetch with a %d-byte header: %v (reason %q), want reason %q", tc.header, err, got, tc.reason)
			}
		})
	}
}

// TestRedirectDropsCredentials: with follow_redirects (prometheus/common's
// default, as in Prometheus) a redirect to another host is followed, and
// none of the target's credentials (bearer token, basic auth,
// authorization) is sent there; the same host gets them.
func TestRedirectDropsCredentials(t *testing.T) {
	for name, cfg := range map[string]config.HTTPClientConfig{
		"bearer_token":  {FollowRedirects: true, BearerToken: "TOKEN"},
		"basic_auth":    {FollowRedirects: true, BasicAuth: &config.BasicAuth{Username: "u", Password: "p"}},
		"authorization": {FollowRedirects: true, Authorization: &config.Authorization{Type: "Bearer", Credentials: "C"}},
	} {
		t.Run(name, func(t *testing.T) {
			auth := make(chan string, 2)
			other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				auth <- r.Header.Get("Authorization")
				w.Write([]byte("up 1\n"))
			})
			otherHost := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host, same machine
			first := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/same" {
					http.Redirect(w, r, "/final", http.StatusFound)
					return
				}
				if r.URL.Path == "/final" {
					auth <- r.Header.Get("Authorization")
					w.Write([]byte("up 1\n"))
					return
				}
				http.Redirect(w, r, otherHost+"/metrics", http.StatusFound)
			})
			if _, err := newFetcher(t, first.URL+"/metrics", cfg, 0, 0).Fetch(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := <-auth; got != "" {
				t.Errorf("another host got Authorization %q after a redirect", got)
			}
			if _, err := newFetcher(t, first.URL+"/same", cfg, 0, 0).Fetch(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := <-auth; got == "" {
				t.Error("the same host got no credentials after a redirect")
			}
		})
	}
}
