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
func TestIntervalAnswersOnlyWhenTheSpansNumberTheFinishers(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	// Three spans end in (0, 15s]: e2e 0.5, 1.5 and 3 s; one ends after.
	s.Add([]Span{span("a", 5*time.Second, 0.5), span("b", 10*time.Second, 1.5), span("c", 15*time.Second, 3), span("d", 16*time.Second, 0.5)})
	under2 := slo.SLO{Name: "s", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 2}}}
	from, to := t0, t0.Add(15*time.Second)
	for _, finished := range []int{2, 4} {
		if _, _, ok := s.Interval("gpu0", "m", false, from, to, finished, []slo.SLO{under2}); ok {
			t.Errorf("%d finished, 3 spans: answered", finished)
		}
	}
	good, tokens, ok := s.Interval("gpu0", "m", false, from, to, 3, []slo.SLO{under2})
	if !ok || good[0] != slo.Exact(2) || tokens[0] != slo.Exact(22) {
		t.Fatalf("good %+v, tokens %+v (%v), want exactly 2 and 22", good, tokens, ok)
	}
	sp := span("e", 20*time.Second, 0.5)
	sp.CompletionTokens = -1
	s.Add([]Span{sp})
	_, tokens, ok = s.Interval("gpu0", "m", false, to, t0.Add(30*time.Second), 2, []slo.SLO{under2})
	if !ok || tokens[0].Lower != 11 || !math.IsInf(tokens[0].Upper, 1) {
		t.Errorf("tokens %+v (%v), want [11, +Inf] with a span lacking its count", tokens, ok)
	}
}
