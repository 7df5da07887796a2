package exporter

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/console"
)

// Endpoints is what the HTTP handler needs from the daemon.
type Endpoints struct {
	// Report returns the latest report (nil before the first evaluation).
	Report ReportSource
	// Ready reports whether every target has been tried at least once and
	// the published report holds it.
	Ready func() bool
	// Reload applies the configuration file again; it returns an error and
	// keeps the old configuration when the new one is invalid. Nil turns
	// the lifecycle endpoint off: POST /-/reload answers 403 (the daemon
	// still reloads on SIGHUP).
	Reload func(ctx context.Context) error
	// ConfigYAML returns the running configuration with secrets redacted.
	ConfigYAML func() ([]byte, error)
	// Self is the registry of the daemon's own metrics (reload status, ...).
	Self *prometheus.Registry
	// History lets the console draw past windows; nil serves the overview
	// without detail charts.
	History console.History
	// RefreshSeconds is how often the console's overview reloads itself.
	RefreshSeconds int
	// MetricsLimit bounds one /metrics answer (0: MaxMetricsBytes).
	MetricsLimit int64
	// Charts holds the reports' evaluations the console's charts draw
	// (console.Ring); nil: the charts evaluate the history at every point.
	Charts *console.Ring
}

// AlertView is an alert as the landing page shows it.
type AlertView struct {
	Name, SLO, Target, Model, Severity, State, Summary string
	Since                                              time.Time
}

// NewSelfRegistry returns a registry with the Go and process collectors and
// vllm_slo_exporter_build_info, kept apart from the SLO series.
func NewSelfRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector(Namespace+"_exporter"),
	)
	return reg
}

// The limits of the HTTP server, chosen for a sidecar whose clients are a
// Prometheus or two, a browser and the kubelet's probes.
const (
	// ReadHeaderTimeout bounds the request line and headers: a client that
	// opens a connection and dribbles its headers is dropped after it.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading the whole request. No endpoint takes a
	// body, so the headers' time is the whole of it, with room to spare.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its response: MetricsTimeout to gather /metrics, then as long again
	// to send it. The largest /metrics measured (500 targets, BENCHMARKS.md)
	// is 34 MB, rendered in about 5 s: 30 s to send it asks for about
	// 10 Mbit/s, far below any network Prometheus scrapes over. A client
	// reading slower than that is dropped rather than held open.
	WriteTimeout = 2 * MetricsTimeout
	// IdleTimeout closes a keep-alive connection left idle this long. It
	// outlasts a 1-minute scrape interval, so Prometheus reuses its
	// connection; a thousand idle clients hold nothing after it.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds the request headers (net/http's default is
	// 1 MiB); 64 KiB is ample for a basic-auth or bearer header and cookies.
	MaxHeaderBytes = 64 << 10

	// MetricsTimeout is how long gathering /metrics may take before
	// promhttp answers 503.
	MetricsTimeout = 30 * time.Second
	// MaxMetricsInFlight, MaxPagesInFlight, MaxConfigInFlight and
	// MaxReloadsInFlight cap the requests served at once by /metrics, by the
	// console (/, /slo, /api/series and its assets), by /config and by
	// POST /-/reload; beyond the cap a request is answered 503 at once, so
	// a crowd of clients costs a bounded amount of memory and CPU and the
	// scrape loops keep their cadence. /-/healthy and /-/ready are never
	// capped: the kubelet must get its answer whatever the crowd.
	MaxMetricsInFlight = 50
	MaxPagesInFlight   = 8
	MaxConfigInFlight  = 8
	MaxReloadsInFlight = 2

	// MaxMetricsBytes bounds one /metrics exposition, uncompressed. The
	// largest measured (500 targets, BENCHMARKS.md) is 34 MB; label values
	// are capped at scrape.MaxLabelValueLength, so only a fleet far beyond
	// that comes near it. An exposition that outgrows it is not sent: the
	// connection is dropped without a response (a truncated exposition
	// could parse as a complete one and silently lose series), and
	// vllm_slo_exporter_metrics_too_large_total counts it. It also bounds
	// the memory of the response buffered while gathering (times
	// MaxMetricsInFlight).
	MaxMetricsBytes = 64 << 20

	// MaxConnections caps the connections one listener holds open. At the
	// cap a new connection takes the place of the one idle the longest
	// (a keep-alive connection between requests), or is closed at once when
	// none is idle; so a crowd of idle or re-opened connections can neither
	// exhaust the process's open files nor keep out a probe or a scrape.
	// Connections that dribble their headers are dropped after
	// ReadHeaderTimeout all the same.
	MaxConnections = 512
)

