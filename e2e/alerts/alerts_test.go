// Package alerts is the end-to-end test of alerting: the simulator with an
// injected overload, the daemon, Debian's Prometheus loading the generated
// rules, and Debian's Alertmanager, all on 127.0.0.1. The page alert must
// reach Alertmanager by both paths (the daemon's push and Prometheus's rule),
// stay silent while the workload is healthy, and resolve after the overload.
package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// The timeline of the simulated workload, in wall-clock time from the start.
const (
	healthyFor  = 30 * time.Second
	overloadFor = 40 * time.Second
	testFor     = 170 * time.Second
)

// simConfig is a small, fast engine: ~23 requests/s of capacity, 15/s while
// healthy, 30/s during the overload, so a queue builds and TTFT breaks.
func simConfig(start time.Time) sim.Config {
	return sim.Config{Seed: 1, Start: start, DiscardTruth: true, Models: []sim.ModelConfig{{
		Name: "tiny", Engines: 1,
		Workload: sim.Workload{
			Phases: []sim.Phase{
				{Duration: healthyFor, Kind: sim.Poisson, Rate: 15},
				{Duration: overloadFor, Kind: sim.Poisson, Rate: 30},
				{Kind: sim.Poisson, Rate: 15},
			},
			Prompt:          sim.LengthDist{Median: 200, Sigma: 0.5, Min: 10, Max: 1000},
			Output:          sim.LengthDist{Median: 20, Sigma: 0.5, Min: 2, Max: 100},
			StopProbability: 0.9,
		},
		Engine: sim.EngineParams{MaxNumSeqs: 8, MaxBatchedTokens: 8192, KVCapacityTokens: 100000,
			StepBase: 10 * time.Millisecond, DecodePerSeq: 500 * time.Microsecond, PrefillPerToken: 20 * time.Microsecond},
		MaxModelLen: 4096,
	}}}
}

// The daemon's configuration: a 1h period and one page alert over 1m/20s
// whose factor is 0.1 × 1h / 1m = 6 (more than 30% bad requests at goal 0.95).
const daemonConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  windows: [20s, 1m]
targets:
  - name: sim
    url: http://%s/metrics
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.95
    period: 1h
    runbook_url: https://example.invalid/runbook
    alerts:
      - {severity: page, long_window: 1m, short_window: 20s, budget_consumed: 0.1, for: 3s}
alerting:
  alertmanagers:
    - url: http://%s
  resend_delay: 2s
`

const prometheusConfig = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs: [{targets: [%q]}]
scrape_configs:
  - job_name: vllm
    static_configs: [{targets: [%q]}]
  - job_name: vllm-slo-exporter
    static_configs: [{targets: [%q]}]
`

const alertmanagerConfig = `route:
  receiver: hook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %q
        send_resolved: true
`

// notification is what Alertmanager's webhook sends, reduced to what the
// test needs.
type notification struct {
	Alerts []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

type event struct {
	at     time.Duration
	status string
	path   string // "daemon" (has a target label) or "prometheus"
	labels map[string]string
}

type webhook struct {
	start  time.Time
	mu     sync.Mutex
	events []event
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var n notification
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range n.Alerts {
		path := "prometheus"
		if a.Labels["target"] != "" {
			path = "daemon"
		}
		w.events = append(w.events, event{at: time.Since(w.start), status: a.Status, path: path, labels: a.Labels})
	}
}

func (w *webhook) snapshot() []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event(nil), w.events...)
}

func need(t *testing.T, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; .ci/run installs it", b)
			}
			t.Skipf("%s is not installed (make test installs it)", b)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs a process until the test ends, its output in the test log on failure.
func start(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	logFile, err := os.Create(filepath.Join(dir, filepath.Base(name)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("--- %s log (last 3000 bytes):\n%s", name, tail(b, 3000))
		}
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s did not become ready", url)
}

func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "vllm-slo-exporter")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/vllm-slo-exporter")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPageAlertReachesAlertmanagerByBothPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("takes three minutes")
	}
	need(t, "prometheus", "prometheus-alertmanager", "promtool")
	dir := t.TempDir()
	bin := build(t, dir)

	begin := time.Now()
	s, err := sim.New(simConfig(begin))
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s.Handler(time.Now))
	defer simSrv.Close()
	hook := &webhook{start: begin}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	simAddr := strings.TrimPrefix(simSrv.URL, "http://")
	amAddr, promAddr, daemonAddr := freeAddr(t), freeAddr(t), freeAddr(t)

	write(t, filepath.Join(dir, "am.yml"), fmt.Sprintf(alertmanagerConfig, hookSrv.URL))
	start(t, dir, "prometheus-alertmanager", "--config.file=am.yml", "--storage.path=am-data",
		"--web.listen-address="+amAddr, "--cluster.listen-address=")

	cfgFile := filepath.Join(dir, "config.yaml")
	write(t, cfgFile, fmt.Sprintf(daemonConfig, simAddr, amAddr))
	rules, err := exec.Command(bin, "rules", "--config.file="+cfgFile).Output()
	if err != nil {
		t.Fatalf("rules: %v", err)
	}
	write(t, filepath.Join(dir, "rules.yml"), string(rules))
	if out, err := exec.Command("promtool", "check", "rules", filepath.Join(dir, "rules.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	write(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(prometheusConfig, filepath.Join(dir, "rules.yml"), amAddr, simAddr, daemonAddr))
	start(t, dir, "prometheus", "--config.file=prometheus.yml", "--storage.tsdb.path=prom-data",
		"--web.listen-address="+promAddr)
	start(t, dir, bin, "run", "--config.file="+cfgFile, "--web.listen-address="+daemonAddr)

	waitHTTP(t, "http://"+amAddr+"/-/ready")
	waitHTTP(t, "http://"+promAddr+"/-/ready")
	waitHTTP(t, "http://"+daemonAddr+"/-/ready")

	for time.Since(begin) < testFor {
		time.Sleep(time.Second)
	}
	events := hook.snapshot()
	for _, e := range events {
		t.Logf("%6.1fs %-10s %-8s %s long=%s", e.at.Seconds(), e.path, e.status, e.labels["alertname"], e.labels["long_window"])
	}
	for _, path := range []string{"daemon", "prometheus"} {
		var fired, resolved time.Duration
		for _, e := range events {
			if e.path != path || e.labels["alertname"] != "VLLMSLOBurnRateHigh" || e.labels["severity"] != "page" {
				continue
			}
			if e.status == "firing" && fired == 0 {
				fired = e.at
			}
			if e.status == "resolved" && fired != 0 && resolved == 0 {
				resolved = e.at
			}
		}
		switch {
		case fired == 0:
			t.Errorf("%s: the page never reached Alertmanager", path)
		case fired < healthyFor:
			t.Errorf("%s: the page fired at %v, during the healthy period", path, fired)
		case resolved == 0:
			t.Errorf("%s: the page fired at %v and never resolved", path, fired)
		case resolved < healthyFor+overloadFor:
			t.Errorf("%s: the page resolved at %v, before the overload ended", path, resolved)
		}
	}
	for _, e := range events {
		if e.at < healthyFor && e.status == "firing" {
			t.Errorf("%s alert %v fired at %v on the healthy workload", e.path, e.labels, e.at)
		}
	}
}
