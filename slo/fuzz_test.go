package slo

import (
	"encoding/binary"
	"math"
	"testing"
)

// histogramFromBytes decodes fuzz input into a histogram: each 4 bytes give an
// edge increment (uint16, in thousandths, may be 0 to produce invalid
// histograms) and a cumulative count change (int8 around the previous count,
// may decrease); +Inf closes it.
func histogramFromBytes(data []byte, sum float64) Histogram {
	h := Histogram{Sum: sum}
	edge, count := -0.5, 0.0
	for len(data) >= 4 && len(h.Edges) < 30 {
		edge += float64(binary.LittleEndian.Uint16(data)) / 1000
		count = math.Max(0, count+float64(int8(data[2])))
		h.Edges = append(h.Edges, edge)
		h.Counts = append(h.Counts, count+float64(data[3]%2)/2)
		data = data[4:]
	}
	h.Edges = append(h.Edges, inf)
	h.Counts = append(h.Counts, count+float64(len(data)))
	return h
}

func FuzzQuantile(f *testing.F) {
	f.Add(0.5, 10.0, []byte{100, 0, 5, 0, 200, 0, 10, 0})
	f.Add(0.99, math.NaN(), []byte{0, 0, 1, 1})
	f.Add(0.0, -1.0, []byte{})
	f.Add(1.0, 1e300, []byte{255, 255, 127, 0, 1, 0, 128, 1})
	f.Fuzz(func(t *testing.T, q, sum float64, data []byte) {
		h := histogramFromBytes(data, sum)
		_ = PrometheusQuantile(q, h)
		for _, e := range []Estimator{Density, MeanFit, Linear, LogLinear} {
			b := e.Quantile(q, h)
			lo, up, ok := QuantileBracket(q, h)
			if !ok {
				continue
			}
			if math.IsNaN(b.Estimate) || b.Lower != lo || b.Upper != up || b.Estimate < lo || b.Estimate > up {
				t.Fatalf("%v: %+v for bracket (%v, %v] of %+v", e, b, lo, up, h)
			}
			for _, th := range []float64{q, sum, lo, up} {
				g := e.GoodCount(th, h)
				if math.IsNaN(g.Estimate) || g.Lower > g.Estimate || g.Estimate > g.Upper {
					t.Fatalf("%v GoodCount(%v) = %+v of %+v", e, th, g, h)
				}
			}
		}
	})
}

func FuzzEvaluateWindow(f *testing.F) {
	f.Add(60.0, []byte{100, 0, 5, 0, 200, 0, 10, 0}, []byte{10, 0, 3, 0}, 3.0, 4.0, 0.25, 100.0)
	f.Add(0.0, []byte{}, []byte{}, 0.0, 0.0, 0.0, 0.0)
	f.Add(1e-9, []byte{1, 0, 127, 1}, []byte{1, 0, 128, 0}, math.NaN(), -1.0, math.Inf(1), math.NaN())
	f.Fuzz(func(t *testing.T, seconds float64, a, b []byte, atStart, atEnd, threshold, sum float64) {
		if math.IsNaN(seconds) || math.Abs(seconds) > 1e9 {
			seconds = 60
		}
		ha, hb := histogramFromBytes(a, sum), histogramFromBytes(b, sum/2)
		w := Window{
			Start: t0, End: t0.Add(secondsDuration(seconds)),
			Latency:          map[Metric]Histogram{TTFT: ha, TPOT: hb, E2E: hb, ITL: ha, Queue: ha},
			GenerationTokens: ha,
			Running:          Gauge{Known: true, AtStart: atStart, AtEnd: atEnd, Mean: atStart},
			Waiting:          Gauge{Known: true, AtStart: atEnd, AtEnd: atStart, Mean: atEnd},
		}
		slos := []SLO{
			{Name: "a", Objectives: []Objective{{TTFT, threshold}, {TPOT, threshold / 2}, {ITL, threshold}}, Goal: 0.99},
			{Name: "b", Objectives: []Objective{{E2E, threshold}}, Goal: threshold},
		}
		checkReport(t, EvaluateWindow(w, slos, Options{Quantiles: []float64{0.5, 0.9, 0.99, threshold}}))
	})
}