// NewServer returns an HTTP server for h with the timeouts and limits above.
func NewServer(h http.Handler) *http.Server {
	srv, _ := newServer(h, MaxConnections)
	return srv
}

// newServer is NewServer with a connection cap of maxConns; it returns the
// cap's bookkeeping too.
func newServer(h http.Handler, maxConns int) (*http.Server, *connLimit) {
	l := &connLimit{max: maxConns, open: map[net.Conn]connInfo{}}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnState:         l.track,
	}, l
}

// connLimit holds a server's connections to MaxConnections (see there),
// fed by the server's ConnState hook.
type connLimit struct {
	max  int
	mu   sync.Mutex
	open map[net.Conn]connInfo
}

// connInfo is what connLimit knows of one open connection.
type connInfo struct {
	idle  bool
	since time.Time // when it went idle
}

// track follows one connection's state change.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew:
		if len(l.open) >= l.max && !l.evictIdle() {
			c.Close() // the server's goroutine for it then ends at its first read
			return
		}
		l.open[c] = connInfo{}
	case http.StateActive:
		if _, ok := l.open[c]; ok {
			l.open[c] = connInfo{}
		}
	case http.StateIdle:
		if _, ok := l.open[c]; ok {
			l.open[c] = connInfo{idle: true, since: time.Now()}
		}
	case http.StateHijacked, http.StateClosed:
		delete(l.open, c)
	}
}

// evictIdle closes the connection idle the longest and reports whether
// there was one. l.mu must be held.
func (l *connLimit) evictIdle() bool {
	var oldest net.Conn
	var since time.Time
	for c, info := range l.open {
		if info.idle && (oldest == nil || info.since.Before(since)) {
			oldest, since = c, info.since
		}
	}
	if oldest == nil {
		return false
	}
	oldest.Close()
	delete(l.open, oldest)
	return true
}

// NewHandler serves /metrics, /config, /-/healthy, /-/ready and /-/reload,
// and the SLO console (package console) at / and its pages. Every endpoint
// but the probes is capped (see MaxPagesInFlight); /metrics is bounded in
// size (MaxMetricsBytes); POST /-/reload refuses cross-site requests (a
// browser's form or fetch from another origin) and, from a browser, any
// request not addressed to an IP address or localhost (see
// refuseRebinding).
func NewHandler(e Endpoints) http.Handler {
	gatherers := prometheus.Gatherers{&reportGatherer{source: e.Report}}
	if e.Self != nil {
		gatherers = append(gatherers, e.Self)
	}
	limit := e.MetricsLimit
	if limit <= 0 {
		limit = MaxMetricsBytes
	}
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: MaxMetricsInFlight,
		DisableCompression:  true, // boundMetrics compresses, after counting
	})
	// The timeout goes outside the bound, which then also bounds what
	// http.TimeoutHandler buffers.
	mux.Handle("GET /metrics", http.TimeoutHandler(boundMetrics(limit, tooLargeCounter(e.Self), metrics), MetricsTimeout,
		fmt.Sprintf("Exceeded configured timeout of %v.\n", MetricsTimeout)))
	mux.Handle("GET /-/healthy", probeHandler(nil, "Healthy."))
	mux.Handle("GET /-/ready", probeHandler(e.Ready, "Ready."))
	mux.Handle("POST /-/reload", http.NewCrossOriginProtection().Handler(refuseRebinding(limitInFlight(MaxReloadsInFlight, reloadHandler(e.Reload)))))
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Only POST requests allowed.", http.StatusMethodNotAllowed)
	})
	mux.Handle("GET /config", limitInFlight(MaxConfigInFlight, configHandler(e.ConfigYAML)))
	mux.Handle("/", limitInFlight(MaxPagesInFlight, console.New(console.Options{Report: e.Report, History: e.History, RefreshSeconds: e.RefreshSeconds, Ring: e.Charts})))
	return mux
}

