package e2e

import (
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// longWindowRequests is the e2e count of the 1m window: longer than any test
// runs, so it holds the whole history and only grows — unless history is lost.
func longWindowRequests(t *testing.T, ss series, target string) (float64, bool) {
	return ss.one(t, "vllm_slo_window_requests", map[string]string{"target": target, "model_name": sim.DemoModel, "metric": "e2e", "window": "1m"})
}

func reloadOK(t *testing.T, ss series) float64 {
	v, ok := ss.one(t, "vllm_slo_exporter_config_last_reload_successful", nil)
	if !ok {
		t.Fatalf("vllm_slo_exporter_config_last_reload_successful missing")
	}
	return v
}

// TestReload changes the configuration under a running daemon through
// POST /-/reload and SIGHUP, and feeds it an invalid one.
func TestReload(t *testing.T) {
	t.Parallel()
	simA, simB := startSim(t, nil), startSim(t, nil)
	dir := t.TempDir()
	d := startDaemon(t, dir, liveConfig("0.99", [][2]string{{liveTarget, simA.url()}}, ""), "--web.enable-lifecycle")
	var before float64
	waitFor(t, 10*time.Second, "target a's 1m window to count requests", func() bool {
		v, ok := longWindowRequests(t, d.metrics(t), liveTarget)
		before = v
		return ok && v > 0
	})

	if code, _ := get(t, nil, d.base+"/-/reload"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload = %d, want 405", code)
	}

	// A second target and a new goal, by POST.
	writeFile(t, dir, "config.yaml", liveConfig("0.95", [][2]string{{liveTarget, simA.url()}, {"b", simB.url()}}, ""))
	if code := post(t, d.base+"/-/reload"); code != http.StatusOK {
		t.Fatalf("POST /-/reload = %d, want 200", code)
	}
	var ss series
	waitFor(t, 10*time.Second, "target b's series", func() bool {
		ss = d.metrics(t)
		v, ok := ss.one(t, "vllm_slo_target_up", map[string]string{"target": "b"})
		return ok && v == 1
	})
	if v := reloadOK(t, ss); v != 1 {
		t.Errorf("config_last_reload_successful = %v after a good reload, want 1", v)
	}
	// History of the unchanged target survived: a fresh start would count
	// only the requests since the reload.
	if after, ok := longWindowRequests(t, ss, liveTarget); !ok || after < before {
		t.Errorf("target a's 1m window counts %v (present %v) after the reload, %v before: history lost", after, ok, before)
	}
	if _, body := get(t, nil, d.base+"/config"); !strings.Contains(body, "goal: 0.95") {
		t.Errorf("/config does not show the new goal:\n%s", body)
	}
	checkBurnUsesGoal(t, ss, 0.95)

	// An invalid file is refused; the old configuration keeps serving.
	writeFile(t, dir, "config.yaml", "global:\n  scrape_interval: soon\n")
	if code := post(t, d.base+"/-/reload"); code == http.StatusOK {
		t.Errorf("POST /-/reload with an invalid file = 200, want an error")
	}
	ss = d.metrics(t)
	if v := reloadOK(t, ss); v != 0 {
		t.Errorf("config_last_reload_successful = %v after a bad reload, want 0", v)
	}
	for _, target := range []string{liveTarget, "b"} {
		// Both targets are still scraped (a rare timeout on a loaded
		// machine is followed by a good scrape).
		waitFor(t, 5*time.Second, "target_up{"+target+"} 1 after a bad reload", func() bool {
			v, ok := d.metrics(t).one(t, "vllm_slo_target_up", map[string]string{"target": target})
			return ok && v == 1
		})
	}
	if _, body := get(t, nil, d.base+"/config"); !strings.Contains(body, "goal: 0.95") {
		t.Errorf("/config lost the running configuration after a bad reload:\n%s", body)
	}

	// SIGHUP reloads too: target b goes, target c comes.
	writeFile(t, dir, "config.yaml", liveConfig("0.95", [][2]string{{liveTarget, simA.url()}, {"c", simB.url()}}, ""))
	if err := d.cmd.Process.Signal(sighup); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "target c's series after SIGHUP", func() bool {
		ss = d.metrics(t)
		_, okC := ss.one(t, "vllm_slo_target_up", map[string]string{"target": "c"})
		_, okB := ss.one(t, "vllm_slo_target_up", map[string]string{"target": "b"})
		return okC && !okB
	})
	if v := reloadOK(t, ss); v != 1 {
		t.Errorf("config_last_reload_successful = %v after SIGHUP, want 1", v)
	}
	if !d.running() {
		t.Fatalf("daemon exited on SIGHUP")
	}
}

