package capacity

import (
	"math"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Baseline is the capacity a mean-based queueing model predicts from the
// same windows, the kind of model llm-d's autoscaler binary-searches: the
// mean TTFT grows like an M/M/1 sojourn time, T0 / (1 − λ/μ), and the mean
// TPOT linearly with load (the batch grows with λ by Little's law); the
// capacity is the highest λ whose predicted means meet the SLO's TTFT and
// TPOT thresholds. It reads means only, so it cannot see the tail the SLO
// is about; it is here to be compared with, not used.
type Baseline struct {
	// Requests is the capacity in req/s, NaN when the fit failed (fewer
	// than three windows, or no load dependence to fit).
	Requests float64
	// T0 and Mu are the fitted TTFT model (seconds, req/s); P0 and P1 the
	// TPOT line (seconds, seconds per req/s).
	T0, Mu, P0, P1 float64
}

// Baseline fits the mean-based model to the learned windows against s's
// TTFT and TPOT thresholds (a missing objective does not limit).
func (l *Learner) Baseline(s slo.SLO) Baseline {
	return FitBaseline(usable(l.windows, l.cfg), s)
}

// FitBaseline fits the mean-based model to windows (see Baseline).
func FitBaseline(ws []Window, s slo.SLO) Baseline {
	b := Baseline{Requests: math.NaN()}
	var ttft, tpot [][3]float64 // load, value, weight
	for _, w := range ws {
		if w.TTFT.Count > 0 && w.TTFT.Value() > 0 {
			ttft = append(ttft, [3]float64{w.Load(), 1 / w.TTFT.Value(), w.TTFT.Count})
		}
		if w.TPOT.Count > 0 {
			tpot = append(tpot, [3]float64{w.Load(), w.TPOT.Value(), w.TPOT.Count})
		}
	}
	// 1/T = (1/T0)·(1 − λ/μ) is a line in λ: intercept 1/T0, slope −1/(T0·μ).
	a, c, ok := line(ttft)
	if !ok || a <= 0 || c >= 0 {
		return b
	}
	b.T0, b.Mu = 1/a, -a/c
	b.P0, b.P1, ok = line(tpot)
	if !ok {
		return b
	}
	meets := func(x float64) bool {
		if x >= b.Mu {
			return false
		}
		for _, o := range s.Objectives {
			switch o.Metric {
			case slo.TTFT:
				if b.T0/(1-x/b.Mu) > o.Threshold {
					return false
				}
			case slo.TPOT:
				if b.P0+b.P1*x > o.Threshold {
					return false
				}
			}
		}
		return true
	}
	if !meets(0) {
		return b
	}
	lo, hi := 0.0, b.Mu
	for range 60 {
		mid := (lo + hi) / 2
		if meets(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	b.Requests = lo
	return b
}

// line is the weighted least-squares line y = a + c·x through pts (x, y,
// weight); ok is false when x does not vary.
func line(pts [][3]float64) (a, c float64, ok bool) {
	var sw, sx, sy, sxx, sxy float64
	for _, p := range pts {
		x, y, w := p[0], p[1], p[2]
		sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*y, sxx+w*x*x, sxy+w*x*y
	}
	d := sw*sxx - sx*sx
	if len(pts) < 3 || d <= 0 {
		return 0, 0, false
	}
	c = (sw*sxy - sx*sy) / d
	return (sy - c*sx) / sw, c, true
}