// NewProbeHandler serves only /-/healthy and /-/ready, for a listener of
// its own without TLS or authentication (--web.probe-listen-address): the
// kubelet's probes carry no credentials, and these two answers reveal
// nothing.
func NewProbeHandler(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /-/healthy", probeHandler(nil, "Healthy."))
	mux.Handle("GET /-/ready", probeHandler(ready, "Ready."))
	return mux
}

// probeHandler answers ok, or 503 while ready (when set) says not ready.
func probeHandler(ready func() bool, ok string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "Not ready: not every target has been scraped yet.", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, ok)
	})
}

// reloadHandler applies the configuration again; with no reload function
// the lifecycle API is off and it answers 403, as Prometheus does.
func reloadHandler(reload func(ctx context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reload == nil {
			http.Error(w, "Lifecycle API is not enabled (--web.enable-lifecycle); send SIGHUP to reload.", http.StatusForbidden)
			return
		}
		if err := reload(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Reloaded.")
	})
}

// configHandler serves the running configuration as YAML.
func configHandler(configYAML func() ([]byte, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if configYAML == nil {
			http.NotFound(w, nil)
			return
		}
		b, err := configYAML()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(b)
	})
}

// tooLargeCounter returns vllm_slo_exporter_metrics_too_large_total,
// registered with reg (the one already there when a handler was built
// before), or unregistered when reg is nil.
func tooLargeCounter(reg *prometheus.Registry) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: Namespace + "_exporter_metrics_too_large_total",
		Help: "Answers of /metrics dropped because the exposition outgrew its size limit (MaxMetricsBytes, uncompressed).",
	})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return existing
			}
		}
	}
	return c
}

// boundMetrics serves h, counting the bytes it writes: past limit the
// answer is dropped (see MaxMetricsBytes) and tooLarge counted. It
// compresses with gzip when the client accepts it (h must not), so that the
// limit is on the exposition itself whatever the encoding.
func boundMetrics(limit int64, tooLarge prometheus.Counter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &boundedWriter{ResponseWriter: w, out: w, left: limit, tooLarge: tooLarge}
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			bw.out = gz
		}
		h.ServeHTTP(bw, r)
	})
}

// boundedWriter passes at most left bytes to out.
type boundedWriter struct {
	http.ResponseWriter
	out      io.Writer
	left     int64
	over     bool
	tooLarge prometheus.Counter
}

// Write passes p on, or, when p would pass the limit, counts the answer as
// too large and aborts it (http.ErrAbortHandler: the server drops the
// connection and logs nothing). Writes after that, from deferred calls
// while the handler unwinds, fail quietly.
func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.over {
		return 0, errMetricsTooLarge
	}
	if int64(len(p)) > w.left {
		w.over = true
		w.tooLarge.Inc()
		panic(http.ErrAbortHandler)
	}
	w.left -= int64(len(p))
	return w.out.Write(p)
}

// errMetricsTooLarge fails the writes of an aborted /metrics answer.
var errMetricsTooLarge = errors.New("/metrics exposition over its size limit")

// acceptsGzip reports whether an Accept-Encoding header value accepts gzip
// (listed, without q=0).
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		return err != nil || v > 0
	}
	return false
}

// refuseRebinding refuses (403) a request from a browser (one carrying
// Origin or Sec-Fetch-Site) whose Host is not an IP address or localhost.
// http.CrossOriginProtection compares Origin with Host, but a page of
// http://evil.example whose name the attacker has re-pointed at the
// daemon's address (DNS rebinding) sends both as evil.example; the daemon
// cannot tell its own names from the attacker's, so a browser reloads only
// through an address. Tools (curl, a config reloader) send no browser
// headers and reload under any name.
func refuseRebinding(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fromBrowser := r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != ""
		if fromBrowser && !addressedByIP(r.Host) {
			http.Error(w, "A browser may reload only through an IP address or localhost (Host "+strconv.Quote(r.Host)+"), against DNS rebinding; use curl or SIGHUP.", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// addressedByIP reports whether a Host header names an IP address,
// localhost or a name under .localhost (which resolve to loopback only).
func addressedByIP(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// limitInFlight serves at most n requests of h at once and answers 503
// (with Retry-After) to any beyond, without queueing them: a queue would
// hold the crowd's connections and memory all the same.
func limitInFlight(n int, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("Too many requests in flight (limit %d); try again.", n), http.StatusServiceUnavailable)
		}
	})
}
