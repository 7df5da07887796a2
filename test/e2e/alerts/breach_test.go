package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// breachSim is one of the targets of TestOneBreachAcrossTargets: the tiny
// engine of simConfig (~23 requests/s of capacity) overloaded from the start
// (30/s for 10 s builds a queue, 25/s holds it and TTFT broken) for
// overloadFor, then at 5/s, which drains the queue within seconds.
func breachSim(seed uint64, start time.Time, overloadFor time.Duration) sim.Config {
	c := simConfig(start)
	c.Seed, c.Restarts = seed, nil
	c.Models[0].Workload.Phases = []sim.Phase{
		{Duration: 10 * time.Second, Kind: sim.Poisson, Rate: 30},
		{Duration: overloadFor - 10*time.Second, Kind: sim.Poisson, Rate: 25},
		{Kind: sim.Poisson, Rate: 5},
	}
	return c
}

// breachConfig is the daemon's configuration for TestOneBreachAcrossTargets:
// the targets given (name and address), the page of daemonConfig, and the
// Alertmanager (the recording proxy) at am.
const breachConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  windows: [20s, 1m]
targets:
%sslos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.95
    period: 1h
    alerts:
      - {severity: page, long_window: 1m, short_window: 20s, budget_consumed: 0.1, for: 3s}
alerting:
  alertmanagers:
    - url: %s
  resend_delay: 2s
`

// resendDelay is breachConfig's resend_delay.
const resendDelay = 2 * time.Second

// post is one alert the daemon posted to Alertmanager, as the recording
// proxy saw it.
type post struct {
	at       time.Time
	resolved bool
	labels   map[string]string
}

// recorder forwards the daemon's posts to Alertmanager and records them.
type recorder struct {
	am    string
	mu    sync.Mutex
	posts []post
}

func (r *recorder) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		EndsAt time.Time         `json:"endsAt"`
	}
	if err := json.Unmarshal(body, &alerts); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	r.mu.Lock()
	for _, a := range alerts {
		r.posts = append(r.posts, post{at: now, resolved: !a.EndsAt.After(now), labels: a.Labels})
	}
	r.mu.Unlock()
	resp, err := http.Post(r.am+req.URL.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	rw.WriteHeader(resp.StatusCode)
	io.Copy(rw, resp.Body)
}

// pageResolves are the times the daemon posted the page resolved.
func (r *recorder) pageResolves() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, p := range r.posts {
		if p.resolved && isPage(p.labels) {
			out = append(out, p.at)
		}
	}
	return out
}

// breachState is what one poll saw: the targets the daemon fires the page
// for, and how many page alerts Alertmanager holds active.
type breachState struct {
	at       time.Duration
	firing   map[string]bool
	amActive int
}

func (s breachState) anyFiring() bool { return len(s.firing) > 0 }

// pollBreach reads the daemon's vllm_slo_alert_firing series and
// Alertmanager's active alerts.
func pollBreach(t *testing.T, begin time.Time, daemon, am string) breachState {
	t.Helper()
	s := breachState{at: time.Since(begin), firing: map[string]bool{}}
	var aa []struct {
		Labels map[string]string `json:"labels"`
	}
	getJSON(t, am+"/api/v2/alerts?active=true&silenced=false&inhibited=false", &aa)
	for _, a := range aa {
		if isPage(a.Labels) {
			s.amActive++
		}
	}
	resp, err := http.Get(daemon + "/metrics")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "vllm_slo_alert_firing{") || !strings.HasSuffix(line, " 1") ||
			!strings.Contains(line, `alertname="VLLMSLOBurnRateHigh"`) || !strings.Contains(line, `severity="page"`) {
			continue
		}
		if i := strings.Index(line, `target="`); i >= 0 {
			name := line[i+len(`target="`):]
			s.firing[name[:strings.IndexByte(name, '"')]] = true
		}
	}
	return s
}

