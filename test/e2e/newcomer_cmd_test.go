package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
)

// TestRecordNotFoundFails records a URL that answers 404: the failed scrapes
// are kept in the file, and the command fails, naming the status.
func TestRecordNotFoundFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	out := filepath.Join(t.TempDir(), "rec.jsonl")
	_, stderr, code := runCmd(t, 30*time.Second, "record", "--url="+srv.URL+"/metrics", "--duration=1s", "--interval=250ms", "--out="+out)
	if code == 0 || !strings.Contains(stderr, "404") {
		t.Errorf("exit %d, stderr:\n%s\nwant a failure naming the 404", code, stderr)
	}
	entries, err := recording.ReadAll(out)
	if err != nil || len(entries) == 0 || entries[0].Status != http.StatusNotFound {
		t.Errorf("recording %d entries (%v), want the failed scrapes kept", len(entries), err)
	}
}

// TestReplayOtherTargetFails replays a recording whose target the
// configuration does not name: the command fails once, naming both, instead
// of a warning per line and nothing printed.
func TestReplayOtherTargetFails(t *testing.T) {
	t.Parallel()
	entries, _, err := scenarioNamed(t, "single-process").generate()
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		entries[i].Target = "rtx4090"
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	writeRecording(t, rec, entries)
	cfg := writeFile(t, dir, "config.yaml", replayConfig)
	stdout, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+cfg, "--recording="+rec)
	if code == 0 || !containsAll(stderr, `recording: ["rtx4090"]`, `configuration: ["vllm"]`) {
		t.Errorf("exit %d, stderr:\n%s\nwant a failure naming rtx4090 and vllm", code, stderr)
	}
	if n := strings.Count(stderr, "recorded scrape not used"); n != 0 {
		t.Errorf("%d per-line warnings, want the mismatch said once", n)
	}
	if stdout != "" {
		t.Errorf("printed an exposition of nothing:\n%s", tail(stdout, 500))
	}
}

// TestReportURLRefused runs a live report against a port nobody listens on:
// the error must name the refused connection.
func TestReportURLRefused(t *testing.T) {
	t.Parallel()
	_, stderr, code := runCmd(t, 30*time.Second, "report", "--url=http://"+freeAddr(t)+"/metrics", "--duration=1s", "--interval=250ms")
	if code == 0 || !strings.Contains(stderr, "connection refused") {
		t.Errorf("exit %d, stderr:\n%s\nwant a failure naming the refused connection", code, stderr)
	}
}
