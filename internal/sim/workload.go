package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// never is a virtual time that is never reached.
const never = int64(math.MaxInt64)

// arrivals generates a non-homogeneous Poisson process by thinning: candidates
// at the workload's peak rate, each kept with probability rate(t)/peak.
type arrivals struct {
	w      Workload
	starts []int64 // phase start offsets, ns
	period int64   // total length of the phases, ns; 0 if the last lasts forever
	peak   float64 // largest rate anywhere, per second
	cand   int64   // time of the last candidate, ns since Start
}

func newArrivals(w Workload) *arrivals {
	a := &arrivals{w: w}
	var off int64
	for _, p := range w.Phases {
		a.starts = append(a.starts, off)
		off += int64(p.Duration)
		a.peak = math.Max(a.peak, p.Rate)
		switch p.Kind {
		case Ramp:
			a.peak = math.Max(a.peak, p.RateEnd)
		case Bursty:
			a.peak = math.Max(a.peak, p.RateOff)
		}
	}
	if w.Phases[len(w.Phases)-1].Duration > 0 {
		a.period = off
	}
	return a
}

// phaseAt returns the index of the phase running at t ns since Start and
// t's offset into the phases' period, and false once a non-repeating
// workload has ended.
func (a *arrivals) phaseAt(t int64) (int, int64, bool) {
	if a.period > 0 {
		if t >= a.period {
			if !a.w.Repeat {
				return 0, 0, false
			}
			t %= a.period
		}
	}
	i := len(a.starts) - 1
	for i > 0 && a.starts[i] > t {
		i--
	}
	return i, t, true
}

// prompt returns the prompt-length distribution of a request arriving at t
// ns since Start: its phase's when set, else the workload's.
func (a *arrivals) prompt(t int64) LengthDist {
	if i, _, ok := a.phaseAt(t); ok && a.w.Phases[i].Prompt != nil {
		return *a.w.Phases[i].Prompt
	}
	return a.w.Prompt
}

// rate returns the arrival rate (per second) at t ns since Start, and false
// once a non-repeating workload has ended.
func (a *arrivals) rate(t int64) (float64, bool) {
	i, t, ok := a.phaseAt(t)
	if !ok {
		return 0, false
	}
	p := a.w.Phases[i]
	in := t - a.starts[i]
	switch p.Kind {
	case Bursty:
		cycle := int64(p.On + p.Off)
		if in%cycle < int64(p.On) {
			return p.Rate, true
		}
		return p.RateOff, true
	case Ramp:
		f := float64(in) / float64(p.Duration)
		return p.Rate + (p.RateEnd-p.Rate)*f, true
	default:
		return p.Rate, true
	}
}

// next returns the time of the next arrival after the previous one, or never.
func (a *arrivals) next(rng *rand.Rand) int64 {
	if a.peak <= 0 {
		return never
	}
	for {
		gap := rng.ExpFloat64() / a.peak * float64(time.Second)
		if a.cand > never-int64(gap)-1 {
			return never
		}
		a.cand += int64(math.Ceil(gap))
		r, ok := a.rate(a.cand)
		if !ok {
			return never
		}
		if r >= a.peak || rng.Float64()*a.peak < r {
			return a.cand
		}
	}
}

// Sample draws a token count from the distribution: a mixture picks a
// component by weight; otherwise a lognormal exp(ln Median + Sigma·N(0,1))
// (at most 1e9) rounded, or Fixed; clamped to [Min, Max] when set, at least 1.
func (d LengthDist) Sample(rng *rand.Rand) int {
	if len(d.Mixture) > 0 {
		total := 0.0
		for _, c := range d.Mixture {
			total += c.Weight
		}
		x := rng.Float64() * total
		for _, c := range d.Mixture {
			if x < c.Weight {
				return c.Dist.Sample(rng)
			}
			x -= c.Weight
		}
		return d.Mixture[len(d.Mixture)-1].Dist.Sample(rng)
	}
	n := d.Fixed
	if d.Median > 0 {
		v := math.Exp(math.Log(d.Median) + d.Sigma*rng.NormFloat64())
		if v > 1e9 {
			v = 1e9
		}
		n = int(math.Round(v))
	}
	if d.Min > 0 && n < d.Min {
		n = d.Min
	}
	if d.Max > 0 && n > d.Max {
		n = d.Max
	}
	return max(n, 1)
}
