package sim

import (
	"math/rand/v2"
	"time"
)

// request is the simulator's live record of one request; times are ns since
// the sim's Start, -1 while unset.
type request struct {
	id                                     int64
	model, engine                          int
	arrival, scheduled, firstToken, finish int64
	prompt, output                         int // output is the target length
	generated                              int
	last                                   int64 // time of the latest token
	reason                                 string
	aborted                                bool // lost in a restart
	cancelled                              bool // its client went away
	rejected                               bool // turned away at admission
	plan                                   clientPlan
	stopAfter                              int   // token after which the client cancels; 0 if it does not
	cancelAt                               int64 // pending client abort; never if none
	tokens                                 []int64
}

func (r *request) done() bool { return r.finish >= 0 }

// engine is one data-parallel engine: a FIFO waiting queue and a running batch
// advanced one scheduler step at a time.
type engine struct {
	m       *model
	idx     int
	rng     *rand.Rand
	waiting []*request
	head    int // waiting[head:] are still waiting
	running []*request
	clock   int64 // end of the last step, or the (re)start time
	stepEnd int64 // end of the step in progress, never when idle
	kvUsed  int   // tokens held by the running requests
	met     engineMetrics
	// cancels are the pending client aborts; waitingCancelled counts the
	// requests in waiting[head:] whose clients have already gone.
	cancels          cancelQueue
	waitingCancelled int
}

func (e *engine) numWaiting() int { return len(e.waiting) - e.head - e.waitingCancelled }

func (e *engine) enqueue(r *request) {
	if e.head > 1024 && e.head*2 > len(e.waiting) {
		n := copy(e.waiting, e.waiting[e.head:])
		clear(e.waiting[n:])
		e.waiting = e.waiting[:n]
		e.head = 0
	}
	e.waiting = append(e.waiting, r)
	if r.plan.patience != never {
		e.scheduleCancel(r, r.arrival+r.plan.patience)
	}
}

// advance runs the engine until time t: every step that ends at or before t is
// completed (and observed); a step that starts at or before t but ends later
// stays in progress, its batch already fixed. Client aborts at or before t
// are carried out in time order: after a step ending at the same instant,
// before a step starting at it.
func (e *engine) advance(t int64, s *Sim) {
	for {
		cancel := e.nextCancel()
		if e.stepEnd != never {
			if cancel < e.stepEnd && cancel <= t {
				e.cancelNext(s)
				continue
			}
			if e.stepEnd > t {
				return
			}
			e.completeStep(s)
			continue
		}
		e.dropCancelledHead()
		start := e.clock
		if len(e.running) == 0 {
			if e.numWaiting() == 0 {
				start = never
			} else {
				start = max(start, e.waiting[e.head].arrival)
			}
		}
		if cancel <= start && cancel <= t {
			e.cancelNext(s)
			continue
		}
		if start > t {
			return
		}
		e.startStep(start)
	}
}

// startStep admits waiting requests into the batch (FIFO, within the batch
// limit, the token budget and the KV cache) and fixes the step's duration.
func (e *engine) startStep(start int64) {
	p := e.m.cfg.Engine
	budget := p.MaxBatchedTokens - len(e.running)
	prefill, admitted := 0, 0
	for e.dropCancelledHead(); e.numWaiting() > 0 && len(e.running) < p.MaxNumSeqs; e.dropCancelledHead() {
		r := e.waiting[e.head]
		if r.arrival > start {
			break
		}
		fits := r.prompt <= budget-prefill
		oversized := admitted == 0 && r.prompt > p.MaxBatchedTokens
		if !fits && !oversized {
			break
		}
		if len(e.running) > 0 && e.kvUsed+r.prompt > p.KVCapacityTokens {
			break
		}
		e.waiting[e.head] = nil
		e.head++
		if r.scheduled < 0 {
			r.scheduled = start
		}
		e.running = append(e.running, r)
		e.kvUsed += r.prompt
		prefill += r.prompt
		admitted++
	}
	decoders := len(e.running) - admitted
	d := float64(p.StepBase) + float64(p.DecodePerSeq)*float64(decoders) + float64(p.PrefillPerToken)*float64(prefill)
	if p.Jitter > 0 {
		d *= 1 + p.Jitter*(2*e.rng.Float64()-1)
	}
	e.stepEnd = start + max(int64(d), int64(time.Microsecond))
}

// completeStep produces one token for every running request at the step's
// end: the first token of the requests prefilled in it, the next token of the
// others. It observes TTFT and ITL as vLLM does and finishes requests that
// reached their length.
func (e *engine) completeStep(s *Sim) {
	now := e.stepEnd
	e.stepEnd = never
	e.clock = now
	m := &e.met
	keep := e.running[:0]
	for _, r := range e.running {
		if r.generated == 0 {
			r.firstToken = now
			m.promptTokens += uint64(r.prompt)
			m.hists[hTTFT].observe(seconds(now - r.arrival))
			r.stopAfter = e.m.cfg.Workload.Cancel.stopAfter(r.plan, now-r.arrival, r.output)
			r.cancelAt = never
		} else {
			m.hists[hITL].observe(seconds(now - r.last))
		}
		r.generated++
		r.last = now
		m.genTokens++
		e.kvUsed++
		if !s.cfg.DiscardTokenTimes {
			r.tokens = append(r.tokens, now)
		}
		if r.generated >= r.output {
			e.finishRequest(r, now)
			s.done(r)
			continue
		}
		if r.generated == r.stopAfter {
			e.scheduleCancel(r, now+r.plan.reaction)
		}
		keep = append(keep, r)
	}
	clear(e.running[len(keep):])
	e.running = keep
}

// finishRequest observes everything vLLM records when a request finishes.
func (e *engine) finishRequest(r *request, now int64) {
	r.finish = now
	e.kvUsed -= r.prompt + r.generated
	m := &e.met
	decode := now - r.firstToken
	m.hists[hE2E].observe(seconds(now - r.arrival))
	m.hists[hQueue].observe(seconds(r.scheduled - r.arrival))
	m.hists[hPrefill].observe(seconds(r.firstToken - r.scheduled))
	m.hists[hDecode].observe(seconds(decode))
	m.hists[hInference].observe(seconds(now - r.scheduled))
	m.hists[hTPOT].observe(tpot(decode, r.generated))
	m.hists[hPromptTokens].observe(float64(r.prompt))
	m.hists[hGenerationTokens].observe(float64(r.generated))
	for i, reason := range finishReasons {
		if reason == r.reason {
			m.success[i]++
		}
	}
}

// abortAll drops every running and waiting request at time t (a restart).
func (e *engine) abortAll(t int64, s *Sim) {
	for _, r := range append(e.running, e.waiting[e.head:]...) {
		if r.done() {
			continue // a waiting request whose client had already gone
		}
		r.aborted, r.finish = true, t
		s.done(r)
	}
	e.running, e.waiting, e.head = nil, nil, 0
	e.cancels, e.waitingCancelled = nil, 0
	e.clock, e.stepEnd, e.kvUsed = t, never, 0
}

// seconds converts a virtual duration in ns to float seconds.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// tpot is vLLM's per-request time per output token: decode/(n-1), 0 if n <= 1.
func tpot(decodeNS int64, n int) float64 {
	if n <= 1 {
		return 0
	}
	return seconds(decodeNS) / float64(n-1)
}
