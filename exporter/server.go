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
	// keeps the old configuration when the new one is invalid.
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

// NewHandler serves /metrics, /config, /-/healthy, /-/ready and /-/reload,
// and the SLO console (package console) at / and its pages.
func NewHandler(e Endpoints) http.Handler {
	gatherers := prometheus.Gatherers{&reportGatherer{source: e.Report}}
	if e.Self != nil {
		gatherers = append(gatherers, e.Self)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 50,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy.")
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if e.Ready != nil && !e.Ready() {
			http.Error(w, "Not ready: not every target has been scraped yet.", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready.")
	})
	mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, r *http.Request) {
		if e.Reload == nil {
			http.Error(w, "reload is not available", http.StatusNotImplemented)
			return
		}
		if err := e.Reload(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("failed to reload config: %s", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Reloaded.")
	})
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Only POST requests allowed.", http.StatusMethodNotAllowed)
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		if e.ConfigYAML == nil {
			http.NotFound(w, nil)
			return
		}
		b, err := e.ConfigYAML()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(b)
	})
	mux.Handle("/", console.New(console.Options{Report: e.Report, History: e.History, RefreshSeconds: e.RefreshSeconds}))
	return mux
}
