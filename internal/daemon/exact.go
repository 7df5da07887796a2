package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/otlp"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// Exact mode's wiring: the otlp section of the configuration turned into a
// trace store, an OTLP receiver and an optional forwarder, run as one actor
// of the daemon.

// exactMaxModels and exactMaxAdapters cap the distinct names kept per
// target, bounding the series exact mode adds.
const (
	exactMaxModels   = 100
	exactMaxAdapters = 100
)

// exactMode is everything exact mode runs: the store the pipeline reads, the
// receiver and the optional forwarder. Run it as one actor.
type exactMode struct {
	Store    *traces.Store
	Receiver *otlp.Receiver
	forward  *otlp.Forwarder
	router   *otlp.Router
}

// Reconfigure follows a reload: spans go to the targets of cfg, and the
// records of removed targets are dropped. The rest of the otlp section
// (listeners, routes, limits) takes effect at the next start.
func (e *exactMode) Reconfigure(cfg *config.Config) {
	names := make([]string, 0, len(cfg.Targets))
	keep := make(map[string]bool, len(cfg.Targets))
	for _, t := range cfg.Targets {
		names = append(names, t.Name)
		keep[t.Name] = true
	}
	e.router.SetTargets(names)
	e.Store.Forget(keep)
}

// exactFromConfig builds exact mode from a validated configuration; nil, nil
// when the otlp section is not enabled. Put Store in pipeline.Spec.Traces
// and register Receiver.Collector() with the daemon's own metrics.
//
// The store keeps time on clock, the daemon's steady clock that scrapes and
// evaluations are taken on, and moves each span's end (stamped on vLLM's
// wall clock) onto it as it arrives (traces.Limits.Wall): a step of the wall
// clock then moves neither the scrapes nor the spans.
func exactFromConfig(cfg *config.Config, logger *slog.Logger, clock *steadyClock) (*exactMode, error) {
	o := cfg.OTLP
	if !o.Enabled {
		return nil, nil
	}
	maxModels := cfg.Global.MaxModelsPerTarget
	if maxModels <= 0 {
		maxModels = exactMaxModels
	}
	store := traces.NewStore(traces.Limits{
		Retain: o.Retention(cfg.Global), MaxRecords: o.MaxRequestsPerModel, MaxTargetRecords: o.MaxRequestsPerTarget,
		MaxModels: maxModels, MaxAdapters: exactMaxAdapters,
		Now: clock.now, Wall: clock.wall,
	})
	var tlsConfig *tls.Config
	if o.TLSServerConfig != nil {
		c, err := web.ConfigToTLSConfig(o.TLSServerConfig)
		if err != nil {
			return nil, fmt.Errorf("otlp TLS: %w", err)
		}
		tlsConfig = c
	}
	var fwd *otlp.Forwarder
	if f := o.Forward; f != nil {
		client, err := commoncfg.NewClientFromConfig(f.HTTPClientConfig, "otlp_forward")
		if err != nil {
			return nil, fmt.Errorf("otlp forward: %w", err)
		}
		fwd = otlp.NewForwarder(f.URL, client, time.Duration(f.Timeout), otlp.DefaultForwardQueue, logger)
	}
	var routes []otlp.Route
	for _, r := range o.Routes {
		routes = append(routes, otlp.Route{Match: r.Match, Target: r.Target, Model: r.ModelName})
	}
	var names []string
	for _, t := range cfg.Targets {
		names = append(names, t.Name)
	}
	router := otlp.NewRouter(routes, o.TargetAttribute, names, o.AdapterAttribute)
	rcv, err := otlp.New(otlp.Options{
		GRPCAddress: o.GRPCListenAddress, HTTPAddress: o.HTTPListenAddress, TLS: tlsConfig,
		MaxBodyBytes: int64(o.MaxBodySize), Timeout: time.Duration(o.Timeout),
		Router: router, Forward: fwd, Logger: logger,
	}, store)
	if err != nil {
		return nil, err
	}
	return &exactMode{Store: store, Receiver: rcv, forward: fwd, router: router}, nil
}

// Run serves the receiver (and forwards) until ctx is cancelled.
func (e *exactMode) Run(ctx context.Context) error {
	if e.forward == nil {
		return e.Receiver.Run(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.forward.Run(ctx)
	}()
	err := e.Receiver.Run(ctx)
	cancel()
	wg.Wait()
	return err
}

// calibrationLog logs, loudly and once per change, the windows whose spans
// contradict a bound the histograms prove (traces.Result.Inconsistent):
// those windows stay on the histograms, and the log names the bounds.
type calibrationLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	failed map[string]bool
}

// newCalibrationLog returns a log writing to logger.
func newCalibrationLog(logger *slog.Logger) *calibrationLog {
	return &calibrationLog{logger: logger, failed: map[string]bool{}}
}

// Observe logs the windows of a report whose calibration failed and were not
// failing at the previous report, and notes the ones that recovered.
func (c *calibrationLog) Observe(rep *pipeline.Report) {
	if rep == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := map[string]bool{}
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, res := range m.Traces {
				if !res.Inconsistent {
					continue
				}
				key := t.Name + "\x00" + m.Name + "\x00" + exporter.FormatWindow(res.Nominal)
				now[key] = true
				if !c.failed[key] {
					c.logger.Error("spans are inconsistent with the histograms: a value from the spans lies outside a bound vLLM's histograms prove for the same requests, so the window stays on the histograms; check the sender of the spans (its values, its clock, which server's spans are routed here)",
						"target", t.Name, "model_name", m.Name, "window", exporter.FormatWindow(res.Nominal),
						"failures", strings.Join(res.Calibration.Failures, "; "))
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.failed)) {
		if !now[key] {
			parts := strings.SplitN(key, "\x00", 3)
			c.logger.Info("spans are consistent with the histograms again", "target", parts[0], "model_name", parts[1], "window", parts[2])
		}
	}
	c.failed = now
}
