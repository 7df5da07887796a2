package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promtoolPath returns the path of promtool. Without it the test is skipped
// locally but fails in CI (CI=true), where `make test` installs it.
func promtoolPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required in CI: %v", err)
		}
		t.Skipf("promtool not on PATH (install prometheus, or set CI=true to make this fail): %v", err)
	}
	return p
}

// checkMetrics runs `promtool check metrics` over an exposition and fails
// with promtool's findings when it reports any.
func checkMetrics(t *testing.T, what, exposition string) {
	t.Helper()
	cmd := exec.Command(promtoolPath(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics on %s: %v\n%s", what, err, tail(out.String(), 20))
	}
}

// TestPromtoolCheckMetricsReplay checks replay's output, over every committed
// recording, with the linter Prometheus users run on what they scrape.
func TestPromtoolCheckMetricsReplay(t *testing.T) {
	promtoolPath(t)
	cfgFile := writeFile(t, t.TempDir(), "config.yaml", replayConfig)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rec := filepath.Join("testdata", sc.name+".jsonl.gz")
			out, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+cfgFile, "--recording="+rec)
			if code != 0 {
				t.Fatalf("replay exit %d; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(out, "vllm_slo_latency_seconds{") {
				t.Fatalf("replay of %s printed no latency series to check", rec)
			}
			checkMetrics(t, "replay of "+rec, out)
		})
	}
}

// TestPromtoolCheckMetricsDaemon checks the daemon's whole /metrics (its SLO
// series, its own health series and the Go and process collectors) once its
// windows hold latency series.
func TestPromtoolCheckMetricsDaemon(t *testing.T) {
	t.Parallel()
	promtoolPath(t)
	s := startSim(t, nil)
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, ""))
	var body string
	waitFor(t, 20*time.Second, "latency series on /metrics", func() bool {
		var code int
		code, body = get(t, nil, d.base+"/metrics")
		return code == http.StatusOK && strings.Contains(body, "vllm_slo_latency_seconds{")
	})
	checkMetrics(t, "the daemon's /metrics", body)
}
