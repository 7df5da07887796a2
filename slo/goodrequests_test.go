package slo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestGoodRequestsOfIsEvaluates compares GoodRequestsOf with the good
// requests Evaluate reports for each SLO with a nil joint (a slice of
// nils: no ledger's "all", not the whole-window fallback), on random windows
// (histograms present or absent, gauges known or not, no finished request)
// and SLOs of per-request objectives, of ITL alone and of both: the same
// keys and the same numbers, to the bit, and no result where Evaluate has
// none.
func TestGoodRequestsOfIsEvaluates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	edges := []float64{0.05, 0.2, 0.5, 1, math.Inf(1)}
	random := func(n float64) Histogram {
		counts := make([]float64, len(edges))
		left := n
		for i := range counts {
			if i == len(counts)-1 {
				counts[i] = n
				continue
			}
			step := math.Floor(r.Float64() * left)
			left -= step
			counts[i] = n - left
		}
		return Histogram{Edges: edges, Counts: counts, Sum: n * r.Float64()}
	}
	slos := []SLO{
		{Name: "joint", Objectives: []Objective{{Metric: TTFT, Threshold: 0.2}, {Metric: TPOT, Threshold: 0.05}}, Goal: 0.99},
		{Name: "itl", Objectives: []Objective{{Metric: ITL, Threshold: 0.05}}, Goal: 0.9},
		{Name: "both", Objectives: []Objective{{Metric: E2E, Threshold: 1}, {Metric: ITL, Threshold: 0.2}}, Goal: 0.95},
	}
	compared := 0
	for trial := range 500 {
		w := Window{Start: time.Unix(0, 0), End: time.Unix(15, 0), Latency: map[Metric]Histogram{}}
		n := float64(r.IntN(40))
		for _, m := range []Metric{TTFT, TPOT, ITL, E2E} {
			if r.IntN(6) > 0 {
				w.Latency[m] = random(n + float64(r.IntN(3)))
			}
		}
		if r.IntN(2) == 0 {
			w.Running = Gauge{Known: true, AtStart: float64(r.IntN(9)), AtEnd: float64(r.IntN(9))}
			w.Waiting = Gauge{Known: true, AtStart: float64(r.IntN(3)), AtEnd: float64(r.IntN(3))}
		}
		w.InFlightAtRestarts = float64(r.IntN(2))
		rep := Evaluate(w, slos, make([]*Joint, len(slos)), Options{})
		for i, s := range slos {
			good, ok := GoodRequestsOf(w, s)
			if ok != (len(rep.SLOs) == len(slos)) {
				t.Fatalf("trial %d, %s: ok %v, Evaluate reports %d SLOs", trial, s.Name, ok, len(rep.SLOs))
			}
			if !ok {
				continue
			}
			if g, want := fmt.Sprintf("%v", good), fmt.Sprintf("%v", rep.SLOs[i].GoodRequests); g != want {
				t.Fatalf("trial %d, %s: %s, Evaluate %s", trial, s.Name, g, want)
			}
			compared++
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d results compared", compared)
	}
}
