package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What a new user meets in the first hour, each reproduced as they met it.

// notVLLMWarning is the start of the warning for a target whose scrapes hold
// nothing of the profile.
const notVLLMWarning = `the target serves none of the families of profile`

// TestNotVLLMTargetSaysSo runs the daemon, with the default vLLM profile,
// against a server that answers /metrics with a real SGLang exposition: the
// target is up, and the daemon must say once in its log, and on its landing
// page, that the target serves none of the profile's families.
func TestNotVLLMTargetSaysSo(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(filepath.Join(moduleRoot, "scrape", "testdata", "real", "06-datadog-sglang-0.5.10.prom"))
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{liveTarget, srv.URL + "/metrics"}}, ""))
	waitFor(t, 20*time.Second, "the warning in the log after more scrapes", func() bool {
		return strings.Contains(d.stderr.String(), notVLLMWarning) && served.Load() >= 2
	})
	first := served.Load()
	waitFor(t, 20*time.Second, "three more scrapes", func() bool { return served.Load() >= first+3 })
	if n := strings.Count(d.stderr.String(), notVLLMWarning); n != 1 {
		t.Errorf("warning logged %d times over %d scrapes, want once:\n%s", n, served.Load(), tail(d.stderr.String(), 4000))
	}
	ss := d.metrics(t)
	if v, ok := ss.one(t, "vllm_slo_target_up", map[string]string{"target": liveTarget}); !ok || v != 1 {
		t.Errorf("vllm_slo_target_up = %v (present %v), want 1: the target answers", v, ok)
	}
	code, page := get(t, nil, d.base+"/")
	if code != http.StatusOK || !strings.Contains(page, notVLLMWarning) {
		t.Errorf("landing page (%d) does not show %q", code, notVLLMWarning)
	}
}

// runIn runs the binary in dir (bounded by timeout) and returns its output
// and exit code.
func runIn(t *testing.T, dir string, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %v", args, timeout)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errb.String(), 0
}

// TestNoConfigFileHint runs the daemon and check-config where there is no
// config.yaml and no --config.file: both must fail and say how to give one.
func TestNoConfigFileHint(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"run", "--web.listen-address=" + freeAddr(t)}, {"check-config"}} {
		_, stderr, code := runIn(t, t.TempDir(), 20*time.Second, args...)
		if code == 0 || !containsAll(stderr, "config.yaml", "--config.file=", "config.example.yaml") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant a failure naming config.yaml, --config.file= and config.example.yaml", args, code, stderr)
		}
	}
}

// TestYAMLIndentationErrorLine gives check-config a file whose third line is
// indented one space too little: the error must name line 3.
func TestYAMLIndentationErrorLine(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "config.yaml", "global:\n  scrape_interval: 15s\n windows: [1m]\ntargets:\n  - name: a\n    url: http://127.0.0.1:8000/metrics\n")
	_, stderr, code := runCmd(t, 20*time.Second, "check-config", "--config.file="+file)
	if code == 0 || !strings.Contains(stderr, file+":3: ") {
		t.Errorf("exit %d, stderr %q; want a failure at %s:3", code, stderr, file)
	}
}
