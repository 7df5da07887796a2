package alertquality

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// Scenario is one simulated situation with a known truth.
type Scenario struct {
	// Name is short and unique; What says in a few words what happens.
	Name, What string
	// Length is how long the exporter scrapes, in virtual time.
	Length time.Duration
	// Lead is how long vLLM serves before the exporter's first scrape.
	Lead time.Duration
	// Sim builds the simulated server, starting at start.
	Sim func(start time.Time) sim.Config
	// Failed, when set, says which scrapes fail (the exporter sees a timeout),
	// by their offset from the first scrape.
	Failed func(offset time.Duration) bool
	// StepAt and StepBy move the exporter's clock by StepBy from the scrape
	// at offset StepAt on (StepBy 0: no step).
	StepAt, StepBy time.Duration
	// Full marks a scenario that only the full table runs (it is slow).
	Full bool
}

// seed is the simulator seed of every scenario: runs are reproducible.
const seed = 11

// demo is the demo's model and engine running the given phases once.
func demo(phases ...sim.Phase) func(start time.Time) sim.Config {
	return func(start time.Time) sim.Config {
		c := sim.DemoConfig(seed, start)
		c.DiscardTokenTimes = true
		c.Models[0].Workload.Phases = phases
		c.Models[0].Workload.Repeat = false
		return c
	}
}

func poisson(d time.Duration, factor float64) sim.Phase {
	return sim.Phase{Duration: d, Kind: sim.Poisson, Rate: factor * sim.DemoRate}
}

// Library is every scenario, the fast ones first.
func Library() []Scenario {
	steady := demo(poisson(0, 1))
	return []Scenario{
		{Name: "healthy", What: "steady demo rate", Length: 40 * time.Minute, Sim: steady},
		{Name: "blips", What: "20 s at 3x the rate every 5 min", Length: 40 * time.Minute,
			Sim: func(start time.Time) sim.Config {
				c := demo(poisson(280*time.Second, 1), poisson(20*time.Second, 3))(start)
				c.Models[0].Workload.Repeat = true
				return c
			}},
		{Name: "fast-burn", What: "10 min at 4x the rate from 15m", Length: 45 * time.Minute,
			Sim: demo(poisson(15*time.Minute, 1), poisson(10*time.Minute, 4), poisson(0, 1))},
		{Name: "restart", What: "vLLM restarts at 15m, down 10 s", Length: 30 * time.Minute,
			Sim: withRestart(steady, 15*time.Minute, 10*time.Second)},
		{Name: "outage", What: "vLLM down at 15m for 5 min, then restarts", Length: 35 * time.Minute,
			Sim: withRestart(steady, 15*time.Minute, 5*time.Minute)},
		{Name: "cold-start", What: "exporter starts on a vLLM serving for 30 min", Length: 20 * time.Minute,
			Lead: 30 * time.Minute, Sim: steady},
		{Name: "scrape-failures", What: "every 3rd scrape fails, and all for 2 min at 15m", Length: 30 * time.Minute,
			Sim: steady, Failed: func(off time.Duration) bool {
				return int(off/(15*time.Second))%3 == 2 || (off >= 15*time.Minute && off < 17*time.Minute)
			}},
		{Name: "clock-step", What: "exporter clock jumps 10 min ahead at 15m", Length: 30 * time.Minute,
			Sim: steady, StepAt: 15 * time.Minute, StepBy: 10 * time.Minute},
		{Name: "clock-back", What: "exporter clock jumps 5 min back at 15m", Length: 30 * time.Minute,
			Sim: steady, StepAt: 15 * time.Minute, StepBy: -5 * time.Minute},
		{Name: "cancel-storm", What: "60% of streams cancelled after the first token", Length: 30 * time.Minute,
			Sim: func(start time.Time) sim.Config {
				c := steady(start)
				c.Models[0].Workload.Cancel = sim.Cancellation{Share: 0.6, AtFirstToken: 0.3, Reaction: 10 * time.Millisecond}
				return c
			}},
		{Name: "diurnal", What: "rate ramps 0.4x to 2x and back over 2 h", Length: 2 * time.Hour, Full: true,
			Sim: demo(poisson(20*time.Minute, 0.4), poisson(20*time.Minute, 1), poisson(20*time.Minute, 1.6),
				poisson(20*time.Minute, 2), poisson(20*time.Minute, 1), poisson(0, 0.4))},
		{Name: "slow-burn", What: "2.4x the rate (burn ~2.3x) for 40 min from 10m", Length: 70 * time.Minute,
			Sim: demo(poisson(10*time.Minute, 1), poisson(40*time.Minute, 2.4), poisson(0, 1))},
		{Name: "medium-burn", What: "2.6x the rate (burn ~10x) for 15 min from 10m", Length: 45 * time.Minute,
			Sim: demo(poisson(10*time.Minute, 1), poisson(15*time.Minute, 2.6), poisson(0, 1))},
	}
}

// withRestart adds a scheduled restart (down for down) at at to a config.
func withRestart(base func(time.Time) sim.Config, at, down time.Duration) func(time.Time) sim.Config {
	return func(start time.Time) sim.Config {
		c := base(start)
		c.Restarts = []sim.ScheduledRestart{{At: at, Down: down}}
		return c
	}
}
