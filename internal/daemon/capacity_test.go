package daemon

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestCapacitySeriesServed runs the daemon against a steady simulated vLLM:
// before the learner has enough windows /metrics carries only the load and
// the learning start, with kind="unknown"; after half an hour of a load
// that meets the SLO, a one-sided capacity and no upper end.
func TestCapacitySeriesServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ft := serveTarget(t, n, "gpu0")
		r := startRig(t, n, testConfig([]string{"gpu0 " + ft.url()}, ""))
		advance(5 * time.Minute)
		_, body := r.do("GET", "/metrics")
		if !regexp.MustCompile(`(?m)^vllm_slo_capacity_load_requests_per_second\{kind="unknown",model_name="[^"]+",slo="interactive",target="gpu0"\} [0-9.]+$`).MatchString(body) {
			t.Fatalf("after 5 minutes, no unknown capacity load in /metrics:\n%s", grep(body, "vllm_slo_capacity"))
		}
		if regexp.MustCompile(`(?m)^vllm_slo_capacity_requests_per_second`).MatchString(body) {
			t.Fatalf("a capacity before the learner has enough windows:\n%s", grep(body, "vllm_slo_capacity"))
		}
		advance(35 * time.Minute)
		_, body = r.do("GET", "/metrics")
		if !regexp.MustCompile(`(?m)^vllm_slo_capacity_lower_requests_per_second\{kind="lower_only",model_name="[^"]+",slo="interactive",target="gpu0"\} [0-9.]+$`).MatchString(body) {
			t.Fatalf("after 40 minutes of a load that meets the SLO, no one-sided capacity:\n%s", grep(body, "vllm_slo_capacity"))
		}
		if regexp.MustCompile(`(?m)^vllm_slo_capacity_upper_`).MatchString(body) {
			t.Fatalf("an upper end of a one-sided capacity:\n%s", grep(body, "vllm_slo_capacity"))
		}
		if err := r.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	})
}

// grep returns the lines of s that contain sub.
func grep(s, sub string) string {
	var out strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out.WriteString(line)
		}
	}
	return out.String()
}

// capacityLines is the vllm_slo_capacity_ lines of a /metrics body.
func capacityLines(r *rig) string {
	_, body := r.do("GET", "/metrics")
	var out strings.Builder
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "vllm_slo_capacity_") {
			out.WriteString(line)
		}
	}
	return out.String()
}

// TestCapacitySurvivesRestart learns 40 minutes of a load that meets the
// SLO, restarts on the same state file, and checks that the restarted
// daemon publishes exactly the capacity series the stopped one did, and
// ten minutes later still learns since the same start (what was learned
// was kept, not begun again).
func TestCapacitySurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ft := serveTarget(t, n, "gpu0")
		cfg := testConfig([]string{"gpu0 " + ft.url()}, "state_file: "+filepath.Join(t.TempDir(), "state")+"\n")
		first := startRig(t, n, cfg)
		advance(40 * time.Minute)
		before := capacityLines(first)
		if !strings.Contains(before, `kind="lower_only"`) {
			t.Fatalf("after 40 minutes, no one-sided capacity:\n%s", before)
		}
		if err := first.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		again := startRig(t, n, cfg)
		if got := capacityLines(again); got != before {
			t.Fatalf("after the restart /metrics has\n%s\nbefore it\n%s", got, before)
		}
		if countLines(again.log.String(), "capacity learners restored") != 1 {
			t.Errorf("the restart does not say it restored the learners:\n%s", again.log)
		}
		since := regexp.MustCompile(`(?m)^vllm_slo_capacity_learning_since_timestamp_seconds\{[^}]*\} (\S+)$`)
		advance(10 * time.Minute)
		after := capacityLines(again)
		if m, b := since.FindStringSubmatch(after), since.FindStringSubmatch(before); m == nil || b == nil || m[1] != b[1] || !strings.Contains(after, `kind="lower_only"`) {
			t.Fatalf("ten minutes after the restart:\n%s\nwant lower_only learning since the same start as before it:\n%s", after, before)
		}
	})
}

// TestDamagedCapacitySectionRefusedAlone damages the capacity section of a
// state file: the restarted daemon says so, learns capacity afresh, and
// restores the history all the same.
func TestDamagedCapacitySectionRefusedAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ft := serveTarget(t, n, "gpu0")
		state := filepath.Join(t.TempDir(), "state")
		cfg := testConfig([]string{"gpu0 " + ft.url()}, "state_file: "+state+"\n")
		first := startRig(t, n, cfg)
		advance(40 * time.Minute)
		windowStart := first.windowStart("gpu0")
		if err := first.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-1] ^= 0xff // the capacity section is last
		if err := os.WriteFile(state, data, 0o600); err != nil {
			t.Fatal(err)
		}
		again := startRig(t, n, cfg)
		if countLines(again.log.String(), "capacity section of the state file not usable", "capacity section is damaged") != 1 {
			t.Errorf("no log line says the capacity section was refused:\n%s", again.log)
		}
		if countLines(again.log.String(), "state restored") != 1 {
			t.Errorf("the history was not restored:\n%s", again.log)
		}
		if got := again.windowStart("gpu0"); !got.Equal(windowStart) {
			t.Errorf("the 1h window starts at %v after the restart, want %v (the saved history)", got, windowStart)
		}
		if got := capacityLines(again); strings.Contains(got, "lower_only") {
			t.Errorf("capacity learned before the damaged section is still published:\n%s", got)
		}
	})
}
