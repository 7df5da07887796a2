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

// Cancel15 is the client behaviour of the "cancel15" preset: on the demo
// workload about 15% of the streams are cancelled after their first token
// (15.3% over the first 30 minutes with seed 11), the probability
// proportional to the TTFT (0.15 at 100 ms), so cancelled streams are slower
// than the others (mean TTFT 0.19 s against 0.09 s); 30% of them stop right
// after the first token, the rest mid-stream, each within 10 ms of a token
// (less than one decode step, so the next token does not come).
var Cancel15 = Cancellation{
	Share:        0.15,
	TTFTRef:      100 * time.Millisecond,
	Skew:         1,
	AtFirstToken: 0.3,
	Reaction:     10 * time.Millisecond,
}

// Preset timing of the "restart" and "outage" presets, from the sim's Start.
const (
	// PresetRestartAt is when the "restart" preset's vLLM restarts (7 s
	// before a 15 s scrape, so the requests that finish between that scrape
	// and the restart are seen by no scraper).
	PresetRestartAt = 12*time.Minute + 53*time.Second
	// PresetOutageAt is when the "outage" preset's vLLM dies, and
	// PresetOutageDown how long it stays down before a restart with counters
	// from zero.
	PresetOutageAt   = 12*time.Minute + 53*time.Second
	PresetOutageDown = 5 * time.Minute
)

// demoWith returns a preset: the demo config changed by mod.
func demoWith(mod func(c *Config)) func(seed uint64, start time.Time) Config {
	return func(seed uint64, start time.Time) Config {
		c := DemoConfig(seed, start)
		mod(&c)
		return c
	}
}

