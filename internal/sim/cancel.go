package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Cancellation is how a workload's clients abandon their requests. vLLM
// handles a client abort without any finish observation: a stream cancelled
// after its first token keeps the TTFT observation, the ITL gaps and the
// generation tokens counted up to then, but reaches no e2e, queue, prefill,
// decode, inference, per-request TPOT or token-count histogram and no
// request_success_total; it leaves the running and waiting gauges at once. A
// request cancelled before its first token is observed nowhere.
//
// # After the first token
//
// When a request's first token comes, its client decides to cancel the
// stream with probability
//
//	p = min(1, Share · (TTFT/TTFTRef)^Skew)
//
// so Share is the probability for a request whose TTFT is TTFTRef, and Skew
// how much more often slow requests are cancelled (0: every stream with
// probability Share, whatever its TTFT; 1: proportional to its TTFT). With
// Skew 1 and TTFTRef the workload's mean TTFT, the expected share of cancelled
// streams is Share, less where the cap at 1 binds. Only requests of at least
// two output tokens can be cancelled this way (a one-token request finishes
// with its first token).
//
// A cancelling client stops after token j of its n-token request: j = 1 (right
// after the first token) with probability AtFirstToken, otherwise j uniform
// in 1..n−1 (mid-stream). The abort reaches vLLM a uniform delay in
// [0, Reaction) after token j: tokens produced before then are produced and
// counted. If the request's last token comes first, it finishes normally.
//
// # Before the first token
//
// A share BeforeFirstToken of clients have a finite patience, exponential
// with mean Patience: if the first token has not come by arrival + patience,
// the client disconnects then (from the waiting queue or from the batch).
//
// Every random draw is made at the request's arrival from a stream of its
// own, so the arrivals and lengths of a workload are the same with and
// without cancellations, and the run does not depend on how the clock is
// advanced.
type Cancellation struct {
	// Share is the probability that a stream with TTFT equal to TTFTRef is
	// cancelled after its first token; 0 disables these cancellations.
	Share float64
	// TTFTRef is the reference TTFT of Share; needed when Skew > 0.
	TTFTRef time.Duration
	// Skew is the exponent of the TTFT dependence (>= 0).
	Skew float64
	// AtFirstToken is the share of cancelled streams that stop right after
	// their first token; the others stop after a uniform later token.
	AtFirstToken float64
	// Reaction is the largest delay between the token a client stops after
	// and the abort reaching vLLM.
	Reaction time.Duration
	// BeforeFirstToken is the share of clients with a finite patience for
	// their first token; 0 disables these cancellations.
	BeforeFirstToken float64
	// Patience is the mean of those clients' exponential patience.
	Patience time.Duration
}

// enabled reports whether any client ever cancels.
func (c Cancellation) enabled() bool { return c.Share > 0 || c.BeforeFirstToken > 0 }

func (c Cancellation) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"share", c.Share}, {"at first token", c.AtFirstToken}, {"before first token", c.BeforeFirstToken}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("cancellation: %s %v, want in [0, 1]", f.name, f.v)
		}
	}
	if !(c.Skew >= 0) || math.IsInf(c.Skew, 0) {
		return fmt.Errorf("cancellation: skew %v, want finite >= 0", c.Skew)
	}
	if c.Skew > 0 && c.TTFTRef <= 0 {
		return fmt.Errorf("cancellation: skew %v needs a TTFT reference > 0 (got %v)", c.Skew, c.TTFTRef)
	}
	if c.TTFTRef < 0 || c.Reaction < 0 {
		return fmt.Errorf("cancellation: TTFT reference %v and reaction %v, want >= 0", c.TTFTRef, c.Reaction)
	}
	if c.BeforeFirstToken > 0 && c.Patience <= 0 {
		return fmt.Errorf("cancellation: before-first-token share %v needs a patience > 0 (got %v)", c.BeforeFirstToken, c.Patience)
	}
	return nil
}

// probability is the chance that a stream with this TTFT (ns) is cancelled
// after its first token.
func (c Cancellation) probability(ttftNS int64) float64 {
	if c.Skew == 0 {
		return c.Share
	}
	return min(1, c.Share*math.Pow(float64(ttftNS)/float64(c.TTFTRef), c.Skew))
}

