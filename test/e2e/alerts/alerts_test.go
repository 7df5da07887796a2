// Package alerts is the end-to-end test of alerting: the simulator with an
// injected overload and then an outage, the daemon, Debian's Prometheus
// loading the generated rules, and Debian's Alertmanager, all on 127.0.0.1.
// The page alert must fire in both paths (the daemon's push and Prometheus's
// rule) and reach Alertmanager as one alert, stay silent while the workload
// is healthy, and resolve after the overload; during the outage both paths
// raise one target-down alert, and nothing pages on the data that comes
// back after the restart.
package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// The timeline of the simulated workload, in wall-clock time from the start:
// healthy, overloaded, healthy, then vLLM is down from outageAt for outageFor
// and restarts with counters from zero.
const (
	healthyFor  = 30 * time.Second
	overloadFor = 40 * time.Second
	outageAt    = 115 * time.Second
	outageFor   = 15 * time.Second
	testFor     = 160 * time.Second
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
	}}, Restarts: []sim.ScheduledRestart{{At: outageAt, Down: outageFor}}}
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
	GroupKey string `json:"groupKey"`
	Alerts   []struct {
		Status   string            `json:"status"`
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
	} `json:"alerts"`
}

type event struct {
	at       time.Duration
	status   string
	group    string
	startsAt time.Time
	labels   map[string]string
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
		w.events = append(w.events, event{at: time.Since(w.start), status: a.Status, group: n.GroupKey, startsAt: a.StartsAt, labels: a.Labels})
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

// waitHTTP polls url until it answers 200, failing after 30 s.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-deadline:
			t.Fatalf("%s did not become ready", url)
		case <-tick.C:
		}
	}
}

func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "vllm-slo-exporter")
	cmd := exec.Command("go", "build", "-o", bin, "../../../cmd/vllm-slo-exporter")
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
	t.Parallel() // beside TestOneBreachAcrossTargets: both mostly wait on wall-clock time
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

	var obs []observation
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range tick.C {
		if time.Since(begin) >= testFor {
			break
		}
		obs = append(obs, observe(t, time.Since(begin), "http://"+promAddr, "http://"+daemonAddr, "http://"+amAddr))
	}
	events := hook.snapshot()
	for _, e := range events {
		t.Logf("%6.1fs %-8s %s %v", e.at.Seconds(), e.status, e.labels["alertname"], e.labels)
	}
	checkPage(t, obs, events, begin)
	checkOutage(t, obs, events, begin)
}

// observation is what each path says at one moment: whether Prometheus and
// the daemon fire the page and the target-down alert, and how many of each
// Alertmanager holds.
type observation struct {
	at                   time.Duration
	promPage, daemonPage bool
	promDown, daemonDown bool
	amPages, amDowns     int
}

// observe asks Prometheus, the daemon and Alertmanager for their alerts.
func observe(t *testing.T, at time.Duration, prom, daemon, am string) observation {
	t.Helper()
	o := observation{at: at}
	var pa struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/alerts", &pa)
	for _, a := range pa.Data.Alerts {
		if a.State != "firing" {
			continue
		}
		o.promPage = o.promPage || isPage(a.Labels)
		o.promDown = o.promDown || a.Labels["alertname"] == "VLLMSLOTargetDown"
	}
	var aa []struct {
		Labels map[string]string `json:"labels"`
	}
	getJSON(t, am+"/api/v2/alerts?active=true&silenced=false&inhibited=false", &aa)
	for _, a := range aa {
		if isPage(a.Labels) {
			o.amPages++
		}
		if a.Labels["alertname"] == "VLLMSLOTargetDown" {
			o.amDowns++
		}
	}
	resp, err := http.Get(daemon + "/metrics")
	if err != nil {
		return o
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "vllm_slo_alert_firing{") || !strings.HasSuffix(line, " 1") {
			continue
		}
		o.daemonPage = o.daemonPage || strings.Contains(line, `alertname="VLLMSLOBurnRateHigh"`) && strings.Contains(line, `severity="page"`)
		o.daemonDown = o.daemonDown || strings.Contains(line, `alertname="VLLMSLOTargetDown"`)
	}
	return o
}

func isPage(labels map[string]string) bool {
	return labels["alertname"] == "VLLMSLOBurnRateHigh" && labels["severity"] == "page"
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return // a transient error leaves the observation empty
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		t.Logf("%s: %v", url, err)
	}
}

// checkPage: both paths fire the page during the overload only, Alertmanager
// holds one alert for it whenever both fire (deduplicated: one group), and
// the page's last resolve comes after the overload (one during it, then
// firing again, is logged).
func checkPage(t *testing.T, obs []observation, events []event, begin time.Time) {
	t.Helper()
	var prom, daemon, both bool
	for _, o := range obs {
		if (o.promPage || o.daemonPage) && o.at < healthyFor {
			t.Errorf("page fires at %v on the healthy workload (prometheus %v, daemon %v)", o.at, o.promPage, o.daemonPage)
		}
		prom, daemon = prom || o.promPage, daemon || o.daemonPage
		if o.promPage && o.daemonPage {
			both = true
			if o.amPages > 1 {
				t.Errorf("at %v Alertmanager holds %d page alerts for one breach", o.at, o.amPages)
			}
		}
	}
	if !prom || !daemon || !both {
		t.Errorf("page fired in prometheus %v, in the daemon %v, in both at once %v", prom, daemon, both)
	}
	groups := map[string]bool{}
	var fired, resolved time.Duration
	var flaps []time.Duration
	for _, e := range events {
		if !isPage(e.labels) {
			continue
		}
		groups[e.group] = true
		if e.status == "firing" && fired == 0 {
			fired = e.at
		}
		if e.status == "resolved" && fired != 0 {
			if e.at < healthyFor+overloadFor {
				flaps = append(flaps, e.at)
			}
			resolved = e.at
		}
	}
	if len(flaps) > 0 {
		// A starved runner can leave one evaluation below the factor
		// mid-overload; the page must still fire again and end resolved
		// after the overload, which the last resolve checks.
		t.Logf("the page resolved during the overload at %v and fired again", flaps)
	}
	switch {
	case len(groups) != 1:
		t.Errorf("page notifications came in %d alert groups, want 1", len(groups))
	case fired < healthyFor:
		t.Errorf("the page was notified at %v, during the healthy period", fired)
	case resolved == 0:
		t.Errorf("the page fired at %v and never resolved", fired)
	case resolved < healthyFor+overloadFor:
		t.Errorf("the page last resolved at %v, before the overload ended", resolved)
	}
}

// checkOutage: both paths raise the target-down alert during the outage, as
// one alert in Alertmanager, and no page starts after vLLM comes back.
func checkOutage(t *testing.T, obs []observation, events []event, begin time.Time) {
	t.Helper()
	var prom, daemon bool
	for _, o := range obs {
		prom, daemon = prom || o.promDown, daemon || o.daemonDown
		if o.amDowns > 1 {
			t.Errorf("at %v Alertmanager holds %d target-down alerts for one outage", o.at, o.amDowns)
		}
	}
	if !prom || !daemon {
		t.Errorf("target down fired in prometheus %v, in the daemon %v", prom, daemon)
	}
	back := begin.Add(outageAt + outageFor)
	for _, e := range events {
		if e.labels["alertname"] == "VLLMSLOBurnRateHigh" && e.status == "firing" && e.startsAt.After(back) {
			t.Errorf("a %s burn alert started at %v, after vLLM came back: %v", e.labels["severity"], e.startsAt.Sub(begin), e.labels)
		}
	}
}
