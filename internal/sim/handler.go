package sim

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler serves the simulated server's /metrics: each request first advances
// the sim to now() (the caller's clock: time.Now for a live demo, a fake clock
// in tests), then renders the exposition in the configured style. The body is
// gzipped when the client accepts it. While the server is down (see
// ScheduledRestart) the connection is closed without a response, the nearest
// an http.Handler comes to a refused connection. Other paths get 404.
func (s *Sim) Handler(now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.AdvanceTo(now())
		if !s.Serving() {
			refuse(w)
			return
		}
		body, ct := s.Exposition()
		w.Header().Set("Content-Type", ct)
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			if r.Method == http.MethodHead {
				return
			}
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(body)
			_ = zw.Close()
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
	return mux
}

// refuse drops the connection without a response (503 where the connection
// cannot be taken over, as with HTTP/2).
func refuse(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	http.Error(w, errRefused.Error(), http.StatusServiceUnavailable)
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}
