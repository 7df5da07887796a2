package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// Request is the ground truth of one simulated request. Times are absolute
// virtual times; a zero time means the event has not happened (yet).
type Request struct {
	// ID numbers the requests of one model in arrival order, from 0.
	ID     int64  `json:"id"`
	Model  string `json:"model"`
	Engine int    `json:"engine"`
	// Arrival is when the request reached the server.
	Arrival time.Time `json:"arrival"`
	// Scheduled is when it was first scheduled (left the waiting queue).
	Scheduled time.Time `json:"scheduled,omitzero"`
	// FirstToken is when its first output token was produced.
	FirstToken time.Time `json:"first_token,omitzero"`
	// Finish is when the request ended: its last token for a finished
	// request, the instant it was lost for an aborted one, the instant its
	// client's abort reached vLLM for a cancelled one. Zero while in flight.
	Finish time.Time `json:"finish,omitzero"`
	// LastToken is when its latest output token was produced (so far); equal
	// to Finish for a finished request.
	LastToken time.Time `json:"last_token,omitzero"`
	// PromptTokens is the prompt length.
	PromptTokens int `json:"prompt_tokens"`
	// OutputTokens is the number of tokens produced so far (all of them once
	// finished).
	OutputTokens int `json:"output_tokens"`
	// FinishedReason is "stop" or "length" (what vLLM will label it with).
	FinishedReason string `json:"finished_reason"`
	// Aborted marks a request lost in a restart: it appears in no per-request
	// histogram and in no request_success_total.
	Aborted bool `json:"aborted,omitempty"`
	// Cancelled marks a request whose client went away (at Finish). After its
	// first token (see Abandoned) it keeps its TTFT and ITL observations and
	// its generation tokens but reaches no finish histogram and no
	// request_success_total; before it, it is observed nowhere.
	Cancelled bool `json:"cancelled,omitempty"`
	// Rejected marks a request turned away at admission (HTTP 503, at
	// Finish = Arrival): counted only in vllm:admission_rejections_total.
	Rejected bool `json:"rejected,omitempty"`
	// Preemptions lists, per preemption, when the engine took the request
	// out of the batch (From) and when it scheduled it again (To, zero while
	// it waits): it waited again in between. Its length is vLLM's
	// per-request num_preemptions.
	Preemptions []Span `json:"preemptions,omitempty"`
	// Deferred marks a request the scheduler skipped after its arrival
	// (Deferral) until DeferredUntil, when it rejoined the waiting queue
	// (zero while still deferred).
	Deferred      bool      `json:"deferred,omitempty"`
	DeferredUntil time.Time `json:"deferred_until,omitzero"`
	// TokenTimes holds when each output token was produced (empty when the sim
	// discards token times).
	TokenTimes []time.Time `json:"-"`
}

// Span is a stretch of virtual time [From, To); a zero To has not ended.
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"`
}

// Finished reports whether the request completed (neither lost nor
// cancelled) by now: it is in every finish histogram.
func (r Request) Finished() bool {
	return !r.Aborted && !r.Cancelled && !r.Rejected && !r.Finish.IsZero()
}

// Abandoned reports whether the client cancelled the request after its first
// token: counted in TTFT, never finished.
func (r Request) Abandoned() bool { return r.Cancelled && !r.FirstToken.IsZero() }

// Outcome is how a request ended, as one word.
type Outcome string

// The outcomes of a request.
const (
	OutcomeInFlight  Outcome = "in-flight" // not ended yet
	OutcomeFinished  Outcome = "finished"  // its last token came: in every finish histogram
	OutcomeAbandoned Outcome = "abandoned" // cancelled by its client after its first token
	OutcomeCancelled Outcome = "cancelled" // cancelled by its client before its first token
	OutcomeLost      Outcome = "lost"      // lost in a restart (first token or not)
	OutcomeRejected  Outcome = "rejected"  // turned away at admission
)

// Outcome returns how the request ended (or OutcomeInFlight).
func (r Request) Outcome() Outcome {
	switch {
	case r.Finish.IsZero():
		return OutcomeInFlight
	case r.Aborted:
		return OutcomeLost
	case r.Rejected:
		return OutcomeRejected
	case r.Abandoned():
		return OutcomeAbandoned
	case r.Cancelled:
		return OutcomeCancelled
	default:
		return OutcomeFinished
	}
}

func sec(d time.Duration) float64 { return seconds(int64(d)) }

// TTFT is first token − arrival, in seconds, as vLLM observes it.
func (r Request) TTFT() float64 { return sec(r.FirstToken.Sub(r.Arrival)) }

// E2E is finish − arrival, in seconds (for a cancelled request: until the
// abort).
func (r Request) E2E() float64 { return sec(r.Finish.Sub(r.Arrival)) }

