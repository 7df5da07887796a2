package days

import (
	"math"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// InWorkUnits rescales a day's intervals so that a learner counts load in
// work instead of requests: each interval's arrivals and queue are
// multiplied by the work per request of the mix around it (prompt·wp +
// output·wo tokens per finished request, pooled over the span intervals
// up to it) over that of the mix at the day's end. A learner fed them
// learns a curve in requests of the final mix, keeping the windows before
// a change of the mix instead of dropping them, which is what a work unit
// that survives a mix shift would buy. It is a measurement, not what the
// daemon does: the mix of the finished requests stands for that of the
// arrivals, and the weights are the caller's (see bench/cmd/capacity's
// mixunit command).
func InWorkUnits(ivs []capacity.Interval, wp, wo float64, span int) []capacity.Interval {
	out := make([]capacity.Interval, len(ivs))
	unit := make([]float64, len(ivs))
	var p, o, n float64
	for i, iv := range ivs {
		p, o, n = p+iv.PromptTokens, o+iv.OutputTokens, n+iv.Finished
		if j := i - span; j >= 0 {
			p, o, n = p-ivs[j].PromptTokens, o-ivs[j].OutputTokens, n-ivs[j].Finished
		}
		unit[i] = math.NaN()
		if n > 0 {
			unit[i] = (wp*p + wo*o) / n
		}
	}
	ref := math.NaN()
	if len(unit) > 0 {
		ref = unit[len(unit)-1]
	}
	for i, iv := range ivs {
		if f := unit[i] / ref; f > 0 && !math.IsInf(f, 0) {
			iv.FirstTokens, iv.WaitingStart, iv.WaitingEnd = iv.FirstTokens*f, iv.WaitingStart*f, iv.WaitingEnd*f
		}
		out[i] = iv
	}
	return out
}

// Replay feeds intervals to a fresh learner under cfg and scores its
// estimate at the day's end as ScoreOf scores a run.
func Replay(d Day, seed uint64, ivs []capacity.Interval, cfg capacity.Config, k Knees) Score {
	l := capacity.NewLearner(cfg)
	for _, iv := range ivs {
		l.Add(iv)
	}
	r := Result{Day: d, Seed: seed, Final: l.Estimate(Start.Add(d.Length)), Baseline: l.Baseline(SLO), Windows: l.Windows()}
	return ScoreOf(r, k)
}
