package exporter

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/console"
)

// Endpoints is what the HTTP handler needs from the daemon.
type Endpoints struct {
	// Report returns the latest report (nil before the first evaluation).
	Report ReportSource
	// Ready reports whether every target has been tried at least once.
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
)

// NewServer returns an HTTP server for h with the timeouts and limits above.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// NewHandler serves /metrics, /config, /-/healthy, /-/ready and /-/reload,
// and the SLO console (package console) at / and its pages. Every endpoint
// but the probes is capped (see MaxPagesInFlight); POST /-/reload refuses
// cross-site requests (a browser's form or fetch from another origin).
func NewHandler(e Endpoints) http.Handler {
	gatherers := prometheus.Gatherers{&reportGatherer{source: e.Report}}
	if e.Self != nil {
		gatherers = append(gatherers, e.Self)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: MaxMetricsInFlight,
		Timeout:             MetricsTimeout,
	}))
	mux.Handle("GET /-/healthy", probeHandler(nil, "Healthy."))
	mux.Handle("GET /-/ready", probeHandler(e.Ready, "Ready."))
	mux.Handle("POST /-/reload", http.NewCrossOriginProtection().Handler(limitInFlight(MaxReloadsInFlight, reloadHandler(e.Reload))))
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Only POST requests allowed.", http.StatusMethodNotAllowed)
	})
	mux.Handle("GET /config", limitInFlight(MaxConfigInFlight, configHandler(e.ConfigYAML)))
	mux.Handle("/", limitInFlight(MaxPagesInFlight, console.New(console.Options{Report: e.Report, History: e.History, RefreshSeconds: e.RefreshSeconds})))
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
