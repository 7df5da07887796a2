package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// TestDaemon runs the daemon against a live simulator and checks what it
// serves against the simulator's truth.
func TestDaemon(t *testing.T) {
	t.Parallel()
	s := startSim(t, nil)
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, ""))
	// The 5s window is full once the scrapes span it, with a margin of two.
	waitFor(t, 30*time.Second, "scrapes spanning the 5s window", func() bool {
		return scrapeSpan(s.scrapes()) >= 5*time.Second+2*liveInterval
	})
	// A window spans two of the daemon's scrapes: its nominal length give or
	// take one scrape interval (p0 is the last point at or before
	// end−length). On a loaded machine a scrape may be late (or time out),
	// which stretches the windows around it for a while: poll until an
	// evaluation matches the truth, with an overall deadline.
	var ss series
	eventually(t, 20*time.Second, "every window to match the truth", func() (string, bool) {
		ss = d.metrics(t)
		if v, ok := ss.one(t, "vllm_slo_target_up", map[string]string{"target": liveTarget}); !ok || v != 1 {
			return fmt.Sprintf("vllm_slo_target_up = %v (present %v)", v, ok), false
		}
		instants, truth := s.scrapes(), s.sim.Truth()
		for _, w := range []struct {
			label  string
			length time.Duration
		}{{"2s", 2 * time.Second}, {"5s", 5 * time.Second}, {"1m", time.Minute}} {
			if msg, ok := windowMatchesTruth(ss, liveTarget, truth, instants, sim.DemoModel, w.label, w.length, liveInterval); !ok {
				return msg, false
			}
		}
		return "", true
	})
	if len(ss.find("vllm_slo_exporter_build_info", nil)) != 1 {
		t.Errorf("vllm_slo_exporter_build_info missing")
	}
	checkInvariants(t, ss)
}

// scrapeSpan is the time between the first and the last of instants.
func scrapeSpan(instants []time.Time) time.Duration {
	if len(instants) < 2 {
		return 0
	}
	return instants[len(instants)-1].Sub(instants[0])
}

// TestReadyMeansServing checks that once /-/ready answers 200 the target's
// series are on /metrics, even with an evaluation interval much longer than
// the scrape interval: the daemon evaluates as soon as every target was tried.
func TestReadyMeansServing(t *testing.T) {
	t.Parallel()
	s := startSim(t, nil)
	cfg := strings.Replace(liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, ""), "evaluation_interval: 250ms", "evaluation_interval: 10s", 1)
	d := startDaemon(t, t.TempDir(), cfg)
	if _, ok := d.metrics(t).one(t, "vllm_slo_target_up", map[string]string{"target": liveTarget}); !ok {
		t.Errorf("ready, but /metrics has no vllm_slo_target_up for the target")
	}
}
