package slo_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// observe builds a histogram over the finite edges (+Inf appended) from
// values, as vLLM's client library does.
func observe(edges, values []float64) slo.Histogram {
	h := slo.Histogram{Edges: append(slices.Clone(edges), math.Inf(1)), Counts: make([]float64, len(edges)+1)}
	for _, v := range values {
		h.Sum += v
		for i, e := range h.Edges {
			if v <= e {
				h.Counts[i]++
			}
		}
	}
	return h
}

// values reads one metric of every request.
func values(t sim.Truth, metric slo.Metric) []float64 {
	var out []float64
	for _, r := range t {
		v, _ := r.Value(string(metric))
		out = append(out, v)
	}
	return out
}

// simWindow builds the Window vLLM's histograms would give over (from, to]
// from the simulator's truth: the same populations and observation times.
func simWindow(truth sim.Truth, from, to time.Time) slo.Window {
	first, fin := simtruth.FirstTokenIn(truth, from, to), simtruth.FinishedIn(truth, from, to)
	req := sim.DefaultRequestLatencyBuckets()
	w := slo.Window{Start: from, End: to, Latency: map[slo.Metric]slo.Histogram{
		slo.TTFT: observe(sim.DefaultTTFTBuckets(), values(first, slo.TTFT)),
	}}
	for _, m := range []slo.Metric{slo.TPOT, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference} {
		edges := req
		if m == slo.TPOT {
			edges = sim.DefaultITLBuckets()
		}
		w.Latency[m] = observe(edges, values(fin, m))
	}
	var gen []float64
	for _, r := range fin {
		gen = append(gen, float64(r.OutputTokens))
	}
	w.GenerationTokens = observe(sim.TokenBuckets(32768), gen)
	s, e := simtruth.InFlightAt(truth, from), simtruth.InFlightAt(truth, to)
	w.Running = slo.Gauge{Known: true, AtStart: float64(s.Running), AtEnd: float64(e.Running)}
	w.Waiting = slo.Gauge{Known: true, AtStart: float64(s.Waiting), AtEnd: float64(e.Waiting)}
	return w
}

// TestSimulatorTruth runs the demo workload (steady load with overload
// bursts that break the SLO) and checks, over many 1-minute and 5-minute
// windows, that every bracket and bound EvaluateWindow reports holds the
// simulator's ground truth: quantiles, per-objective attainment, TTFT carried
// onto the finished requests, joint attainment and goodput tokens. It also
// logs the mean relative error of our p50/p99 and Prometheus's against the
// truth (-v).
func TestSimulatorTruth(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := sim.DemoConfig(42, start)
	cfg.DiscardTokenTimes = true // ITL is not checked here; token times are the bulk of the truth
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	span := 14 * time.Minute // covers one overload burst (minutes 8 to 10)
	if testing.Short() {
		span = 11 * time.Minute
	}
	s.AdvanceTo(start.Add(span))
	truth := s.Truth()
	interactive := slo.SLO{Name: "interactive", Goal: 0.99, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}
	strict := slo.SLO{Name: "strict", Goal: 0.9, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.3}, {Metric: slo.TPOT, Threshold: 0.035}, {Metric: slo.E2E, Threshold: 7}}}
	qs := []float64{0.5, 0.9, 0.99}
	var oursErr, promErr, compared float64
	windows := 0
	for _, length := range []time.Duration{time.Minute, 5 * time.Minute} {
		for end := start.Add(length + time.Minute); !end.After(start.Add(span)); end = end.Add(43 * time.Second) {
			from := end.Add(-length)
			w := simWindow(truth, from, end)
			rep := slo.EvaluateWindow(w, []slo.SLO{interactive, strict}, slo.Options{Quantiles: qs})
			windows++
			fin := simtruth.FinishedIn(truth, from, end)
			for _, m := range []slo.Metric{slo.TTFT, slo.TPOT, slo.E2E, slo.Queue} {
				vals := values(fin, m)
				if m == slo.TTFT {
					vals = values(simtruth.FirstTokenIn(truth, from, end), m)
				}
				slices.Sort(vals)
				for _, q := range rep.Quantiles[m] {
					exact := slo.ExactQuantile(q.Q, vals)
					if !(exact > q.Lower && exact <= q.Upper) {
						t.Fatalf("%s window %v..%v q=%v: truth %v outside (%v, %v]", m, from, end, q.Q, exact, q.Lower, q.Upper)
					}
					if exact > 0 && !math.IsInf(q.Estimate, 0) {
						oursErr += math.Abs(q.Estimate-exact) / exact
						promErr += math.Abs(slo.PrometheusQuantile(q.Q, w.Latency[m])-exact) / exact
						compared++
					}
				}
			}
			for i, o := range []slo.SLO{interactive, strict} {
				res := rep.SLOs[i]
				var ttftGood, allGood, goodTokens float64
				for _, r := range fin {
					ok := true
					for _, ob := range o.Objectives {
						v, _ := r.Value(string(ob.Metric))
						if v > ob.Threshold {
							ok = false
						} else if ob.Metric == slo.TTFT {
							ttftGood++
						}
					}
					if ok {
						allGood++
						goodTokens += float64(r.OutputTokens)
					}
				}
				secs := end.Sub(from).Seconds()
				for what, c := range map[string]struct {
					truth float64
					b     slo.Bounded
				}{
					"ttft good in B": {ttftGood, res.GoodRequests["ttft"]},
					"joint good":     {allGood, res.GoodRequests[slo.AllKey]},
					"goodput tok/s":  {goodTokens / secs, res.GoodputTokensPerSecond},
				} {
					if c.truth < c.b.Lower-1e-9 || c.truth > c.b.Upper+1e-9 {
						t.Fatalf("%s window %v..%v: true %s %v outside %+v", o.Name, from, end, what, c.truth, c.b)
					}
				}
			}
		}
	}
	if windows < 20 || compared == 0 {
		t.Fatalf("only %d windows, %v quantiles compared", windows, compared)
	}
	t.Logf("%d windows: mean relative error of quantiles vs truth: ours %.4f, Prometheus %.4f", windows, oursErr/compared, promErr/compared)
	if oursErr > promErr {
		t.Errorf("our quantile error %.4f exceeds Prometheus's %.4f on simulator truth", oursErr/compared, promErr/compared)
	}
}
