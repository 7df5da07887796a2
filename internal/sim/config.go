package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
)

// Config describes a whole simulated vLLM server: the models it serves, their
// workloads and engines, and how its /metrics looks.
type Config struct {
	// Seed makes the run reproducible: the same Config gives the same truth and
	// the same exposition bytes.
	Seed uint64
	// Start is the virtual time at which the server starts (and `_created`).
	Start time.Time
	// Models are served side by side, each with its own engines.
	Models []ModelConfig
	// Style chooses the exposition format the server serves.
	Style Style
	// Buckets overrides vLLM's default bucket edges; zero fields keep the defaults.
	Buckets Buckets
	// DiscardTruth keeps no per-request records once a request ends, so that a
	// long-running demo does not grow without bound. Truth then holds only the
	// requests still in flight.
	DiscardTruth bool
	// DiscardTokenTimes keeps no per-token times in the truth (ITL truth is then
	// unavailable), saving memory in long runs.
	DiscardTokenTimes bool
	// Restarts are vLLM process restarts (and outages) at fixed offsets from
	// Start, in time order; see ScheduledRestart.
	Restarts []ScheduledRestart
	// CountAborts counts every client cancellation in
	// request_success_total{finished_reason="abort"}, as fixes proposed to vLLM
	// would; released vLLM (and the default) counts them nowhere.
	CountAborts bool
	// OnDone, when set, receives each request's truth as it finishes, is
	// cancelled by its client or is lost in a restart, in simulation order (for streaming the truth to a
	// file in long runs). It is called with the sim locked: it must not call
	// back into the Sim.
	OnDone func(Request)
}

// ModelConfig is one served model (one `model_name`) with its data-parallel engines.
type ModelConfig struct {
	// Name is the `model_name` label value.
	Name string
	// Engines is the number of data-parallel engines (`engine` = "0", "1", ...).
	Engines int
	// Assign chooses how arriving requests are spread over the engines.
	Assign Assignment
	// Workload is the arrival process and the request shapes.
	Workload Workload
	// Engine holds the cost model and limits shared by all engines of the model.
	Engine EngineParams
	// MaxModelLen limits prompt+output tokens and sets the token-count buckets.
	MaxModelLen int
	// MaxNumQueuedReqs is vLLM's --max-num-queued-reqs: an arrival that finds
	// this many of the model's requests unfinished (waiting or running, over
	// every engine) is turned away with HTTP 503 before it reaches an engine,
	// and counted in vllm:admission_rejections_total{reason="max_num_queued_reqs"};
	// it is in no histogram and no gauge. 0 admits everything (vLLM's default).
	MaxNumQueuedReqs int
}

// Assignment is how a model's requests are spread over its engines.
type Assignment int

// The assignment policies.
const (
	RoundRobin Assignment = iota // engine i gets arrivals i, i+n, i+2n, ...
	Random                       // each arrival picks an engine uniformly
)

// Workload is a model's arrival process (a sequence of phases, optionally
// repeating) and its request-length distributions.
type Workload struct {
	// Phases run one after the other from the sim's Start.
	Phases []Phase
	// Repeat starts the phases over after the last one; otherwise arrivals stop
	// after the last phase unless its Duration is 0 (it then lasts forever).
	Repeat bool
	// Prompt and Output are the prompt and output lengths in tokens.
	Prompt, Output LengthDist
	// StopProbability is the share of requests that finish with reason "stop";
	// the rest finish with "length".
	StopProbability float64
	// Cancel is how clients abandon their requests; the zero value never does.
	Cancel Cancellation
	// Defer is the share of requests the scheduler must skip for a while
	// after their arrival, and for how long; the zero value defers none.
	Defer Deferral
}

