package fleetday

import (
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

// newRequest draws a request of mix m arriving at t, its lengths as the
// simulator draws them; outputs are clamped below the engine's calendar
// (ring).
func newRequest(m Mix, t float64, rng *rand.Rand) *request {
	return &request{arrival: t, prompt: m.Prompt.Sample(rng), output: min(m.Output.Sample(rng), ring-1)}
}
