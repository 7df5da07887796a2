package slo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQuantileBracketHoldsTruth draws samples from every workload, observes
// them into histograms with vLLM's edges, and checks that the exact
// nearest-rank quantile lies in the bracket (lower, upper] for every q.
func TestQuantileBracketHoldsTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, w := range workloads {
		for _, n := range []int{1, 2, 7, 100, 1000} {
			s := w.sample(r, n)
			h := histogramOf(w.edges, s)
			for i := 0; i <= 200; i++ {
				q := float64(i) / 200
				truth := ExactQuantile(q, s)
				b := EstimateQuantile(q, h)
				if !(truth > b.Lower && truth <= b.Upper) {
					t.Fatalf("%s n=%d q=%v: truth %v outside (%v, %v]", w.name, n, q, truth, b.Lower, b.Upper)
				}
				if !(b.Lower <= b.Estimate && b.Estimate <= b.Upper) {
					t.Fatalf("%s n=%d q=%v: estimate outside bracket: %+v", w.name, n, q, b)
				}
			}
		}
	}
}

// TestGoodCountHoldsTruth checks that the true number of samples <= a
// threshold lies within GoodCount's bounds, on and off the edges.
func TestGoodCountHoldsTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, w := range workloads {
		s := w.sample(r, 500)
		h := histogramOf(w.edges, s)
		thresholds := append(slices.Clone(w.edges), 0, 1e-4, 0.033, 0.2, 0.45, 0.75, 1.7, 3.3, 9, 10000)
		for range 50 {
			thresholds = append(thresholds, r.ExpFloat64())
		}
		for _, th := range thresholds {
			truth := 0.0
			for _, v := range s {
				if v <= th {
					truth++
				}
			}
			for _, e := range []Estimator{Density, MeanFit, Linear, LogLinear} {
				g := e.GoodCount(th, h)
				if truth < g.Lower || truth > g.Upper || g.Estimate < g.Lower || g.Estimate > g.Upper {
					t.Fatalf("%s %v threshold %v: truth %v, bounds %+v", w.name, e, th, truth, g)
				}
				if OnEdge(th, h.Edges) && !g.IsExact() {
					t.Fatalf("%s threshold %v on an edge but not exact: %+v", w.name, th, g)
				}
			}
		}
	}
}

// simRequest is one request of the timeline simulation below.
type simRequest struct {
	arrival, ttft, tpot float64
	tokens              int
}

func (s simRequest) firstToken() float64 { return s.arrival + s.ttft }
func (s simRequest) finish() float64     { return s.firstToken() + float64(s.tokens-1)*s.tpot }

// timeline simulates requests arriving over [0, 600 s) whose latencies share
// a slowly varying load (so that TTFT and TPOT violations come together, or
// with sign < 0, oppose each other).
func timeline(r *rand.Rand, rate, sign float64) []simRequest {
	var reqs []simRequest
	for t := r.ExpFloat64() / rate; t < 600; t += r.ExpFloat64() / rate {
		load := 1 + 0.8*math.Sin(t/40)
		tok := 1 + int(r.ExpFloat64()*150)
		reqs = append(reqs, simRequest{
			arrival: t,
			ttft:    0.2 * load * math.Exp(0.6*r.NormFloat64()),
			tpot:    0.03 * math.Pow(load, sign) * math.Exp(0.3*r.NormFloat64()),
			tokens:  tok,
		})
	}
	return reqs
}

// windowOf observes a timeline into the Window (start, end] exactly as vLLM
// would: TTFT for requests whose first token is in the window, the rest for
// requests finishing in it, gauges counting requests in flight.
func windowOf(reqs []simRequest, start, end float64, withGauges bool) (Window, []simRequest) {
	var ttft, tpot, e2e, gen []float64
	var finished []simRequest
	inFlight := func(x float64) float64 {
		n := 0.0
		for _, q := range reqs {
			if q.arrival <= x && q.finish() > x {
				n++
			}
		}
		return n
	}
	for _, q := range reqs {
		if ft := q.firstToken(); ft > start && ft <= end {
			ttft = append(ttft, q.ttft)
		}
		if f := q.finish(); f > start && f <= end {
			finished = append(finished, q)
			tpot = append(tpot, q.tpot)
			e2e = append(e2e, q.finish()-q.arrival)
			gen = append(gen, float64(q.tokens))
		}
	}
	w := Window{
		Start: t0.Add(secondsDuration(start)), End: t0.Add(secondsDuration(end)),
		Latency: map[Metric]Histogram{
			TTFT: histogramOf(ttftEdges, ttft),
			TPOT: histogramOf(itlEdges, tpot),
			E2E:  histogramOf(requestEdges, e2e),
		},
		GenerationTokens: histogramOf(tokenEdges, gen),
	}
	if withGauges {
		w.Running = Gauge{Known: true, AtStart: inFlight(start), AtEnd: inFlight(end)}
		w.Waiting = Gauge{Known: true}
	}
	return w, finished
}

// TestJointAndGoodputHoldTruth checks over many windows of simulated
// timelines (TTFT population differing from the finished one, in-flight
// counts known or not, dependence positive or negative) that the true TTFT
// good count in B, the true joint good count and the true goodput tokens lie
// within the bounds that EvaluateWindow reports.
func TestJointAndGoodputHoldTruth(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	slos := []SLO{
		{Name: "edges", Objectives: []Objective{{TTFT, 0.25}, {TPOT, 0.05}}, Goal: 0.9},
		{Name: "off-edges", Objectives: []Objective{{TTFT, 0.3}, {TPOT, 0.035}, {E2E, 6}}, Goal: 0.9},
	}
	windows := 0
	for _, sign := range []float64{1, -1} {
		reqs := timeline(r, 3, sign)
		for start := 30.0; start+60 <= 540; start += 17 {
			for _, gauges := range []bool{true, false} {
				w, fin := windowOf(reqs, start, start+60, gauges)
				rep := EvaluateWindow(w, slos, Options{Quantiles: []float64{0.5, 0.99}})
				checkReport(t, rep)
				if len(fin) == 0 {
					continue
				}
				windows++
				for i, s := range slos {
					res := rep.SLOs[i]
					var ttftGood, allGood, goodTokens float64
					for _, q := range fin {
						ok := true
						for _, o := range s.Objectives {
							v := map[Metric]float64{TTFT: q.ttft, TPOT: q.tpot, E2E: q.finish() - q.arrival}[o.Metric]
							if v > o.Threshold {
								ok = false
							} else if o.Metric == TTFT {
								ttftGood++
							}
						}
						if ok {
							allGood++
							goodTokens += float64(q.tokens)
						}
					}
					within := func(what string, truth float64, b Bounded) {
						if truth < b.Lower-1e-9 || truth > b.Upper+1e-9 {
							t.Fatalf("%s window %v gauges=%v sign=%v: true %s %v outside %+v", s.Name, start, gauges, sign, what, truth, b)
						}
					}
					within("ttft good in B", ttftGood, res.GoodRequests["ttft"])
					within("joint good", allGood, res.GoodRequests[AllKey])
					within("goodput tokens/s", goodTokens/60, res.GoodputTokensPerSecond)
				}
			}
		}
	}
	if windows < 50 {
		t.Fatalf("only %d windows with finished requests", windows)
	}
}

// secondsDuration converts seconds to a time.Duration.
func secondsDuration(s float64) time.Duration { return time.Duration(s * 1e9) }
