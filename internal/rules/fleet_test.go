package rules

import "testing"

// TestFleetLevelSLO replays two vLLM servers serving one model, one
// healthy and one missing TTFT on half its requests, through the shipped
// test rules with promtool, and checks that the rules export one SLO for
// the model over both servers' requests: the sum of their intervals'
// counts (200 finished, 150 met every objective, attainment exactly 0.75
// at both bounds, burn rate 2.5), not either server's view (1 and 0.5) and
// not one series per server.
func TestFleetLevelSLO(t *testing.T) {
	runPromtool(t, "test", "rules", "testdata/fleet_test.yml")
}

// TestDecodeTimeReach replays, through the shipped test rules with
// promtool, a server whose finishers' decode times place their first
// tokens within the last two intervals while many TTFT-good requests are
// in flight, and checks that the decode-time reach bounds the finishers
// that missed TTFT by the first tokens there (none), so that the window's
// good requests are bounded exactly; the in-flight bound alone gives 350
// of 400.
func TestDecodeTimeReach(t *testing.T) {
	runPromtool(t, "test", "rules", "testdata/reach_test.yml")
}

// TestStreamingBound replays, through the shipped test rules with
// promtool, a server at which a queue of 300 forms, and checks that the
// windows bound the requests past their first token in flight at their
// start by the first tokens and finishers since an earlier window's start
// (20), not by running + waiting (320): in the abandoned requests' upper
// bound and in the window's good requests' lower bound.
func TestStreamingBound(t *testing.T) {
	runPromtool(t, "test", "rules", "testdata/streaming_test.yml")
}
