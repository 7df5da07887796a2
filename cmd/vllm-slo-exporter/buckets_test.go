package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
)

// TestBucketsCommand: from a configuration whose TTFT threshold is off
// vLLM's edges and a recording of the simulator, the command says so on
// stderr and prints JSON for --custom-histogram-buckets on stdout in which
// every threshold is an edge and each family keeps at most vLLM's edge
// count (fewer when rounding makes two advised edges one), or the budget.
func TestBucketsCommand(t *testing.T) {
	_, recPath := writeReplayFiles(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg := strings.Replace(replayTestConfig, "ttft: 500ms", "ttft: 300ms", 1)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runBuckets(&stdout, &stderr, &bucketsOptions{config: cfgPath, recording: recPath}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ttft <= 0.3s lies between 0.25 and 0.5 on the recorded server's edges") ||
		!strings.Contains(stderr.String(), "tpot <= 0.05s is an edge") {
		t.Errorf("stderr does not place the thresholds:\n%s", stderr.String())
	}
	var got map[string][]float64
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	for family, th := range map[buckets.Family]float64{buckets.TimeToFirstToken: 0.3, buckets.InterTokenLatency: 0.05} {
		edges := got[string(family)]
		if !slices.Contains(edges, th) || len(edges) > len(buckets.Default(family)) {
			t.Errorf("%s: %v, want at most %d edges including %v", family, edges, len(buckets.Default(family)), th)
		}
	}
	stdout.Reset()
	if code := runBuckets(&stdout, &stderr, &bucketsOptions{config: cfgPath, recording: recPath, budget: 5}); code != 0 {
		t.Fatalf("budget 5: exit %d", code)
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for family, edges := range got {
		if len(edges) > 5 {
			t.Errorf("budget 5: %s has %d edges", family, len(edges))
		}
	}
}
