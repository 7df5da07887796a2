package sim

import (
	"fmt"
	"sort"
	"time"
)

// DemoModel is the model name of the demo preset.
const DemoModel = "Qwen/Qwen2.5-7B-Instruct"

// Demo workload timing: every DemoPeriod, the last DemoOverload of it runs at
// DemoOverloadFactor times the steady rate.
const (
	DemoPeriod         = 10 * time.Minute
	DemoOverload       = 2 * time.Minute
	DemoOverloadFactor = 3.0
	// DemoRate is the steady arrival rate of the demo, requests per second.
	DemoRate = 5.0
)

// DemoEngine is an engine cost model in the range of a 7B model on one
// data-center GPU: ~14 ms decode steps at small batch, ~50 µs per prefilled
// prompt token.
var DemoEngine = EngineParams{
	MaxNumSeqs:       96,
	MaxBatchedTokens: 8192,
	KVCapacityTokens: 200_000,
	StepBase:         12 * time.Millisecond,
	DecodePerSeq:     250 * time.Microsecond,
	PrefillPerToken:  50 * time.Microsecond,
	Jitter:           0.08,
}

// DemoConfig is the realistic demo workload: one model on two engines, mixed
// prompt lengths (chat and long-context), a steady load that meets an
// interactive SLO (TTFT ≤ 500 ms, TPOT ≤ 50 ms) nearly always, and every ten
// minutes two minutes of three times the rate that break it.
func DemoConfig(seed uint64, start time.Time) Config {
	steady := DemoPeriod - DemoOverload
	return Config{
		Seed:  seed,
		Start: start,
		Models: []ModelConfig{{
			Name:    DemoModel,
			Engines: 2,
			Assign:  RoundRobin,
			Workload: Workload{
				Phases: []Phase{
					{Duration: steady, Kind: Poisson, Rate: DemoRate},
					{Duration: DemoOverload, Kind: Poisson, Rate: DemoRate * DemoOverloadFactor},
				},
				Repeat: true,
				Prompt: LengthDist{Mixture: []Component{
					{Weight: 0.8, Dist: LengthDist{Median: 400, Sigma: 0.8, Min: 8, Max: 4000}},
					{Weight: 0.2, Dist: LengthDist{Median: 2500, Sigma: 0.5, Min: 500, Max: 10000}},
				}},
				Output:          LengthDist{Median: 180, Sigma: 0.7, Min: 1, Max: 2048},
				StopProbability: 0.85,
			},
			Engine:      DemoEngine,
			MaxModelLen: 32768,
		}},
	}
}

// presets builds the named configurations.
var presets = map[string]func(seed uint64, start time.Time) Config{
	"demo": DemoConfig,
	// steady is the demo without overload phases.
	"steady": func(seed uint64, start time.Time) Config {
		c := DemoConfig(seed, start)
		c.Models[0].Workload.Phases = []Phase{{Kind: Poisson, Rate: DemoRate}}
		c.Models[0].Workload.Repeat = false
		return c
	},
	// multi-model serves two models, one of them on four engines with random
	// assignment and a bursty workload.
	"multi-model": func(seed uint64, start time.Time) Config {
		c := DemoConfig(seed, start)
		c.Models = append(c.Models, ModelConfig{
			Name:    "meta-llama/Llama-3.1-8B-Instruct",
			Engines: 4,
			Assign:  Random,
			Workload: Workload{
				Phases: []Phase{{Kind: Bursty, Rate: 12, RateOff: 2, On: 20 * time.Second, Off: 40 * time.Second}},
				Prompt: LengthDist{Median: 800, Sigma: 0.9, Min: 16, Max: 16000},
				Output: LengthDist{Median: 120, Sigma: 0.8, Max: 4096},
				// Mostly natural stops.
				StopProbability: 0.9,
			},
			Engine:      DemoEngine,
			MaxModelLen: 131072,
		})
		return c
	},
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns a named configuration: "demo" (DemoConfig), "steady" (the
// demo without overload) or "multi-model".
func Preset(name string, seed uint64, start time.Time) (Config, error) {
	f, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown sim preset %q (known: %v)", name, PresetNames())
	}
	return f(seed, start), nil
}
