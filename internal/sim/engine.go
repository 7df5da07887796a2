package sim

import (
	"math/rand/v2"
	"slices"
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
	// preempts holds, per preemption, when the request left the batch and
	// when it was scheduled again (-1 while it waits): vLLM's PREEMPTED
	// events, counted in the request's num_preemptions.
	preempts [][2]int64
	// deferred marks a request the scheduler skips until readyAt (Deferral);
	// undeferred is when it rejoined the waiting queue, -1 before.
	deferred            bool
	readyAt, undeferred int64
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
	// deferredReqs are the deferred requests not yet ready, in readiness
	// order (vLLM's skipped waiting requests).
	deferredReqs []*request
}

// numWaiting is the requests waiting for capacity: in the waiting queue,
// their clients still there.
func (e *engine) numWaiting() int { return len(e.waiting) - e.head - e.waitingCancelled }

// numQueued is every waiting request, deferred ones too: vLLM's
// num_requests_waiting (waiting plus skipped waiting).
func (e *engine) numQueued() int { return e.numWaiting() + len(e.deferredReqs) }

func (e *engine) enqueue(r *request) {
	if r.deferred {
		e.deferredReqs = append(e.deferredReqs, r)
	} else {
		e.push(r)
	}
	if r.plan.patience != never {
		e.scheduleCancel(r, r.arrival+r.plan.patience)
	}
}

// push appends r to the waiting queue.
func (e *engine) push(r *request) {
	if e.head > 1024 && e.head*2 > len(e.waiting) {
		n := copy(e.waiting, e.waiting[e.head:])
		clear(e.waiting[n:])
		e.waiting = e.waiting[:n]
		e.head = 0
	}
	e.waiting = append(e.waiting, r)
}

// pushFront puts r at the front of the waiting queue (a preempted request,
// a deferred one that became ready), as vLLM's prepend_request does.
func (e *engine) pushFront(r *request) {
	if e.head > 0 {
		e.head--
		e.waiting[e.head] = r
		return
	}
	e.waiting = slices.Insert(e.waiting, 0, r)
}

// undefer moves the deferred requests ready by start to the front of the
// waiting queue, in their order.
func (e *engine) undefer(start int64) {
	n := 0
	for n < len(e.deferredReqs) && e.deferredReqs[n].readyAt <= start {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		r := e.deferredReqs[i]
		r.undeferred = start
		e.pushFront(r)
	}
	e.deferredReqs = slices.Delete(e.deferredReqs, 0, n)
}

// nextReady is when the first deferred request becomes ready; never if none.
func (e *engine) nextReady() int64 {
	if len(e.deferredReqs) == 0 {
		return never
	}
	return e.deferredReqs[0].readyAt
}

// preemptForKV preempts, while the KV cache cannot hold one more token for
// every running request, the request scheduled last (vLLM's FCFS policy
// pops the end of its running list): it frees its KV and goes back to the
// front of the waiting queue.
func (e *engine) preemptForKV(start int64) {
	for len(e.running) > 1 && e.kvUsed+len(e.running) > e.m.cfg.Engine.KVCapacityTokens {
		r := e.running[len(e.running)-1]
		e.running[len(e.running)-1] = nil
		e.running = e.running[:len(e.running)-1]
		e.kvUsed -= r.prompt + r.generated
		r.preempts = append(r.preempts, [2]int64{start, -1})
		e.met.preemptions++
		e.pushFront(r)
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
			next := e.nextReady()
			if e.numWaiting() > 0 {
				next = min(next, e.waiting[e.head].arrival)
			}
			if next == never {
				start = never
			} else {
				start = max(start, next)
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
	if p.Preempt {
		e.preemptForKV(start)
	}
	e.undefer(start)
	budget := p.MaxBatchedTokens - len(e.running)
	prefill, admitted := 0, 0
	for e.dropCancelledHead(); e.numWaiting() > 0 && len(e.running) < p.MaxNumSeqs; e.dropCancelledHead() {
		r := e.waiting[e.head]
		if r.arrival > start {
			break
		}
		// A preempted request prefills its prompt and the tokens it had.
		size := r.prompt + r.generated
		fits := size <= budget-prefill
		oversized := admitted == 0 && size > p.MaxBatchedTokens
		if !fits && !oversized {
			break
		}
		if len(e.running) > 0 && e.kvUsed+size > p.KVCapacityTokens {
			break
		}
		e.waiting[e.head] = nil
		e.head++
		if r.scheduled < 0 {
			r.scheduled = start
		}
		if n := len(r.preempts); n > 0 && r.preempts[n-1][1] < 0 {
			r.preempts[n-1][1] = start
		}
		e.running = append(e.running, r)
		e.kvUsed += size
		prefill += size
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
	m.hists[hPreemptions].observe(float64(len(r.preempts)))
	for i, reason := range finishReasons {
		if reason == r.reason {
			m.success[i]++
		}
	}
}

// abortAll drops every running and waiting request at time t (a restart).
func (e *engine) abortAll(t int64, s *Sim) {
	for _, r := range slices.Concat(e.running, e.waiting[e.head:], e.deferredReqs) {
		if r.done() {
			continue // a waiting request whose client had already gone
		}
		r.aborted, r.finish = true, t
		s.done(r)
	}
	e.running, e.waiting, e.head, e.deferredReqs = nil, nil, 0, nil
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