// Deferral models the requests vLLM's scheduler skips while something
// other than capacity is not ready: a structured-output grammar still
// compiling, a remote KV transfer still arriving. Such a request waits
// "deferred" (num_requests_waiting_by_reason{reason="deferred"}, vLLM's
// skipped waiting requests) from its arrival until Delay later, and is
// then put back at the front of the waiting queue at the next scheduler
// step, ahead of the requests that arrived after it, as vLLM puts its
// skipped requests back; its queue time and TTFT include the wait.
type Deferral struct {
	// Share of the arrivals deferred, in [0, 1].
	Share float64
	// Delay is how long a deferred request cannot be scheduled.
	Delay time.Duration
}

func (d Deferral) validate() error {
	if !(d.Share >= 0 && d.Share <= 1) {
		return fmt.Errorf("defer: share %v, want in [0, 1]", d.Share)
	}
	if d.Share > 0 && d.Delay <= 0 {
		return fmt.Errorf("defer: share %v needs a delay > 0 (got %v)", d.Share, d.Delay)
	}
	return nil
}

// ArrivalKind selects how a phase's arrival rate varies in time. Arrivals are
// always Poisson given the rate (generated by thinning).
type ArrivalKind int

// The arrival kinds.
const (
	Poisson ArrivalKind = iota // constant Rate
	Bursty                     // Rate for On, then RateOff for Off, repeating (on/off modulated Poisson)
	Ramp                       // Rate rising (or falling) linearly to RateEnd over Duration
)

// Phase is one stretch of a workload's arrival process.
type Phase struct {
	// Duration of the phase; 0 means forever and is allowed only for the last
	// phase of a workload that does not repeat.
	Duration time.Duration
	Kind     ArrivalKind
	// Rate is the arrival rate in requests per second (the "on" rate for
	// Bursty, the starting rate for Ramp).
	Rate float64
	// RateEnd is a Ramp's rate at the end of the phase.
	RateEnd float64
	// RateOff, On and Off shape a Bursty phase.
	RateOff float64
	On, Off time.Duration
	// Prompt, when non-nil, replaces the workload's prompt lengths for the
	// requests that arrive in this phase (a mix that shifts during a day).
	Prompt *LengthDist
}

// LengthDist is a distribution of token counts. With Mixture set it picks a
// component by weight; otherwise it is lognormal when Median > 0 and the
// constant Fixed otherwise. The result is clamped to [Min, Max] (when set) and
// is at least 1.
type LengthDist struct {
	Fixed int
	// Median and Sigma parameterise a lognormal: exp(ln(Median) + Sigma·N(0,1)).
	Median float64
	Sigma  float64
	Min    int
	Max    int
	// Mixture, when non-empty, replaces the fields above.
	Mixture []Component
}

// Component is one weighted part of a mixture distribution.
type Component struct {
	Weight float64
	Dist   LengthDist
}

// EngineParams is one engine's scheduler limits and cost model.
type EngineParams struct {
	// MaxNumSeqs is the batch limit: at most this many requests run at once.
	MaxNumSeqs int
	// MaxBatchedTokens is the token budget of one step: decode tokens (one per
	// running request) plus the prompts admitted in that step. A prompt larger
	// than the budget is admitted alone (no chunked prefill is modelled).
	MaxBatchedTokens int
	// KVCapacityTokens is the KV cache size in tokens: a request is admitted only
	// if its prompt fits beside the tokens held by the running requests.
	KVCapacityTokens int
	// StepBase is the fixed cost of every step.
	StepBase time.Duration
	// DecodePerSeq is the extra cost of a step per running request.
	DecodePerSeq time.Duration
	// PrefillPerToken is the extra cost per prompt token prefilled in the step.
	PrefillPerToken time.Duration
	// Jitter scales each step's duration by a uniform factor in [1-Jitter, 1+Jitter].
	Jitter float64
	// Preempt makes the engine preempt as vLLM V1 does (recompute
	// preemption): at the start of a step, while the KV cache cannot hold
	// one more token for every running request, the request scheduled last
	// leaves the batch, frees its KV and goes back to the front of the
	// waiting queue; when scheduled again it prefills its prompt and the
	// tokens it had generated, then continues. Each preemption counts in
	// vllm:num_preemptions_total when it happens and in the request's own
	// count, observed in vllm:request_num_preemptions at its finish.
	// Without it a running request's KV may outgrow the cache (the
	// simulator's default, kept for its recorded goldens).
	Preempt bool
}

