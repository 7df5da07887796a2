// Command screenshots regenerates the console's pictures in docs/: it runs the
// demo's simulated vLLM for an hour of virtual time (ending inside one of its
// overloads) through the daemon's pipeline, serves the console on loopback
// and photographs the overview and a detail view with headless Chromium.
//
//	go run ./scripts/screenshots [-out docs] [-chromium /usr/bin/chromium]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

func main() {
	out := flag.String("out", "docs", "directory for the PNG files")
	chromium := flag.String("chromium", "/usr/bin/chromium", "Chromium binary")
	flag.Parse()
	if err := run(*out, *chromium); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

// start is a fixed instant, so that the pictures only change when the code does.
var start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func spec() pipeline.Spec {
	interactive := slo.SLO{Name: "interactive", Goal: 0.99, Period: 24 * time.Hour,
		Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
	batch := slo.SLO{Name: "batch", Goal: 0.95, Period: 24 * time.Hour,
		Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 20}}}
	return pipeline.Spec{
		Targets: []pipeline.TargetSpec{
			{Name: "demo", URL: "http://127.0.0.1:1/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second},
			{Name: "steady", URL: "http://127.0.0.1:2/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second},
		},
		SLOs:      []slo.SLO{interactive, batch},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute},
		Quantiles: []float64{0.5, 0.9, 0.95, 0.99},
		Retention: history.NewRetention(15*time.Minute, 24*time.Hour),
		Alerts: []pipeline.BurnAlert{
			{SLO: "interactive", Severity: "page", Long: 15 * time.Minute, Short: time.Minute, Factor: 14.4, For: time.Minute},
			{SLO: "interactive", Severity: "ticket", Long: time.Hour, Short: 5 * time.Minute, Factor: 6, For: time.Minute},
			{SLO: "batch", Severity: "page", Long: 15 * time.Minute, Short: time.Minute, Factor: 14.4, For: time.Minute},
		},
	}
}

// feed runs an hour of scrapes every 15 s, evaluating after each as the
// daemon does, and returns the last report.
func feed(p *pipeline.Pipeline) (*pipeline.Report, error) {
	demo, err := sim.New(sim.DemoConfig(1, start))
	if err != nil {
		return nil, err
	}
	steadyCfg, err := sim.Preset("multi-model", 2, start)
	if err != nil {
		return nil, err
	}
	steady, err := sim.New(steadyCfg)
	if err != nil {
		return nil, err
	}
	sims := map[string]*sim.Sim{"demo": demo, "steady": steady}
	var rep *pipeline.Report
	end := start.Add(59*time.Minute + 30*time.Second) // 90 s into the sixth overload: its page has fired
	for at := start.Add(15 * time.Second); !at.After(end); at = at.Add(15 * time.Second) {
		for name, s := range sims {
			s.AdvanceTo(at)
			body, ct := s.Exposition()
			snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
			if err != nil {
				return nil, fmt.Errorf("%s at %v: %w", name, at, err)
			}
			if err := p.Ingest(name, snap, 0); err != nil {
				return nil, err
			}
		}
		rep = p.Evaluate(at)
	}
	return rep, nil
}

func run(out, chromium string) error {
	if _, err := os.Stat(chromium); err != nil {
		return fmt.Errorf("chromium: %w", err)
	}
	p := pipeline.New(spec())
	rep, err := feed(p)
	if err != nil {
		return err
	}
	srv := httptest.NewServer(exporter.NewHandler(exporter.Endpoints{
		Report: func() *pipeline.Report { return rep }, History: p, RefreshSeconds: 3600,
	}))
	defer srv.Close()
	// The detail view of the first SLO whose page fires (the demo's model
	// on the demo target if none does).
	target, model := "demo", sim.DemoModel
	for _, a := range rep.Alerts {
		if a.State == pipeline.StateFiring && a.Labels["severity"] == "page" && a.Labels["slo"] == "interactive" {
			target, model = a.Target, a.Labels["model_name"]
			break
		}
	}
	detail := srv.URL + "/slo?" + url.Values{"target": {target}, "model": {model}, "slo": {"interactive"}, "range": {"1h"}}.Encode()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	shots := []struct {
		file, url string
		width     int
		height    int
		dark      bool
	}{
		{"console-overview.png", srv.URL + "/", 1500, 1150, false},
		{"console-detail.png", detail, 1500, 2400, false},
		{"console-detail-dark.png", detail, 1500, 1100, true},
	}
	for _, s := range shots {
		if err := screenshot(chromium, filepath.Join(out, s.file), s.url, s.width, s.height, s.dark); err != nil {
			return err
		}
		fmt.Println("wrote", filepath.Join(out, s.file))
	}
	return nil
}

// screenshot photographs a page once its scripts have run (virtual time lets
// the data requests finish before the picture).
func screenshot(chromium, file, pageURL string, width, height int, dark bool) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "screenshots-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + dir, "--virtual-time-budget=10000",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot=" + abs}
	if dark {
		args = append(args, "--force-dark-mode", "--blink-settings=preferredColorScheme=0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, append(args, pageURL)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chromium %s: %w\n%s", pageURL, err, msg)
	}
	if _, err := os.Stat(abs); err != nil {
		return errors.New("chromium wrote no screenshot of " + pageURL)
	}
	return nil
}
