package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// demoConfig is the daemon configuration of the demo: short windows so that
// the periodic overload shows within minutes.
const demoConfig = `global:
  scrape_interval: 5s
  scrape_timeout: 4s
  windows: [1m, 5m, 15m]
targets:
  - name: demo
    url: http://%s/metrics
    labels: {gpu: simulated}
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.99
    period: 1d
cost:
  gpu_hourly_cost: 2.0
  currency: USD
otlp:
  enabled: true
  grpc_listen_address: %s
  http_listen_address: ""
`

// demoAddress is a listen address of the demo; isDefault marks one the user
// did not choose, which moves to a free port when another process holds it.
type demoAddress struct {
	addr      string
	isDefault bool
}

// runDemo starts the simulator and the daemon against it on loopback, prints
// the URLs, and runs until interrupted. An address left at its default moves
// to a free port when another process holds it. The simulator sends one span
// per finished request to the daemon's OTLP receiver, as vLLM with
// --otlp-traces-endpoint does, so the demo shows exact mode.
func runDemo(logger *slog.Logger, webA, simA, otlpA demoAddress) int {
	webAddr, webDefault := webA.addr, webA.isDefault
	otlpAddr, err := freeAddress(otlpA)
	if err != nil {
		return fail(logger, "demo", err)
	}
	spans, err := sim.NewSpanEmitter(context.Background(), sim.SpanOptions{Endpoint: otlpAddr})
	if err != nil {
		return fail(logger, "demo", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = spans.Shutdown(ctx)
	}()
	_, simBound, stopSim, err := startSimulator(simA.addr, simA.isDefault, 1, false, spans.Hook)
	if err != nil {
		return fail(logger, "demo", err)
	}
	defer stopSim()

	dir, err := os.MkdirTemp("", "vllm-slo-exporter-demo-")
	if err != nil {
		return fail(logger, "demo", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(demoConfig, simBound, otlpAddr)), 0o600); err != nil {
		return fail(logger, "demo", err)
	}
	// Listen before printing the URLs, so a taken port fails before them.
	ln, err := listen(webAddr, webDefault)
	if err != nil {
		return fail(logger, "demo", err)
	}
	if ln.Addr().String() != webAddr {
		logger.Info("default port taken, listening on another", "wanted", webAddr, "address", ln.Addr().String())
	}
	systemd := false
	configFile := ""
	flags := &web.FlagConfig{WebListenAddresses: &[]string{ln.Addr().String()}, WebSystemdSocket: &systemd, WebConfigFile: &configFile}
	d, err := daemon.New(daemon.Options{
		ConfigFile: file,
		Logger:     logger,
		Serve:      func(srv *http.Server) error { return web.Serve(ln, srv, flags, logger) },
	})
	if err != nil {
		ln.Close()
		return fail(logger, "demo", err)
	}
	fmt.Printf("\nvllm-slo-exporter demo\n")
	fmt.Printf("  simulated vLLM:  http://%s/metrics  (model %s, 2 engines, overload %v of every %v)\n", simBound, sim.DemoModel, sim.DemoOverload, sim.DemoPeriod)
	fmt.Printf("  SLO console:     http://%s/\n", ln.Addr())
	fmt.Printf("  SLO series:      http://%s/metrics\n", ln.Addr())
	fmt.Printf("  configuration:   http://%s/config\n", ln.Addr())
	fmt.Printf("  spans (OTLP):    grpc://%s  (exact mode: vllm_slo_window_source{source=\"traces\"})\n", otlpAddr)
	fmt.Printf("Windows fill within minutes; the first overload starts %v after the start. Ctrl-C stops.\n\n", sim.DemoPeriod-sim.DemoOverload)
	if err := d.Run(context.Background()); err != nil {
		return fail(logger, "demo", err)
	}
	return 0
}

// freeAddress returns the address the daemon will receive spans on: the
// chosen one, or for a default whose port is taken a free port of the same
// host (found by listening; the daemon listens on it right after).
func freeAddress(a demoAddress) (string, error) {
	ln, err := listen(a.addr, a.isDefault)
	if err != nil {
		return "", fmt.Errorf("OTLP address: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("OTLP address: %w", err)
	}
	return addr, nil
}