// checkBurnUsesGoal asserts burn_rate_upper = (1 − attainment_lower{all}) /
// (1 − goal) wherever the attainment bound is below 1 (elsewhere both are 0
// whatever the goal).
func checkBurnUsesGoal(t *testing.T, ss series, goal float64) {
	t.Helper()
	for _, att := range ss.find("vllm_slo_attainment_lower_ratio", map[string]string{"objective": "all"}) {
		if att.value >= 1 {
			continue
		}
		labels := with(att.labels)
		delete(labels, "objective")
		burn, ok := ss.one(t, "vllm_slo_burn_rate_upper", labels)
		if !ok {
			t.Errorf("%s: no burn_rate_upper", att.key())
			continue
		}
		if want := (1 - att.value) / (1 - goal); math.Abs(burn-want) > 1e-9*want {
			t.Errorf("%s: burn_rate_upper = %v, want (1−%v)/(1−%v) = %v", att.key(), burn, att.value, goal, want)
		}
	}
}

// post sends an empty POST and returns the status.
func post(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStateFile stops the daemon with SIGTERM and starts it again on its
// state file: the windows carry on as if it had not stopped. A corrupt state
// file does not stop the start.
func TestStateFile(t *testing.T) {
	t.Parallel()
	s := startSim(t, nil)
	dir := t.TempDir()
	state := dir + "/state"
	cfg := liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, "state_file: "+state+"\n")
	d := startDaemon(t, dir, cfg)
	// A few seconds of history, and requests in it, before the stop.
	var before float64
	waitFor(t, 20*time.Second, "3 s of scrapes with requests in the 1m window", func() bool {
		v, ok := longWindowRequests(t, d.metrics(t), liveTarget)
		before = v
		return ok && v > 0 && scrapeSpan(s.scrapes()) >= 3*time.Second
	})
	if code := d.stop(t, sigterm, 15*time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatalf("state file after SIGTERM: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	good, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}

	d2 := runDaemonFile(t, d.config)
	var ss series
	waitFor(t, 5*time.Second, "the 1m window after the restart", func() bool {
		ss = d2.metrics(t)
		_, ok := longWindowRequests(t, ss, liveTarget)
		return ok
	})
	after, _ := longWindowRequests(t, ss, liveTarget)
	if after < before {
		t.Errorf("1m window counts %v after the restart, %v before the stop: history lost", after, before)
	}
	// Uninterrupted reference: the 1m window still starts at the very first
	// scrape, so its counts are the truth from that scrape to a recent one
	// (polled, as a late scrape stretches a window for a while).
	eventually(t, 10*time.Second, "the 1m window to match the truth since the first scrape", func() (string, bool) {
		return windowMatchesTruth(d2.metrics(t), liveTarget, s.sim.Truth(), s.scrapes(), sim.DemoModel, "1m", time.Minute, liveInterval)
	})
	if !strings.Contains(d2.stderr.String(), "state restored") {
		t.Errorf("log does not say the state was restored:\n%s", tail(d2.stderr.String(), 2000))
	}
	if code := d2.stop(t, sigterm, 15*time.Second); code != 0 {
		t.Fatalf("second exit code after SIGTERM = %d, want 0", code)
	}

	for _, c := range []struct {
		name string
		data []byte
	}{
		{"random", []byte("\x8f\x00garbage\xff\xfe not a state file \x01\x02")},
		{"truncated", good[:len(good)/2]},
		{"empty", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(state, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			d := runDaemonFile(t, d.config) // fails unless it becomes ready
			// Still running two scrapes later.
			served := len(s.scrapes())
			waitFor(t, 10*time.Second, "two more scrapes", func() bool {
				return len(s.scrapes()) >= served+2 || !d.running()
			})
			if !d.running() {
				t.Fatalf("daemon exited with %d on a %s state file", d.exit, c.name)
			}
			if log := d.stderr.String(); !strings.Contains(log, "state file not usable") {
				t.Errorf("log does not say the %s state file was not usable:\n%s", c.name, tail(log, 2000))
			}
			if code := d.stop(t, sigterm, 15*time.Second); code != 0 {
				t.Errorf("exit code after SIGTERM = %d, want 0", code)
			}
		})
	}
}