// QueueTime is first scheduled − arrival, in seconds.
func (r Request) QueueTime() float64 { return sec(r.Scheduled.Sub(r.Arrival)) }

// PrefillTime is first token − first scheduled, in seconds.
func (r Request) PrefillTime() float64 { return sec(r.FirstToken.Sub(r.Scheduled)) }

// DecodeTime is last token − first token, in seconds (so far, for a request
// that did not finish).
func (r Request) DecodeTime() float64 { return sec(r.lastToken().Sub(r.FirstToken)) }

// lastToken is LastToken, or Finish in truth written before LastToken existed.
func (r Request) lastToken() time.Time {
	if r.LastToken.IsZero() {
		return r.Finish
	}
	return r.LastToken
}

// InferenceTime is last token − first scheduled, in seconds.
func (r Request) InferenceTime() float64 { return sec(r.Finish.Sub(r.Scheduled)) }

// TPOT is vLLM's per-request time per output token: decode/(n−1), 0 if n ≤ 1
// (over the tokens produced, for a request that did not finish).
func (r Request) TPOT() float64 { return tpot(int64(r.lastToken().Sub(r.FirstToken)), r.OutputTokens) }

// Value returns the request's value of a latency metric by its slo name
// ("ttft", "tpot", "e2e", "queue", "prefill", "decode", "inference"); ok is
// false for other names ("itl" has one value per gap).
func (r Request) Value(metric string) (v float64, ok bool) {
	switch metric {
	case "ttft":
		return r.TTFT(), true
	case "tpot":
		return r.TPOT(), true
	case "e2e":
		return r.E2E(), true
	case "queue":
		return r.QueueTime(), true
	case "prefill":
		return r.PrefillTime(), true
	case "decode":
		return r.DecodeTime(), true
	case "inference":
		return r.InferenceTime(), true
	}
	return 0, false
}

// Truth is the ground truth of a run: every request, ordered by arrival (ties
// by model order, then ID).
type Truth []Request

// Truth returns every request that has arrived so far: finished, aborted and
// still in flight (with DiscardTruth, only those in flight).
func (s *Sim) Truth() Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqs := slices.Clone(s.reqs)
	slices.SortStableFunc(reqs, func(a, b *request) int {
		switch {
		case a.arrival != b.arrival:
			return cmpInt(a.arrival, b.arrival)
		case a.model != b.model:
			return a.model - b.model
		default:
			return cmpInt(a.id, b.id)
		}
	})
	out := make(Truth, len(reqs))
	for i, r := range reqs {
		out[i] = s.export(r)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Sim) export(r *request) Request {
	at := func(ns int64) time.Time {
		if ns < 0 {
			return time.Time{}
		}
		return s.cfg.Start.Add(time.Duration(ns))
	}
	out := Request{
		ID: r.id, Model: s.models[r.model].cfg.Name, Engine: r.engine,
		Arrival: at(r.arrival), Scheduled: at(r.scheduled), FirstToken: at(r.firstToken), Finish: at(r.finish),
		PromptTokens: r.prompt, OutputTokens: r.generated, FinishedReason: r.reason,
		Aborted: r.aborted, Cancelled: r.cancelled, Rejected: r.rejected,
	}
	if r.generated > 0 {
		out.LastToken = at(r.last)
	}
	for _, p := range r.preempts {
		out.Preemptions = append(out.Preemptions, Span{From: at(p[0]), To: at(p[1])})
	}
	if r.deferred {
		out.Deferred, out.DeferredUntil = true, at(r.undeferred)
	}
	if len(r.tokens) > 0 {
		out.TokenTimes = make([]time.Time, len(r.tokens))
		for i, t := range r.tokens {
			out.TokenTimes[i] = at(t)
		}
	}
	return out
}

// wireRequest is a Request as one JSON line: token times are offsets from
// the arrival in nanoseconds, to keep the file small and exact.
type wireRequest struct {
	Request
	TokenOffsetsNS []int64 `json:"token_offsets_ns,omitempty"`
}

// WriteTruth writes the truth as JSON Lines, one object per request, in
// Truth order. Times are RFC 3339 with nanoseconds; `token_offsets_ns` lists
// each output token's time as nanoseconds after `arrival`.
func (t Truth) WriteTruth(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i, r := range t {
		wr := wireRequest{Request: r}
		if len(r.TokenTimes) > 0 {
			wr.TokenOffsetsNS = make([]int64, len(r.TokenTimes))
			for j, x := range r.TokenTimes {
				wr.TokenOffsetsNS[j] = int64(x.Sub(r.Arrival))
			}
		}
		if err := enc.Encode(wr); err != nil {
			return fmt.Errorf("write truth: request %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}

// WriteTruth writes the sim's current truth as JSON Lines (see Truth.WriteTruth).
func (s *Sim) WriteTruth(w io.Writer) error {
	return s.Truth().WriteTruth(w)
}
