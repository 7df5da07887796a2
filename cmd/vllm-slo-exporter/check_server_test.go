package main

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// TestCheckConfigProbe scrapes a simulated vLLM of before 0.11 (no
// per-request TPOT histogram) once and explains each objective: TTFT 500 ms
// is an edge (exact), e2e 3 s lies between 2.5 and 5 (bracketed), TPOT is
// unknown on that server, which makes check-config fail; the same server
// of today passes.
func TestCheckConfigProbe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		style    sim.Style
		wantCode int
		want     []string
	}{
		{"before 0.11", sim.Style{OldNames: true}, 1, []string{
			`SLO "chat": ttft <= 0.5s: exact (an edge of vllm:time_to_first_token_seconds)`,
			`SLO "chat": e2e <= 3s: bracketed between the edges 2.5 and 5 of vllm:e2e_request_latency_seconds`,
			`SLO "chat": tpot <= 0.05s: unknown: the server exposes none of [vllm:request_time_per_output_token_seconds]`,
		}},
		{"today", sim.Style{}, 0, []string{
			`SLO "chat": tpot <= 0.05s: exact (an edge of vllm:request_time_per_output_token_seconds)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			cfg := sim.DemoConfig(3, start)
			cfg.Style = tc.style
			s, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := start.Add(time.Minute)
			s.AdvanceTo(now)
			srv := httptest.NewServer(s.Handler(func() time.Time { return now }))
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "config.yaml")
			yaml := fmt.Sprintf("targets: [{name: gpu0, url: %q}]\nslos: [{name: chat, objectives: {ttft: 500ms, tpot: 50ms, e2e: 3s}, goal: 0.99}]\n", srv.URL+"/metrics")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := checkConfigFile(&stdout, &stderr, path, true, "")
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), `target "gpu0", `+w) {
					t.Errorf("no line %q in\n%s", w, stdout.String())
				}
			}
		})
	}
}

// TestCheckConfigRecording explains the objectives on the last scrape of
// each target of a recording (its malformed line skipped).
func TestCheckConfigRecording(t *testing.T) {
	cfgPath, recPath := writeReplayFiles(t)
	var stdout, stderr bytes.Buffer
	if code := checkConfigFile(&stdout, &stderr, cfgPath, false, recPath); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, w := range []string{`target "vllm", SLO "interactive": ttft <= 0.5s: exact`, `target "vllm", SLO "interactive": tpot <= 0.05s: exact`} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("no line %q in\n%s", w, stdout.String())
		}
	}
}