// onePhase makes the demo's single model run one phase forever.
func onePhase(c *Config, p Phase) {
	c.Models[0].Workload.Phases = []Phase{p}
	c.Models[0].Workload.Repeat = false
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
	// bursty: 30 s at four times the demo rate, then 90 s at half of it.
	"bursty": demoWith(func(c *Config) {
		onePhase(c, Phase{Kind: Bursty, Rate: 4 * DemoRate, RateOff: DemoRate / 2, On: 30 * time.Second, Off: 90 * time.Second})
	}),
	// overload: 10 minutes steady, 10 minutes at four times the rate, then
	// steady again.
	"overload": demoWith(func(c *Config) {
		c.Models[0].Workload.Phases = []Phase{
			{Duration: 10 * time.Minute, Kind: Poisson, Rate: DemoRate},
			{Duration: 10 * time.Minute, Kind: Poisson, Rate: 4 * DemoRate},
			{Kind: Poisson, Rate: DemoRate},
		}
		c.Models[0].Workload.Repeat = false
	}),
	// admission: the overload preset on a server started with
	// --max-num-queued-reqs 192 (twice the batch), whose clients also
	// cancel 15% of the streams after their first token and, half of them,
	// give up waiting for the first token after 8 s on average: what the
	// newest vLLM does under overload, where some users are turned away
	// (HTTP 503) and others leave the queue.
	"admission": demoWith(admission),
	// newest: the admission preset on the newest vLLM (Style.Newest) whose
	// engines preempt (a KV cache of 40,000 tokens, which the overload
	// outgrows: some requests are preempted more than five times) and which
	// defers a tenth of the requests for 400 ms (a grammar compiling):
	// waiting by reason and preemptions as vLLM 0.30 exposes them, beside
	// rejections and clients leaving the queue. The streams are cancelled at
	// a constant 15% (no TTFT skew): with the skew, the slow KV-bound
	// overload has nearly every client cancel, and nothing is ever rejected.
	"newest": demoWith(func(c *Config) {
		admission(c)
		c.Models[0].Workload.Cancel.Skew = 0
		c.Models[0].Engine.Preempt = true
		c.Models[0].Engine.KVCapacityTokens = 40_000
		c.Models[0].Workload.Defer = Deferral{Share: 0.1, Delay: 400 * time.Millisecond}
		c.Style.Newest = true
	}),
	// restart: twice the demo rate, vLLM restarts at PresetRestartAt.
	"restart": demoWith(func(c *Config) {
		onePhase(c, Phase{Kind: Poisson, Rate: 2 * DemoRate})
		c.Restarts = []ScheduledRestart{{At: PresetRestartAt}}
	}),
	// outage: the steady demo rate; vLLM dies at PresetOutageAt, /metrics
	// refuses connections for PresetOutageDown, then a new process starts
	// with counters from zero.
	"outage": demoWith(func(c *Config) {
		onePhase(c, Phase{Kind: Poisson, Rate: DemoRate})
		c.Restarts = []ScheduledRestart{{At: PresetOutageAt, Down: PresetOutageDown}}
	}),
	// cancel15: the demo workload (overload phases included) whose clients
	// cancel about 15% of the streams after the first token, slow ones more
	// often (Cancel15).
	"cancel15": demoWith(func(c *Config) { c.Models[0].Workload.Cancel = Cancel15 }),
	// cancel15-old: cancel15 served with the names of vLLM before v0.11 (no
	// per-request TPOT family), like the V1 0.9 servers whose clients cancel.
	"cancel15-old": demoWith(func(c *Config) {
		c.Models[0].Workload.Cancel = Cancel15
		c.Style = Style{OldNames: true}
	}),
	// no-tpot: steady, without the per-request TPOT family (vLLM before v0.11
	// with today's other names).
	"no-tpot": demoWith(func(c *Config) {
		onePhase(c, Phase{Kind: Poisson, Rate: DemoRate})
		c.Style = Style{NoRequestTPOT: true}
	}),
	// one-engine: steady on a single engine.
	"one-engine": demoWith(func(c *Config) {
		c.Models[0].Engines = 1
		onePhase(c, Phase{Kind: Poisson, Rate: DemoRate})
	}),
	// two-engines: 1.6 times the demo rate on two engines picked at random,
	// so their loads differ from moment to moment.
	"two-engines": demoWith(func(c *Config) {
		c.Models[0].Assign = Random
		onePhase(c, Phase{Kind: Poisson, Rate: 1.6 * DemoRate})
	}),
	// bimodal-prompts: 1.5 times the demo rate, half the prompts 64 tokens,
	// half around 6000.
	"bimodal-prompts": demoWith(func(c *Config) {
		onePhase(c, Phase{Kind: Poisson, Rate: 1.5 * DemoRate})
		c.Models[0].Workload.Prompt = LengthDist{Mixture: []Component{
			{Weight: 0.5, Dist: LengthDist{Fixed: 64}},
			{Weight: 0.5, Dist: LengthDist{Median: 6000, Sigma: 0.3, Min: 2000, Max: 12000}},
		}}
	}),
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

// Preset returns a named configuration (see PresetNames). Every preset is the
// demo's model and engine with another workload:
//
//   - demo: DemoConfig, steady with two minutes of overload every ten.
//   - steady: the demo rate without overload.
//   - multi-model: the demo plus a bursty second model on four engines.
//   - bursty, overload: on/off bursts; ten minutes at four times the rate.
//   - restart: vLLM restarts at PresetRestartAt (Config.Restarts).
//   - outage: vLLM is down from PresetOutageAt for PresetOutageDown, then
//     restarts with counters from zero.
//   - cancel15, cancel15-old: clients cancel ~15% of the streams after the
//     first token, slow ones more often (Cancel15); -old speaks the names of
//     vLLM before v0.11.
//   - no-tpot: steady without vllm:request_time_per_output_token_seconds.
//   - one-engine, two-engines (random assignment), bimodal-prompts.
//   - admission: overload against an admission limit, with clients that
//     cancel streams and leave the queue.
//   - newest: admission on the newest vLLM, with preemptions and deferred
//     requests.
func Preset(name string, seed uint64, start time.Time) (Config, error) {
	f, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown sim preset %q (known: %v)", name, PresetNames())
	}
	return f(seed, start), nil
}

// admission turns the demo into the admission preset: overload against
// --max-num-queued-reqs, clients that cancel streams and leave the queue.
func admission(c *Config) {
	c.Models[0].Workload.Phases = []Phase{
		{Duration: 5 * time.Minute, Kind: Poisson, Rate: DemoRate},
		{Duration: 10 * time.Minute, Kind: Poisson, Rate: 4 * DemoRate},
		{Kind: Poisson, Rate: DemoRate},
	}
	c.Models[0].Workload.Repeat = false
	c.Models[0].MaxNumQueuedReqs = 2 * DemoEngine.MaxNumSeqs
	cancel := Cancel15
	cancel.BeforeFirstToken, cancel.Patience = 0.5, 8*time.Second
	c.Models[0].Workload.Cancel = cancel
}