// Buckets are the histogram bucket edges (finite `le` values, ascending). A nil
// field means vLLM's default.
type Buckets struct {
	TTFT []float64
	// ITL is used for the inter-token histogram and the per-request TPOT.
	ITL []float64
	// RequestLatency is used for e2e, queue, prefill, decode and inference.
	RequestLatency []float64
	// Tokens is used for the prompt and generation token-count histograms; by
	// default the 1-2-5 series below each model's MaxModelLen.
	Tokens []float64
}

// DefaultTTFTBuckets returns vLLM's TTFT bucket edges.
func DefaultTTFTBuckets() []float64 { return buckets.Default(buckets.TimeToFirstToken) }

// DefaultITLBuckets returns vLLM's ITL and per-request TPOT bucket edges.
func DefaultITLBuckets() []float64 { return buckets.Default(buckets.InterTokenLatency) }

// DefaultRequestLatencyBuckets returns vLLM's e2e/queue/prefill/decode/inference edges.
func DefaultRequestLatencyBuckets() []float64 { return buckets.Default(buckets.RequestLatency) }

// TokenBuckets returns vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ...
// while not above max (max itself is not appended).
func TokenBuckets(max int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(max) {
				return out
			}
			out = append(out, v)
		}
	}
}

// layout is the resolved bucket edges of one model.
type layout struct {
	ttft, itl, latency, tokens []float64
}

func (b Buckets) resolve(maxModelLen int) layout {
	pick := func(v, def []float64) []float64 {
		if v != nil {
			return v
		}
		return def
	}
	return layout{
		ttft:    pick(b.TTFT, DefaultTTFTBuckets()),
		itl:     pick(b.ITL, DefaultITLBuckets()),
		latency: pick(b.RequestLatency, DefaultRequestLatencyBuckets()),
		tokens:  pick(b.Tokens, TokenBuckets(maxModelLen)),
	}
}

func (b Buckets) validate() error {
	for _, f := range []struct {
		name  string
		edges []float64
	}{{"TTFT", b.TTFT}, {"ITL", b.ITL}, {"RequestLatency", b.RequestLatency}, {"Tokens", b.Tokens}} {
		if f.edges != nil && len(f.edges) == 0 {
			return fmt.Errorf("buckets %s: empty (use nil for the default)", f.name)
		}
		for i, e := range f.edges {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return fmt.Errorf("buckets %s: edge %d is %v, want finite", f.name, i, e)
			}
			if i > 0 && e <= f.edges[i-1] {
				return fmt.Errorf("buckets %s: edge %d (%v) not above %v", f.name, i, e, f.edges[i-1])
			}
		}
	}
	return nil
}

