package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
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

// demoOptions are the demo command's choices beyond its addresses.
type demoOptions struct {
	// configFile, when set, is the user's configuration: its SLOs, windows,
	// alerting and the rest are used, its targets and otlp replaced by the
	// simulator's.
	configFile string
	// alertmanagerURL, when set, is an Alertmanager the daemon pushes to.
	alertmanagerURL string
	// externalURL is the console's address in alerts' links (default: the
	// address the console listens on).
	externalURL string
}

// demoTargets and demoOTLP replace a user's targets and otlp sections in
// the demo: the simulator is the one target, and its spans arrive by OTLP.
const (
	demoTargets = `- name: demo
  url: http://%s/metrics
  labels: {gpu: simulated}
`
	demoOTLP = `enabled: true
grpc_listen_address: %s
http_listen_address: ""
`
)

// demoConfiguration is the configuration the demo's daemon runs: the
// built-in one, or the user's with the simulator as its only target and
// exact mode on; with an Alertmanager URL, that Alertmanager is the one the
// alerts go to.
func demoConfiguration(o demoOptions, simAddr, otlpAddr string) ([]byte, error) {
	if o.configFile == "" && o.alertmanagerURL == "" {
		return []byte(fmt.Sprintf(demoConfig, simAddr, otlpAddr)), nil
	}
	base := []byte(fmt.Sprintf(demoConfig, simAddr, otlpAddr))
	if o.configFile != "" {
		b, err := os.ReadFile(o.configFile)
		if err != nil {
			return nil, fmt.Errorf("read config file: %w", err)
		}
		base = b
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", o.configFile, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: not a YAML mapping", o.configFile)
	}
	root := doc.Content[0]
	if o.configFile != "" {
		if err := setYAML(root, "targets", fmt.Sprintf(demoTargets, simAddr)); err != nil {
			return nil, err
		}
		if err := setYAML(root, "otlp", fmt.Sprintf(demoOTLP, otlpAddr)); err != nil {
			return nil, err
		}
	}
	if o.alertmanagerURL != "" {
		alerting := mappingValue(root, "alerting")
		quoted, _ := json.Marshal(o.alertmanagerURL) // a JSON string is a YAML string
		if err := setYAML(alerting, "alertmanagers", "[{url: "+string(quoted)+"}]"); err != nil {
			return nil, err
		}
	}
	return yaml.Marshal(&doc)
}

// mappingValue returns the mapping under key in m, adding an empty one when
// the key is absent or holds no mapping.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	setNode(m, key, v)
	return v
}

// setYAML sets key of mapping m to the YAML value src.
func setYAML(m *yaml.Node, key, src string) error {
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		return fmt.Errorf("demo %s: %w", key, err)
	}
	setNode(m, key, v.Content[0])
	return nil
}

func setNode(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

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
func runDemo(logger *slog.Logger, webA, simA, otlpA demoAddress, o demoOptions) int {
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
	body, err := demoConfiguration(o, simBound, otlpAddr)
	if err != nil {
		return fail(logger, "demo", err)
	}
	if err := os.WriteFile(file, body, 0o600); err != nil {
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
	external := o.externalURL
	if external == "" {
		external = "http://" + ln.Addr().String() + "/"
	}
	d, err := daemon.New(daemon.Options{
		ConfigFile:  file,
		Logger:      logger,
		Serve:       func(srv *http.Server) error { return web.Serve(ln, srv, flags, logger) },
		ExternalURL: external,
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
	if o.configFile != "" {
		fmt.Printf("  configuration:   %s, with the simulator as its only target\n", o.configFile)
	}
	if o.alertmanagerURL != "" {
		fmt.Printf("  alerts to:       %s\n", o.alertmanagerURL)
	}
	fmt.Printf("Windows fill within minutes; the first overload starts %v after the start, then every %v. Ctrl-C stops.\n\n", demoLead, sim.DemoPeriod)
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
