package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// TestDaemon runs the daemon against a live simulator and checks what it
// serves against the simulator's truth (issue 4).
func TestDaemon(t *testing.T) {
	t.Parallel()
	s := startSim(t, nil)
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{liveTarget, s.url()}}, ""))
	// Let the 5s window fill, with a margin of a few scrapes.
	time.Sleep(5*time.Second + 2*liveInterval)
	// On a loaded machine a scrape of the in-process simulator may time out
	// now and then; the target is up again at the next one.
	var ss series
	waitFor(t, 5*time.Second, "vllm_slo_target_up 1", func() bool {
		ss = d.metrics(t)
		v, ok := ss.one(t, "vllm_slo_target_up", map[string]string{"target": liveTarget})
		return ok && v == 1
	})
	instants := s.scrapes()
	truth := s.sim.Truth()
	if len(ss.find("vllm_slo_exporter_build_info", nil)) != 1 {
		t.Errorf("vllm_slo_exporter_build_info missing")
	}
	checkInvariants(t, ss)
	for _, w := range []struct {
		label  string
		length time.Duration
	}{{"2s", 2 * time.Second}, {"5s", 5 * time.Second}, {"1m", time.Minute}} {
		// The window spans two of the daemon's scrapes: its nominal length
		// give or take one scrape interval (p0 is the last point at or
		// before end−length), plus scheduling slop.
		if msg, ok := windowMatchesTruth(ss, liveTarget, truth, instants, sim.DemoModel, w.label, w.length, liveInterval+150*time.Millisecond); !ok {
			t.Error(msg)
		}
	}
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