func (c Config) validate() error {
	if len(c.Models) == 0 {
		return errors.New("no models")
	}
	if err := c.Buckets.validate(); err != nil {
		return err
	}
	if err := c.Style.validate(); err != nil {
		return err
	}
	if err := validateRestarts(c.Restarts); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		if err := m.validate(); err != nil {
			return fmt.Errorf("model %d (%q): %w", i, m.Name, err)
		}
		if seen[m.Name] {
			return fmt.Errorf("model %d: duplicate name %q", i, m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

func (m ModelConfig) validate() error {
	if m.Name == "" {
		return errors.New("empty name")
	}
	if m.Engines < 1 {
		return fmt.Errorf("engines %d, want >= 1", m.Engines)
	}
	if m.MaxNumQueuedReqs < 0 {
		return fmt.Errorf("max num queued reqs %d, want >= 0", m.MaxNumQueuedReqs)
	}
	if m.MaxModelLen < 2 {
		return fmt.Errorf("max model len %d, want >= 2", m.MaxModelLen)
	}
	e := m.Engine
	if e.MaxNumSeqs < 1 || e.MaxBatchedTokens < 1 {
		return fmt.Errorf("engine: max_num_seqs %d and max_batched_tokens %d must be >= 1", e.MaxNumSeqs, e.MaxBatchedTokens)
	}
	if e.KVCapacityTokens < m.MaxModelLen {
		return fmt.Errorf("engine: kv capacity %d tokens below max model len %d", e.KVCapacityTokens, m.MaxModelLen)
	}
	if e.StepBase <= 0 || e.DecodePerSeq < 0 || e.PrefillPerToken < 0 {
		return fmt.Errorf("engine: step costs %v/%v/%v, want base > 0 and others >= 0", e.StepBase, e.DecodePerSeq, e.PrefillPerToken)
	}
	if e.Jitter < 0 || e.Jitter >= 1 {
		return fmt.Errorf("engine: jitter %v, want in [0, 1)", e.Jitter)
	}
	return m.Workload.validate()
}

// validate checks the phases, the stop probability and the length and
// cancellation distributions, naming the first that is wrong.
func (w Workload) validate() error {
	if len(w.Phases) == 0 {
		return errors.New("workload: no phases")
	}
	for i, p := range w.Phases {
		if err := p.validate(i == len(w.Phases)-1 && !w.Repeat); err != nil {
			return fmt.Errorf("workload: phase %d %w", i, err)
		}
	}
	if w.StopProbability < 0 || w.StopProbability > 1 {
		return fmt.Errorf("workload: stop probability %v, want in [0, 1]", w.StopProbability)
	}
	if err := w.Prompt.validate(); err != nil {
		return fmt.Errorf("workload: prompt: %w", err)
	}
	if err := w.Output.validate(); err != nil {
		return fmt.Errorf("workload: output: %w", err)
	}
	if err := w.Cancel.validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if err := w.Defer.validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return nil
}

// validate checks one phase; only the final phase of a workload that does
// not repeat (final) may last forever.
func (p Phase) validate(final bool) error {
	if p.Duration < 0 || (p.Duration == 0 && !final) {
		return fmt.Errorf("duration %v (0 only for a final, non-repeating phase)", p.Duration)
	}
	for _, r := range []float64{p.Rate, p.RateEnd, p.RateOff} {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("rate %v, want finite >= 0", r)
		}
	}
	switch p.Kind {
	case Poisson:
	case Bursty:
		if p.On <= 0 || p.Off < 0 {
			return fmt.Errorf("bursty on %v off %v, want on > 0", p.On, p.Off)
		}
	case Ramp:
		if p.Duration == 0 {
			return errors.New("kind ramp needs a duration")
		}
	default:
		return fmt.Errorf("unknown kind %d", p.Kind)
	}
	if p.Prompt != nil {
		if err := p.Prompt.validate(); err != nil {
			return fmt.Errorf("prompt: %w", err)
		}
	}
	return nil
}

func (d LengthDist) validate() error {
	if len(d.Mixture) > 0 {
		total := 0.0
		for i, c := range d.Mixture {
			if c.Weight < 0 || math.IsNaN(c.Weight) {
				return fmt.Errorf("mixture component %d weight %v", i, c.Weight)
			}
			total += c.Weight
			if err := c.Dist.validate(); err != nil {
				return fmt.Errorf("mixture component %d: %w", i, err)
			}
		}
		if total <= 0 {
			return errors.New("mixture weights sum to 0")
		}
		return nil
	}
	if d.Median < 0 || d.Sigma < 0 || math.IsNaN(d.Median) || math.IsNaN(d.Sigma) {
		return fmt.Errorf("lognormal median %v sigma %v, want >= 0", d.Median, d.Sigma)
	}
	if d.Median == 0 && d.Fixed < 1 {
		return fmt.Errorf("fixed length %d, want >= 1 (or set Median)", d.Fixed)
	}
	if d.Max > 0 && d.Min > d.Max {
		return fmt.Errorf("min %d above max %d", d.Min, d.Max)
	}
	return nil
}
