package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// TestDemoOverloadsWithinTwoMinutes: the demo's workload overloads
// demoLead after the start, for sim.DemoOverload, and again every
// sim.DemoPeriod.
func TestDemoOverloadsWithinTwoMinutes(t *testing.T) {
	cfg := sim.DemoConfig(1, time.Now())
	leadIn(&cfg)
	phases := cfg.Models[0].Workload.Phases
	if len(phases) != 3 || phases[0].Duration != demoLead || demoLead > 2*time.Minute {
		t.Fatalf("phases %+v: want a steady %v first", phases, demoLead)
	}
	if phases[1].Rate <= phases[0].Rate || phases[1].Duration != sim.DemoOverload {
		t.Errorf("second phase %+v is not the overload", phases[1])
	}
	var total time.Duration
	for _, p := range phases {
		total += p.Duration
	}
	if total != sim.DemoPeriod || !cfg.Models[0].Workload.Repeat {
		t.Errorf("the workload repeats every %v (repeat %v), want %v", total, cfg.Models[0].Workload.Repeat, sim.DemoPeriod)
	}
	if _, err := sim.New(cfg); err != nil {
		t.Errorf("the simulator refuses the workload: %v", err)
	}
}

// TestDemoConfiguration: with the user's file the demo keeps its SLOs and
// replaces its targets and otlp by the simulator's; an Alertmanager URL
// becomes the alerting section's one Alertmanager; each result is a valid
// configuration.
func TestDemoConfiguration(t *testing.T) {
	user := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(user, []byte(`targets:
  - name: prod
    url: http://10.0.0.1:8000/metrics
slos:
  - name: chat
    objectives: {ttft: 1s}
    goal: 0.95
alerting:
  resend_delay: 2m
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    demoOptions
		slo  string
		am   string
	}{
		{"built in", demoOptions{}, "interactive", ""},
		{"built in with Alertmanager", demoOptions{alertmanagerURL: "http://127.0.0.1:9093"}, "interactive", "http://127.0.0.1:9093"},
		{"user file", demoOptions{configFile: user, alertmanagerURL: "http://127.0.0.1:9093"}, "chat", "http://127.0.0.1:9093"},
	} {
		body, err := demoConfiguration(c.o, "127.0.0.1:18000", "127.0.0.1:14317")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cfg, err := config.Parse(body, "demo.yaml")
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, body)
		}
		if len(cfg.Targets) != 1 || cfg.Targets[0].URL != "http://127.0.0.1:18000/metrics" || !cfg.OTLP.Enabled {
			t.Errorf("%s: targets %+v, otlp %v: want the simulator alone, exact mode on", c.name, cfg.Targets, cfg.OTLP.Enabled)
		}
		if cfg.SLOs[0].Name != c.slo {
			t.Errorf("%s: SLO %s, want %s", c.name, cfg.SLOs[0].Name, c.slo)
		}
		var am string
		if len(cfg.Alerting.Alertmanagers) == 1 {
			am = cfg.Alerting.Alertmanagers[0].URL
		}
		if am != c.am {
			t.Errorf("%s: Alertmanager %q, want %q", c.name, am, c.am)
		}
	}
}

// TestBuildVersion: without -ldflags, the version comes from the build
// information: the main module's version, and the VCS revision and time, the
// revision marked when the tree was modified; without VCS settings (a build
// with -buildvcs=false, or in a linked git worktree, which Go does not stamp)
// the revision and date stay empty, so that --version says "unknown".
func TestBuildVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want builtVersion
	}{
		{"clean tree",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs", "git", "vcs.revision", "f160d36abc", "vcs.time", "2026-12-01T14:00:00Z", "vcs.modified", "false")},
			builtVersion{version: "(devel)", revision: "f160d36abc", date: "2026-12-01T14:00:00Z"}},
		{"modified tree",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "f160d36abc", "vcs.time", "2026-12-01T14:00:00Z", "vcs.modified", "true")},
			builtVersion{version: "(devel)", revision: "f160d36abc-modified", date: "2026-12-01T14:00:00Z"}},
		{"go install of a tagged version",
			debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("-buildmode", "exe", "CGO_ENABLED", "0")},
			builtVersion{version: "v1.4.0"}},
		{"no VCS settings",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("-buildmode", "exe", "-buildvcs", "false")},
			builtVersion{version: "(devel)"}},
		{"modified without a revision",
			debug.BuildInfo{Settings: vcs("vcs.modified", "true")},
			builtVersion{}},
	} {
		if got := buildVersion(&c.bi); got != c.want {
			t.Errorf("%s: build version %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestExternalURL: the flag's value, else the host name and the port of the
// first listen address, as Prometheus derives it.
func TestExternalURL(t *testing.T) {
	host := func() (string, error) { return "gpu-box", nil }
	for _, c := range []struct {
		given  string
		listen []string
		want   string
	}{
		{"https://slo.example.com/", []string{":10042"}, "https://slo.example.com/"},
		{"", []string{":10042"}, "http://gpu-box:10042/"},
		{"", []string{"127.0.0.1:10042", ":9"}, "http://127.0.0.1:10042/"},
		{"", nil, ""},
	} {
		if got := externalURL(c.given, c.listen, host); got != c.want {
			t.Errorf("externalURL(%q, %q) = %q, want %q", c.given, c.listen, got, c.want)
		}
	}
	if got := externalURL("", []string{":1"}, func() (string, error) { return "", errors.New("no name") }); got != "" {
		t.Errorf("without a host name: %q", got)
	}
}

// TestCommandErrorIsOneLine: a command's error is one plain line, without a
// log record's time, level or source.
func TestCommandErrorIsOneLine(t *testing.T) {
	var b strings.Builder
	if code := failTo(&b, "check-config", errors.New(`config.yaml:3: field "goal": must be a number`)); code != 1 {
		t.Errorf("exit %d", code)
	}
	if got, want := b.String(), "vllm-slo-exporter: check-config: config.yaml:3: field \"goal\": must be a number\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCheckConfigWarns: check-config accepts an implausible objective and
// prints its warning on standard error.
func TestCheckConfigWarns(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("targets:\n  - name: a\n    url: http://127.0.0.1:8000/metrics\nslos:\n  - name: s\n    objectives: {ttft: 500s}\n    goal: 0.99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := checkConfigFile(&out, &errOut, f, false, ""); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(errOut.String(), "warning: "+f+":6: slos[0].objectives.ttft: 500s is implausible") || !strings.Contains(out.String(), "OK") {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}

// TestSimulateSendsSpans: simulate --otlp.endpoint sends the spans of the
// requests that finished to an OTLP/HTTP receiver, by the time it stops.
func TestSimulateSendsSpans(t *testing.T) {
	var posts atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	code := make(chan int, 1)
	o := simulateOptions{addr: "127.0.0.1:0", preset: "demo", seed: 1,
		otlpEndpoint: strings.TrimPrefix(receiver.URL, "http://"), otlpProtocol: string(sim.SpanHTTP)}
	go func() { code <- simulate(ctx, slog.New(slog.DiscardHandler), o, func(a string) { addr <- a }) }()
	metrics := "http://" + <-addr + "/metrics"
	finished := regexp.MustCompile(`(?m)^vllm:request_success_total\{[^}]*\} [1-9]`)
	deadline := time.After(30 * time.Second)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for !finished.MatchString(get(t, metrics)) { // each scrape advances the simulator to now
		select {
		case <-deadline:
			t.Fatal("no request finished within 30 s")
		case <-poll.C:
		}
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("simulate: exit %d", c)
	}
	if posts.Load() == 0 {
		t.Error("no span reached the OTLP receiver")
	}
}

// get returns the body of a GET.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