// TestOneBreachAcrossTargets runs three targets serving one model, all
// overloaded, against the daemon and Debian's Alertmanager. The page has
// no target label, so the three are sources of one Alertmanager alert. The
// test checks, at every poll, that Alertmanager holds the page active while
// any target fires it: when target a recovers, when c is removed by a
// reload, and through a storm of reloads retiring and reviving c; that the
// daemon posts no resolve of the page while a target fires it and none
// closer than resend_delay to another; and that once b recovers too the
// page resolves, notified resolved once.
func TestOneBreachAcrossTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("takes four minutes")
	}
	t.Parallel() // beside TestPageAlertReachesAlertmanagerByBothPaths: both mostly wait on wall-clock time
	need(t, "prometheus-alertmanager")
	dir := t.TempDir()
	bin := build(t, dir)

	begin := time.Now()
	overload := map[string]time.Duration{"a": 30 * time.Second, "b": 170 * time.Second, "c": 170 * time.Second}
	addrs := map[string]string{}
	for i, name := range []string{"a", "b", "c"} {
		s, err := sim.New(breachSim(uint64(i+1), begin, overload[name]))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler(time.Now))
		defer srv.Close()
		addrs[name] = strings.TrimPrefix(srv.URL, "http://")
	}
	hook := &webhook{start: begin}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	amAddr, daemonAddr := freeAddr(t), freeAddr(t)
	rec := &recorder{am: "http://" + amAddr}
	recSrv := httptest.NewServer(rec)
	defer recSrv.Close()

	write(t, filepath.Join(dir, "am.yml"), fmt.Sprintf(alertmanagerConfig, hookSrv.URL))
	start(t, dir, "prometheus-alertmanager", "--config.file=am.yml", "--storage.path=am-data",
		"--web.listen-address="+amAddr, "--cluster.listen-address=")
	cfgFile := filepath.Join(dir, "config.yaml")
	configure := func(names ...string) {
		var targets strings.Builder
		for _, n := range names {
			fmt.Fprintf(&targets, "  - name: %s\n    url: http://%s/metrics\n", n, addrs[n])
		}
		write(t, cfgFile, fmt.Sprintf(breachConfig, targets.String(), recSrv.URL))
	}
	reload := func() {
		resp, err := http.Post("http://"+daemonAddr+"/-/reload", "text/plain", nil)
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload: %s", resp.Status)
		}
	}
	configure("a", "b", "c")
	start(t, dir, bin, "run", "--config.file="+cfgFile, "--web.listen-address="+daemonAddr, "--web.enable-lifecycle")
	waitHTTP(t, "http://"+amAddr+"/-/ready")
	waitHTTP(t, "http://"+daemonAddr+"/-/ready")

	var polls []breachState
	strict := false // set once Alertmanager holds the page
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	// until polls until done holds, failing after limit; every poll checks
	// that Alertmanager holds the page while the daemon fires it.
	until := func(what string, limit time.Duration, done func(breachState) bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for range tick.C {
			s := pollBreach(t, begin, "http://"+daemonAddr, "http://"+amAddr)
			polls = append(polls, s)
			if strict && s.anyFiring() && s.amActive != 1 {
				t.Errorf("at %v the daemon fires the page on %v, Alertmanager holds %d page alerts", s.at, s.firing, s.amActive)
			}
			if done(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v (last poll at %v: daemon fires on %v, Alertmanager holds %d)", what, limit, s.at, s.firing, s.amActive)
			}
		}
	}
	until("all three targets fire and Alertmanager holds the page", 90*time.Second, func(s breachState) bool {
		return s.firing["a"] && s.firing["b"] && s.firing["c"] && s.amActive == 1
	})
	strict = true
	until("target a recovers", 120*time.Second, func(s breachState) bool { return !s.firing["a"] })
	if s := polls[len(polls)-1]; !s.firing["b"] || !s.firing["c"] {
		t.Fatalf("at %v b and c should still fire (overloaded until %v): %v", s.at, overload["b"], s.firing)
	}

	configure("a", "b")
	reload()
	removed := time.Now()
	until("c is gone and 5 resend delays have passed", 30*time.Second, func(s breachState) bool {
		return !s.firing["c"] && time.Since(removed) > 5*resendDelay
	})

	for i := range 30 {
		if i%2 == 0 {
			configure("a", "b", "c")
		} else {
			configure("a", "b")
		}
		reload()
	}
	stormEnd := time.Now()
	until("5 resend delays after the reload storm", 30*time.Second, func(breachState) bool {
		return time.Since(stormEnd) > 5*resendDelay
	})
	if s := polls[len(polls)-1]; !s.firing["b"] {
		t.Fatalf("at %v b should still fire (overloaded until %v): %v", s.at, overload["b"], s.firing)
	}

	until("b recovers", 150*time.Second, func(s breachState) bool { return !s.anyFiring() })
	lastFiring := time.Now()
	until("Alertmanager resolves the page", 30*time.Second, func(s breachState) bool { return s.amActive == 0 })
	resolvedAt := time.Now()
	until("5 resend delays after the resolve", 30*time.Second, func(s breachState) bool {
		if s.amActive != 0 {
			t.Errorf("at %v Alertmanager holds the resolved page again", s.at)
		}
		return time.Since(resolvedAt) > 5*resendDelay
	})

	resolves := rec.pageResolves()
	t.Logf("%d polls; the last target stopped firing at %v; the daemon posted the page resolved %d times, from %v",
		len(polls), lastFiring.Sub(begin), len(resolves), firstAfter(resolves, begin))
	checkResolves(t, resolves, lastFiring, begin)
	var notified []time.Duration
	for _, e := range hook.snapshot() {
		if isPage(e.labels) && e.status == "resolved" {
			notified = append(notified, e.at)
		}
	}
	if len(notified) != 1 {
		t.Errorf("the page was notified resolved at %v, want once", notified)
	}
}

// checkResolves: the daemon posted the page resolved only after the last
// target stopped firing it (lastFiring, give or take one poll), and never
// twice within resend_delay (give or take an evaluation's jitter).
func checkResolves(t *testing.T, resolves []time.Time, lastFiring, begin time.Time) {
	t.Helper()
	if len(resolves) == 0 {
		t.Fatal("the daemon never posted the page resolved")
	}
	for i, r := range resolves {
		if r.Before(lastFiring.Add(-time.Second)) {
			t.Errorf("the daemon posted the page resolved at %v, while a target still fired it (until %v)", r.Sub(begin), lastFiring.Sub(begin))
		}
		if i > 0 && r.Sub(resolves[i-1]) < resendDelay-500*time.Millisecond {
			t.Errorf("resolves posted at %v and %v, closer than resend_delay %v", resolves[i-1].Sub(begin), r.Sub(begin), resendDelay)
		}
	}
}

// firstAfter is the first time of ts after begin, or 0 when there is none.
func firstAfter(ts []time.Time, begin time.Time) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	return ts[0].Sub(begin)
}