// clientPlan is what a request's client will do, drawn at arrival.
type clientPlan struct {
	decide   float64 // uniform: cancel after the first token if below the probability
	stopAt   float64 // uniform: which token the client stops after
	reaction int64   // ns between that token and the abort
	patience int64   // ns the client waits for its first token; never if unbounded
}

// drawPlan draws a client's plan; the number of draws is fixed, so the stream
// stays aligned with the arrivals.
func (c Cancellation) drawPlan(rng *rand.Rand) clientPlan {
	p := clientPlan{decide: rng.Float64(), stopAt: rng.Float64(), patience: never}
	p.reaction = int64(rng.Float64() * float64(c.Reaction))
	impatient := rng.Float64() < c.BeforeFirstToken
	wait := rng.ExpFloat64() * float64(c.Patience)
	if impatient && wait < float64(never/2) {
		p.patience = int64(wait)
	}
	return p
}

// stopAfter returns the token after which a cancelling client of an n-token
// request stops (1..n−1), or 0 when it does not cancel.
func (c Cancellation) stopAfter(p clientPlan, ttftNS int64, n int) int {
	if n < 2 || p.decide >= c.probability(ttftNS) {
		return 0
	}
	if p.stopAt < c.AtFirstToken {
		return 1
	}
	u := (p.stopAt - c.AtFirstToken) / (1 - c.AtFirstToken)
	return 1 + min(n-2, int(u*float64(n-1)))
}

// abortReason is the index of "abort" in finishReasons.
const abortReason = 2

// cancelEvent is a pending client abort of one request at a virtual time.
type cancelEvent struct {
	at int64
	r  *request
}

// cancelQueue is a min-heap of pending aborts by time (ties by arrival
// order, for determinism). Entries whose request has ended or was
// rescheduled are skipped when they come up.
type cancelQueue []cancelEvent

func (q cancelQueue) Len() int { return len(q) }
func (q cancelQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].r.id < q[j].r.id
}
func (q cancelQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

// Push implements heap.Interface.
func (q *cancelQueue) Push(x any) { *q = append(*q, x.(cancelEvent)) }

// Pop implements heap.Interface.
func (q *cancelQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	old[len(old)-1] = cancelEvent{}
	*q = old[:len(old)-1]
	return ev
}

// scheduleCancel makes r's client abort at time at (replacing any earlier plan).
func (e *engine) scheduleCancel(r *request, at int64) {
	r.cancelAt = at
	heap.Push(&e.cancels, cancelEvent{at: at, r: r})
}

// nextCancel returns the time of the earliest live pending abort, or never.
func (e *engine) nextCancel() int64 {
	for len(e.cancels) > 0 {
		ev := e.cancels[0]
		if !ev.r.done() && ev.r.cancelAt == ev.at {
			return ev.at
		}
		heap.Pop(&e.cancels)
	}
	return never
}

// cancelNext carries out the earliest pending abort: the request leaves the
// waiting queue or the batch at once, frees its KV cache and is observed
// nowhere (request_success_total{finished_reason="abort"} counts it only
// when the config asks for it).
func (e *engine) cancelNext(s *Sim) {
	ev := heap.Pop(&e.cancels).(cancelEvent)
	r := ev.r
	r.finish, r.cancelled = ev.at, true
	// A request is running, deferred, or else in the waiting queue (for
	// the first time, or again after a preemption).
	if i := slices.Index(e.running, r); i >= 0 {
		e.running = slices.Delete(e.running, i, i+1)
		e.kvUsed -= r.prompt + r.generated
	} else if i := slices.Index(e.deferredReqs, r); i >= 0 {
		e.deferredReqs = slices.Delete(e.deferredReqs, i, i+1)
	} else {
		e.waitingCancelled++
	}
	if s.cfg.CountAborts {
		e.met.success[abortReason]++
	}
	s.done(r)
}

// dropCancelledHead moves the waiting queue's head past requests whose
// clients have gone.
func (e *engine) dropCancelledHead() {
	for e.head < len(e.waiting) && e.waiting[e.head].cancelled {
		e.waiting[e.head] = nil
		e.head++
		e.waitingCancelled--
	}
}
