package fleetday

import (
	"math"
	"math/rand/v2"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// request is one request's life on a replica; times are seconds since the
// day's start.
type request struct {
	arrival        float64
	prompt, output int
	first          float64 // end of the step that prefilled it
}

// tpot is vLLM's per-request time per output token: decode time over the
// tokens after the first, 0 for a one-token answer.
func (r *request) tpot(finish float64) float64 {
	if r.output <= 1 {
		return 0
	}
	return (finish - r.first) / float64(r.output-1)
}

// observer is told what a replica's requests do.
type observer interface {
	firstToken(r *request, at float64)
	finished(r *request, at float64)
	lost(r *request, at float64)
}

// ring is the number of step slots of the calendar of finishes: more than
// the longest output (the mixes' outputs are clamped below it), so that a
// request admitted at step s, finishing at step s+output−1, never wraps
// onto a step still to come.
const ring = 1 << 12

// engine is one replica's vLLM engine, stepped as internal/sim's engine
// steps: at the start of a step it admits waiting requests in FIFO order
// while the batch has fewer than MaxNumSeqs, their prompts fit the step's
// token budget (MaxBatchedTokens less one token per running request; a
// prompt larger than the budget goes alone) and, beside running requests,
// the KV cache; the step lasts StepBase + DecodePerSeq·(running requests
// not admitted in it) + PrefillPerToken·(prompt tokens admitted), scaled
// by a uniform ±Jitter; at its end every request in the batch gets one
// token (the first of those admitted), and those that reach their length
// finish. No preemption (the demo engine's default), no chunked prefill,
// no cancellations.
//
// Where it differs from internal/sim: requests come from the router, not
// from a workload of its own, and it keeps no per-token record: a request
// admitted at step s finishes at step s + output − 1 (every step gives
// every running request one token), so it is filed in a calendar of
// steps instead of being visited at each one.
type engine struct {
	p   sim.EngineParams
	rng *rand.Rand
	obs observer

	waiting []*request
	head    int
	running int
	kvUsed  int
	step    int64 // the step in progress, or the next one
	inStep  bool
	stepEnd float64
	clock   float64 // end of the last step
	admit   []*request
	finish  [][]*request // by step mod ring
	// generated counts every token produced, for the scrape intervals.
	generated float64
}

func newEngine(p sim.EngineParams, seed uint64, obs observer) *engine {
	return &engine{p: p, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), obs: obs, finish: make([][]*request, ring)}
}

// waitingNow is vLLM's num_requests_waiting; outstanding adds the running.
func (e *engine) waitingNow() int  { return len(e.waiting) - e.head }
func (e *engine) outstanding() int { return e.waitingNow() + e.running }
func (e *engine) kvUsage() float64 { return float64(e.kvUsed) / float64(e.p.KVCapacityTokens) }
func (e *engine) idle() bool       { return !e.inStep && e.outstanding() == 0 }

// push appends r to the waiting queue, compacting it now and then.
func (e *engine) push(r *request) {
	if e.head > 1024 && e.head*2 > len(e.waiting) {
		n := copy(e.waiting, e.waiting[e.head:])
		clear(e.waiting[n:])
		e.waiting, e.head = e.waiting[:n], 0
	}
	e.waiting = append(e.waiting, r)
}

// advance runs the engine to t: every step ending at or before t is
// completed; a step starting at or before t but ending later stays in
// progress with its batch fixed.
func (e *engine) advance(t float64) {
	for {
		if e.inStep {
			if e.stepEnd > t {
				return
			}
			e.completeStep()
			continue
		}
		start := e.clock
		if e.running == 0 {
			if e.waitingNow() == 0 {
				return
			}
			start = math.Max(start, e.waiting[e.head].arrival)
		}
		if start > t {
			return
		}
		e.startStep(start)
	}
}

// startStep admits what fits and fixes the step's length.
func (e *engine) startStep(start float64) {
	p := e.p
	budget := p.MaxBatchedTokens - e.running
	prefill, admitted := 0, 0
	for e.waitingNow() > 0 && e.running < p.MaxNumSeqs {
		r := e.waiting[e.head]
		fits := r.prompt <= budget-prefill
		oversized := admitted == 0 && r.prompt > p.MaxBatchedTokens
		if !fits && !oversized {
			break
		}
		if e.running > 0 && e.kvUsed+r.prompt > p.KVCapacityTokens {
			break
		}
		e.waiting[e.head] = nil
		e.head++
		e.running++
		e.kvUsed += r.prompt
		prefill += r.prompt
		admitted++
		e.admit = append(e.admit, r)
		at := (e.step + int64(r.output) - 1) % ring
		e.finish[at] = append(e.finish[at], r)
	}
	decoders := e.running - admitted
	d := p.StepBase.Seconds() + p.DecodePerSeq.Seconds()*float64(decoders) + p.PrefillPerToken.Seconds()*float64(prefill)
	if p.Jitter > 0 {
		d *= 1 + p.Jitter*(2*e.rng.Float64()-1)
	}
	e.stepEnd = start + math.Max(d, 1e-6)
	e.inStep = true
}

// completeStep gives every running request one token at the step's end.
func (e *engine) completeStep() {
	now := e.stepEnd
	e.inStep, e.clock = false, now
	for _, r := range e.admit {
		r.first = now
		e.obs.firstToken(r, now)
	}
	clear(e.admit)
	e.admit = e.admit[:0]
	e.kvUsed += e.running
	e.generated += float64(e.running)
	slot := e.step % ring
	for _, r := range e.finish[slot] {
		e.running--
		e.kvUsed -= r.prompt + r.output
		e.obs.finished(r, now)
	}
	clear(e.finish[slot])
	e.finish[slot] = e.finish[slot][:0]
	e.step++
}

// crash loses every request in the engine at t (a vLLM process that died):
// the running ones, filed in the calendar, and the waiting ones.
func (e *engine) crash(t float64) {
	for i := range e.finish {
		for _, r := range e.finish[i] {
			e.obs.lost(r, t)
		}
		clear(e.finish[i])
		e.finish[i] = e.finish[i][:0]
	}
	for _, r := range e.waiting[e.head:] {
		e.obs.lost(r, t)
	}
	clear(e.admit)
	e.waiting, e.head, e.running, e.kvUsed = nil, 0, 0, 0
	e.admit, e.inStep, e.clock = e.admit[:0], false, t
}
