package daemon

import (
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
