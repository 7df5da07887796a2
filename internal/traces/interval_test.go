package traces

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestIntervalAnswersOnlyWhenTheSpansNumberTheFinishers: a scrape
// interval's spans are judged only when they are exactly vLLM's finished
// count; the good requests and their tokens are then exact, and a span
// without its completion tokens leaves the tokens bounded from below only.
// Each per-request objective is counted alone too.
func TestIntervalAnswersOnlyWhenTheSpansNumberTheFinishers(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	// Three spans end in (0, 15s]: e2e 0.5, 1.5 and 3 s; one ends after.
	s.Add([]Span{span("a", 5*time.Second, 0.5), span("b", 10*time.Second, 1.5), span("c", 15*time.Second, 3), span("d", 16*time.Second, 0.5)})
	under2 := slo.SLO{Name: "s", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 2}}}
	from, to := t0, t0.Add(15*time.Second)
	for _, finished := range []int{2, 4} {
		if _, ok := s.Interval("gpu0", "m", false, from, to, finished, []slo.SLO{under2}); ok {
			t.Errorf("%d finished, 3 spans: answered", finished)
		}
	}
	// TTFT is e2e/4: 0.125, 0.375 and 0.75 s, all three under 0.8 s.
	both := slo.SLO{Name: "both", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.8}, {Metric: slo.ITL, Threshold: 0.1}, {Metric: slo.E2E, Threshold: 2}}}
	c, ok := s.Interval("gpu0", "m", false, from, to, 3, []slo.SLO{under2, both})
	if !ok || c.Good[0] != slo.Exact(2) || c.Tokens[0] != slo.Exact(22) || c.Good[1] != slo.Exact(2) {
		t.Fatalf("counts %+v (%v), want exactly 2 good of each SLO and 22 tokens", c, ok)
	}
	if len(c.Objectives) != 2 || len(c.Objectives[0]) != 1 || c.Objectives[0][0] != slo.Exact(2) ||
		len(c.Objectives[1]) != 2 || c.Objectives[1][0] != slo.Exact(3) || c.Objectives[1][1] != slo.Exact(2) {
		t.Errorf("per-objective counts %+v, want [[2] [3 2]] (ITL is on no span)", c.Objectives)
	}
	sp := span("e", 20*time.Second, 0.5)
	sp.CompletionTokens = -1
	s.Add([]Span{sp})
	c, ok = s.Interval("gpu0", "m", false, to, t0.Add(30*time.Second), 2, []slo.SLO{under2})
	if !ok || c.Tokens[0].Lower != 11 || !math.IsInf(c.Tokens[0].Upper, 1) {
		t.Errorf("tokens %+v (%v), want [11, +Inf] with a span lacking its count", c.Tokens, ok)
	}
}
