package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

const replayTestConfig = `targets:
  - name: vllm
    url: http://127.0.0.1:8000/metrics
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.99
`

// writeReplayFiles writes the configuration and a recording of three
// simulator scrapes a minute apart with a malformed line after the first.
func writeReplayFiles(t *testing.T) (cfgPath, recPath string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath, recPath = filepath.Join(dir, "config.yaml"), filepath.Join(dir, "rec.jsonl")
	if err := os.WriteFile(cfgPath, []byte(replayTestConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.DemoConfig(7, t0))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		line, err := json.Marshal(recording.Entry{Time: at, Target: "vllm", Status: 200, ContentType: ct, Body: string(body)})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
		if i == 1 {
			lines = append(lines, "not a scrape")
		}
	}
	if err := os.WriteFile(recPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, recPath
}

// TestReplaySteps: --step prints one exposition per scrape, the last of
// which is what a plain replay prints; a malformed line is logged and
// skipped.
func TestReplaySteps(t *testing.T) {
	cfgPath, recPath := writeReplayFiles(t)
	var steps, log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	if code := runReplay(&steps, &log, logger, cfgPath, recPath, true); code != 0 {
		t.Fatalf("replay --step: exit %d; log:\n%s", code, log.String())
	}
	if !strings.Contains(log.String(), "recording line skipped") || !strings.Contains(log.String(), "rec.jsonl:2: malformed entry") {
		t.Errorf("log does not name the skipped line:\n%s", log.String())
	}
	blocks := strings.Split(steps.String(), "# scrape of vllm at ")
	if len(blocks) != 4 {
		t.Fatalf("%d scrape headers, want 3", len(blocks)-1)
	}
	var plain bytes.Buffer
	if code := runReplay(&plain, &log, logger, cfgPath, recPath, false); code != 0 {
		t.Fatalf("replay: exit %d", code)
	}
	_, lastStep, _ := strings.Cut(blocks[3], "\n")
	if lastStep != plain.String() || !strings.Contains(lastStep, "vllm_slo_attainment_ratio") {
		t.Errorf("the last step differs from the plain replay:\n%s\nplain:\n%s", lastStep, plain.String())
	}
}

// TestReplayEmptyRecording fails with a reason.
func TestReplayEmptyRecording(t *testing.T) {
	cfgPath, _ := writeReplayFiles(t)
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, log, stderr bytes.Buffer
	code := runReplay(&out, &stderr, slog.New(slog.NewTextHandler(&log, nil)), cfgPath, empty, false)
	want := "vllm-slo-exporter: replay: recording " + empty + " holds no scrape\n"
	if code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1 and the one line %q", code, stderr.String(), want)
	}
}

// TestReplayPagesAsTheDaemon: over a recording whose workload pages, a
// plain replay evaluates every evaluation interval as the daemon does, so
// its final vllm_slo_alert_firing is the one --step ends with: 1, the page
// having held its condition for longer than its for.
func TestReplayPagesAsTheDaemon(t *testing.T) {
	dir := t.TempDir()
	cfgPath, recPath := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "rec.jsonl")
	cfg := `targets:
  - name: vllm
    url: http://127.0.0.1:8000/metrics
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.99
    period: 1d
    alerts:
      - {severity: page, long_window: 5m, short_window: 1m, budget_consumed: 0.02, for: 2m}
`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	c := sim.DemoConfig(7, t0)
	c.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 4 * sim.DemoRate}}
	c.Models[0].Workload.Repeat = false
	s, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 1; i <= 40; i++ { // 10 minutes of 15 s scrapes
		at := t0.Add(time.Duration(i) * 15 * time.Second)
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		line, err := json.Marshal(recording.Entry{Time: at, Target: "vllm", Status: 200, ContentType: ct, Body: string(body)})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
	}
	if err := os.WriteFile(recPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var plain, steps bytes.Buffer
	if code := runReplay(&plain, io.Discard, logger, cfgPath, recPath, false); code != 0 {
		t.Fatalf("replay: exit %d", code)
	}
	if code := runReplay(&steps, io.Discard, logger, cfgPath, recPath, true); code != 0 {
		t.Fatalf("replay --step: exit %d", code)
	}
	blocks := strings.Split(steps.String(), "# scrape of vllm at ")
	last := blocks[len(blocks)-1]
	firing := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "vllm_slo_alert_firing{") && strings.Contains(l, `severity="page"`) {
				return l
			}
		}
		return ""
	}
	want := firing(last)
	if !strings.HasSuffix(want, " 1") {
		t.Fatalf("--step does not end with the page firing: %q", want)
	}
	if got := firing(plain.String()); got != want {
		t.Errorf("replay ends with %q, --step with %q", got, want)
	}
}
