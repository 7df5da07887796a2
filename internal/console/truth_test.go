package console

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// checkSeriesHoldTheTruth: at every point of a 30-minute series (20 minutes
// healthy, 10 overloaded), the simulator's ground truth over the window
// (the requests that finished between its two scrapes) lies inside the
// drawn bands of joint attainment, goodput, abandoned requests and the e2e
// quantiles, with no tolerance.
func checkSeriesHoldTheTruth(t *testing.T, r *rig) {
	s := series(t, r.console(), seriesURL(hostile, "all", "1m"))
	truth := simtruth.ForModel(r.sim.Truth(), hostile)
	checked := 0
	for i, end := range s.Times {
		if math.IsNaN(float64(s.Attainment[0].Estimate[i])) {
			continue // no window there
		}
		to := time.Unix(0, int64(end*1e9)).UTC().Round(time.Millisecond)
		from := to.Add(-time.Minute)
		if from.Before(start.Add(15 * time.Second)) {
			continue // the history is shorter than the window there
		}
		fin := simtruth.FinishedIn(truth, from, to)
		if len(fin) == 0 {
			continue
		}
		good, goodTokens := 0, 0
		var e2e []float64
		for _, req := range fin {
			e2e = append(e2e, req.E2E())
			if req.TTFT() <= 0.5 && req.TPOT() <= 0.05 {
				good++
				goodTokens += req.OutputTokens
			}
		}
		all := s.Attainment[0]
		// The bounds are whole counts divided by whole counts (and rates whole
		// counts divided by seconds); dividing the true counts the same way
		// keeps the comparison exact (rounding is monotone).
		if ratio := float64(good) / float64(len(fin)); ratio < float64(all.Lower[i]) || ratio > float64(all.Upper[i]) {
			t.Errorf("point %d (%v): true joint attainment %v outside the band [%v, %v]", i, to, ratio, all.Lower[i], all.Upper[i])
		}
		if gt := float64(goodTokens) / to.Sub(from).Seconds(); gt < float64(s.Goodput.Lower[i]) || gt > float64(s.Goodput.Upper[i]) {
			t.Errorf("point %d (%v): true goodput %v tok/s outside the band [%v, %v]", i, to, gt, s.Goodput.Lower[i], s.Goodput.Upper[i])
		}
		// Abandoned: a first token, no finish seen (cancelled or lost).
		left := 0
		for _, req := range append(simtruth.AbandonedIn(truth, from, to), simtruth.LostIn(truth, from, to)...) {
			if !req.FirstToken.IsZero() {
				left++
			}
		}
		if a := float64(left); a < float64(s.Abandoned.Lower[i]) || a > float64(s.Abandoned.Upper[i]) {
			t.Errorf("point %d (%v): true abandoned %v outside the band [%v, %v]", i, to, a, s.Abandoned.Lower[i], s.Abandoned.Upper[i])
		}
		slices.Sort(e2e)
		for _, l := range s.Latency {
			if l.Metric != string(slo.E2E) {
				continue
			}
			v := slo.ExactQuantile(l.Quantile, e2e)
			lo, hi := float64(l.Lower[i]), float64(l.Upper[i])
			if v < lo || (!math.IsNaN(hi) && v > hi) {
				t.Errorf("point %d (%v): true e2e p%v %v outside the bracket [%v, %v]", i, to, 100*l.Quantile, v, lo, hi)
			}
		}
		checked++
	}
	if checked < len(s.Times)/2 {
		t.Errorf("only %d of %d points checked against the truth", checked, len(s.Times))
	}
}
