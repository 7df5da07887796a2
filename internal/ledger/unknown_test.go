package ledger

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// ttftOnly is an SLO whose one objective is TTFT <= 0.5 s, an edge of the
// buckets firstTokens uses.
var ttftOnly = slo.SLO{Name: "ttft", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}}

// withFirstTokens is scrapeInterval(k, n, 0, 0) with good first tokens of
// TTFT under 0.5 s and the running gauge at running at both scrapes.
func withFirstTokens(k int, finished, good, running float64) slo.Window {
	w := scrapeInterval(k, finished, 0, 0)
	w.Latency[slo.TTFT] = slo.Histogram{Edges: []float64{0.5, math.Inf(1)}, Counts: []float64{good, good}, Sum: good * 0.1}
	g := slo.Gauge{Known: true, AtStart: running, AtEnd: running, Mean: running, Max: running}
	w.Running, w.Waiting = g, slo.Gauge{Known: true}
	return w
}

// TestUnknownFinishCountIsNoJoint: an interval whose finish count its
// caller marked unknown (e2e appeared in it, so its count from zero need
// not be its finishers) is judged by no SLO, counted or not, whatever its
// e2e histogram holds: every window that holds it has no joint and names
// e2e unknown, rather than a count taken as exact; windows after it have
// theirs, with the requests in flight across it still bounded.
func TestUnknownFinishCountIsNoJoint(t *testing.T) {
	for _, counted := range []bool{true, false} {
		l := New([]slo.SLO{ttftOnly, e2eOnly})
		for k := range 6 {
			w := withFirstTokens(k, 2, 2, 1)
			if k == 1 {
				w.FinishCountUnknown = true // it holds 2 in e2e; they need not have finished here
			}
			recs := l.Append(w, counted || k != 1)
			if ok := len(recs) > 0 && recs[0].GoodKnown; ok == (k == 1) {
				t.Errorf("counted %v, interval %d: a good count to add %v", counted, k, ok)
			}
		}
		at := func(k int) time.Time { return start.Add(time.Duration(k) * 15 * time.Second) }
		for i := range 2 {
			for _, span := range [][2]int{{0, 2}, {1, 2}, {0, 6}, {1, 4}} {
				j, ok := l.Window(i, at(span[0]), at(span[1]))
				if !ok || !slices.Equal(j.Unknown, []slo.Metric{slo.E2E}) {
					t.Errorf("counted %v, SLO %d, window (%d, %d]: joint %v unknown %v, want one naming e2e unknown", counted, i, span[0], span[1], ok, j.Unknown)
				}
			}
			j, ok := l.Window(i, at(2), at(6))
			if !ok || len(j.Unknown) != 0 || j.Finished != 8 {
				t.Errorf("counted %v, SLO %d, window (2, 6]: joint %v over %v finished, unknown %v, want 8 judged", counted, i, ok, j.Finished, j.Unknown)
			}
			if i == 0 && (j.Good.Lower > 8 || j.Good.Upper < 8 || j.Abandoned.Lower > 0) {
				t.Errorf("counted %v: window (2, 6]: good %+v abandoned %+v, want 8 good and none abandoned within them", counted, j.Good, j.Abandoned)
			}
		}
	}
}
