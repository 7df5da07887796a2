package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
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
	if code := runReplay(&steps, logger, cfgPath, recPath, true); code != 0 {
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
	if code := runReplay(&plain, logger, cfgPath, recPath, false); code != 0 {
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
	var out, log bytes.Buffer
	if code := runReplay(&out, slog.New(slog.NewTextHandler(&log, nil)), cfgPath, empty, false); code != 1 || !strings.Contains(log.String(), "holds no scrape") {
		t.Errorf("exit %d, log %q; want 1 and holds no scrape", code, log.String())
	}
}
