package fleetday

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// Mix is the clients' request shapes: internal/sim's length distributions
// of prompts and outputs.
type Mix struct {
	Name           string
	Prompt, Output sim.LengthDist
}

// DemoMix is sim.DemoConfig's mix: 80% chat prompts (median 400 tokens),
// 20% long-context ones (median 2500), outputs of median 180 tokens.
func DemoMix() Mix {
	w := sim.DemoConfig(1, time.Time{}).Models[0].Workload
	return Mix{Name: "demo", Prompt: w.Prompt, Output: w.Output}
}

// LongMix is the demo mix with prompts and outputs about 1.5 times as
// long (prompt medians 600 and 3750 tokens, output median 270).
func LongMix() Mix {
	m := DemoMix()
	m.Name = "long"
	m.Prompt = sim.LengthDist{Mixture: []sim.Component{
		{Weight: 0.8, Dist: sim.LengthDist{Median: 600, Sigma: 0.8, Min: 12, Max: 6000}},
		{Weight: 0.2, Dist: sim.LengthDist{Median: 3750, Sigma: 0.5, Min: 750, Max: 15000}},
	}}
	m.Output.Median *= 1.5
	return m
}

// draw samples a token count as internal/sim does: a mixture picks a
// component by weight; otherwise a lognormal exp(ln Median + Sigma·N(0,1))
// rounded, or Fixed; clamped to [Min, Max] when set, at least 1. Outputs
// are further clamped below the engine's calendar (ring).
func draw(d sim.LengthDist, rng *rand.Rand) int {
	if len(d.Mixture) > 0 {
		total := 0.0
		for _, c := range d.Mixture {
			total += c.Weight
		}
		x := rng.Float64() * total
		for _, c := range d.Mixture {
			if x < c.Weight {
				return draw(c.Dist, rng)
			}
			x -= c.Weight
		}
		return draw(d.Mixture[len(d.Mixture)-1].Dist, rng)
	}
	n := d.Fixed
	if d.Median > 0 {
		n = int(math.Round(math.Min(1e9, math.Exp(math.Log(d.Median)+d.Sigma*rng.NormFloat64()))))
	}
	if d.Min > 0 && n < d.Min {
		n = d.Min
	}
	if d.Max > 0 && n > d.Max {
		n = d.Max
	}
	return max(n, 1)
}

// newRequest draws a request of mix m arriving at t.
func newRequest(m Mix, t float64, rng *rand.Rand) *request {
	return &request{arrival: t, prompt: draw(m.Prompt, rng), output: min(draw(m.Output, rng), ring-1)}
}
