package alertquality

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
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
	// Config is the exporter configuration (YAML) the scenario runs; empty
	// for ConfigYAML.
	Config string
	// Known lists, by alert (Key.String()), the false pages both paths are
	// measured to give and why; the harness fails on any other false or
	// missed page, and on these no longer happening.
	Known map[string]Known
}

// Known is a measured disagreement with the truth that the harness expects.
type Known struct {
	False int
	Why   string
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
		{Name: "cancel-storm-excluded", What: "60% of streams cancelled after the first token, abandoned: excluded", Length: 30 * time.Minute,
			Config: SLOConfig("1d", "excluded", ""),
			Sim: func(start time.Time) sim.Config {
				c := steady(start)
				c.Models[0].Workload.Cancel = sim.Cancellation{Share: 0.6, AtFirstToken: 0.3, Reaction: 10 * time.Millisecond}
				return c
			}},
		cancel15("bad", "1d"), cancel15("excluded", "1d"), cancel15("bad", "30d"), cancel15("excluded", "30d"),
		cancelBurn("bad", "1d"), cancelBurn("excluded", "1d"), cancelBurn("bad", "30d"), cancelBurn("excluded", "30d"),
		jointOnly("bad"), jointOnly("excluded"),
		admission("bad"), admission("excluded"),
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

// cancel15 is the demo workload, overloads included, whose clients cancel
// about 15% of the streams after their first token, slow ones twice as
// often (sim.Cancel15), for an hour, judged under an `abandoned` policy
// over a period. With `abandoned: bad` the cancellations alone burn the
// budget at about 15x.
func cancel15(abandoned, period string) Scenario {
	return Scenario{Name: "cancel15-" + abandoned + "-" + period,
		What:   "demo with its overloads, 15% of streams cancelled after the first token (slow ones twice as often), abandoned: " + abandoned + ", period " + period,
		Length: time.Hour, Config: SLOConfig(period, abandoned, ""),
		Sim: func(start time.Time) sim.Config {
			c := sim.DemoConfig(seed, start)
			c.DiscardTokenTimes = true
			c.Models[0].Workload.Cancel = sim.Cancel15
			return c
		}}
}

// cancelBurn is a burn that starts after the exporter has seen healthy
// traffic, with cancellations: 20 minutes at the demo rate, then an hour
// of the demo's overloads (8 minutes at the demo rate, 2 at three times
// it), then the demo rate again for 20 minutes; its clients cancel about
// 15% of the streams after their first token, slow ones twice as often
// (sim.Cancel15). Over the hour the finished requests burn the budget at
// about 8 to 11x over 30 minutes (abandoned: excluded; with abandoned: bad
// the cancellations add about 15x), so the 30-day policy's 6h/30m page
// must fire once its long window, diluted by the healthy start, crosses 6
// (CancelBurnMaxDelay says how soon). Judged under an `abandoned` policy
// over a period.
func cancelBurn(abandoned, period string) Scenario {
	return Scenario{Name: "cancel-burn-" + abandoned + "-" + period,
		What:   "20 min healthy, an hour of the demo's overloads (8-11x over 30m), 15% of streams cancelled after the first token (slow ones twice as often), abandoned: " + abandoned + ", period " + period,
		Length: 100 * time.Minute, Config: SLOConfig(period, abandoned, ""),
		Sim: func(start time.Time) sim.Config {
			phases := []sim.Phase{poisson(20*time.Minute, 1)}
			for range 6 {
				phases = append(phases, poisson(sim.DemoPeriod-sim.DemoOverload, 1), poisson(sim.DemoOverload, sim.DemoOverloadFactor))
			}
			c := demo(append(phases, poisson(0, 1))...)(start)
			c.Models[0].Workload.Cancel = sim.Cancel15
			return c
		}}
}

// CancelBurnMaxDelay is how long after the truth's page condition begins
// (both windows above the factor, before the alert's hold) a page of the
// cancel-burn scenarios may fire at the latest.
const CancelBurnMaxDelay = 10 * time.Minute

// jointOnlyKnown are the joint-only scenarios' measured false pages.
var jointOnlyKnown = map[string]map[string]Known{
	"bad": {"page 5m/1m": {False: 2, Why: "12:30-13:15: at 12:15 the 5m window's evidence reads 14.57x against the true 14.38x " +
		"(about 212 against 209 bad among 1453 requests: the joint bad share is estimated from the objectives' shares, " +
		"TTFT 9.9% and TPOT 5.2%), then both above the factor at 12:30, so the daemon's condition holds two evaluations " +
		"and the truth's one; 19:30-19:45: the 1m window's evidence 14.45x against the true 13.90x (54 against 52 bad " +
		"among 374) after both read above the factor at 19:15. Each is two or three requests from the factor, in " +
		"the histograms' estimate of the joint, on both paths and in exact mode (whose evidence is the same)"}},
}

// jointOnlyLongPrompts is the share of long-context prompts of the joint-only
// scenario (the demo has 0.2): their prefill is what breaks TTFT, while TPOT
// breaks with the batch size, on mostly other requests.
const jointOnlyLongPrompts = 0.5

// jointOnly is a breach of the SLO that neither objective shows alone: TTFT
// <= 250ms and TPOT <= 25ms (vLLM bucket edges) on a workload with half its
// prompts long; at 0.8x the demo rate about 7% of requests miss some
// objective; for 15 minutes from 10m at 1.15x about 9.6% miss TTFT and 8.9%
// TPOT, 1.1% both, so 17.4% miss some objective: a 17x burn over 9.6x and
// 8.9x per objective (TestJointOnlyBreach checks that neither alone ever
// meets the page condition). The policy is the 5m/1m page at 14.4x only (at
// 6x the healthy part would page).
func jointOnly(abandoned string) Scenario {
	cfg := SLOConfig("1d", abandoned, "{ttft: 250ms, tpot: 25ms}") +
		"    alerts:\n      - {severity: page, long_window: 5m, short_window: 1m, budget_consumed: 0.05, for: 4s}\n"
	return Scenario{Name: "joint-only-" + abandoned,
		What:   "9.6% bad TTFT and 8.9% bad TPOT, 1.1% both (17x joint) for 15 min from 10m, abandoned: " + abandoned,
		Length: 40 * time.Minute, Config: cfg, Known: jointOnlyKnown[abandoned],
		Sim: func(start time.Time) sim.Config {
			c := demo(poisson(10*time.Minute, 0.8), poisson(15*time.Minute, 1.15), poisson(0, 0.8))(start)
			mix := c.Models[0].Workload.Prompt.Mixture
			mix[0].Weight, mix[1].Weight = 1-jointOnlyLongPrompts, jointOnlyLongPrompts
			return c
		}}
}

// admission is the simulator's admission preset (sim.Preset "admission"):
// 5 minutes at the demo rate, then 10 at four times it against a server
// started with --max-num-queued-reqs at twice its batch, which turns the
// excess away (HTTP 503, counted in vllm:admission_rejections_total), with
// clients that cancel 15% of the streams after their first token and leave
// the queue after about 8 s; judged with `rejected` (bad: the rejected
// requests count bad in the population, excluded: left out) and the
// default `abandoned: bad`.
func admission(rejected string) Scenario {
	return Scenario{Name: "admission-" + rejected,
		What:   "4x the rate for 10 min from 5m against an admission limit (HTTP 503), 15% of streams cancelled, rejected: " + rejected,
		Length: 30 * time.Minute, Config: SLOConfig("1d", "", "") + "    rejected: " + rejected + "\n",
		Sim: func(start time.Time) sim.Config {
			c, err := sim.Preset("admission", seed, start)
			if err != nil {
				panic(err) // a preset of the simulator's own table
			}
			c.DiscardTokenTimes = true
			return c
		}}
}
