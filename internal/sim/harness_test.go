package sim

// The sim's own tests read the truth with the queries of package
// test/simtruth, which they cannot import (it imports this package), as
// methods of Truth; read back what WriteTruth wrote (ReadTruth); and drive
// the sim with methods the daemon and the commands do not need (a restart
// at the current instant: the same as a ScheduledRestart then, which
// TestScheduledRestartMatchesRestart checks).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Config returns the configuration the sim was built with.
func (s *Sim) Config() Config {
	return s.cfg
}

// Now returns the sim's current virtual time.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Start.Add(time.Duration(s.now))
}

// Created returns the time of the latest (re)start: the `_created` value.
func (s *Sim) Created() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Start.Add(time.Duration(s.created))
}

// Advance runs the simulation for d of virtual time.
func (s *Sim) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.cfg.Start.Add(time.Duration(s.now) + d))
}

// holds reports whether at lies in the span.
func (s Span) holds(at time.Time) bool {
	return !at.Before(s.From) && (s.To.IsZero() || at.Before(s.To))
}

// deferredAt reports whether the request was deferred at at.
func (r Request) deferredAt(at time.Time) bool {
	return r.Deferred && (r.DeferredUntil.IsZero() || at.Before(r.DeferredUntil))
}

// preemptedAt reports whether the request waited after a preemption at at.
func (r Request) preemptedAt(at time.Time) bool {
	return slices.ContainsFunc(r.Preemptions, func(s Span) bool { return s.holds(at) })
}

// ForModel returns the requests of one model.
func (t Truth) ForModel(name string) Truth {
	var out Truth
	for _, r := range t {
		if r.Model == name {
			out = append(out, r)
		}
	}
	return out
}

func in(x, from, to time.Time) bool { return !x.IsZero() && x.After(from) && !x.After(to) }

// FinishedIn returns the requests that finished (neither lost nor cancelled)
// in (from, to]: the population of the histograms observed at finish.
func (t Truth) FinishedIn(from, to time.Time) Truth {
	return t.endedIn(from, to, Request.Finished)
}

// AbandonedIn returns the requests cancelled by their clients after their
// first token, with the abort in (from, to]: counted in TTFT, never finished.
func (t Truth) AbandonedIn(from, to time.Time) Truth {
	return t.endedIn(from, to, Request.Abandoned)
}

// CancelledIn returns every request cancelled by its client in (from, to],
// before or after its first token.
func (t Truth) CancelledIn(from, to time.Time) Truth {
	return t.endedIn(from, to, func(r Request) bool { return r.Cancelled })
}

// RejectedIn returns the requests turned away at admission in (from, to].
func (t Truth) RejectedIn(from, to time.Time) Truth {
	return t.endedIn(from, to, func(r Request) bool { return r.Rejected })
}

// LostIn returns the requests lost in a restart in (from, to].
func (t Truth) LostIn(from, to time.Time) Truth {
	return t.endedIn(from, to, func(r Request) bool { return r.Aborted })
}

func (t Truth) endedIn(from, to time.Time, keep func(Request) bool) Truth {
	var out Truth
	for _, r := range t {
		if keep(r) && in(r.Finish, from, to) {
			out = append(out, r)
		}
	}
	return out
}

// FirstTokenIn returns the requests whose first token came in (from, to]: the
// population of the TTFT histogram.
func (t Truth) FirstTokenIn(from, to time.Time) Truth {
	var out Truth
	for _, r := range t {
		if in(r.FirstToken, from, to) {
			out = append(out, r)
		}
	}
	return out
}

// ITLGaps returns, in seconds, every inter-token gap whose later token was
// produced in (from, to]: the observations of the ITL histogram.
func (t Truth) ITLGaps(from, to time.Time) []float64 {
	var out []float64
	for _, r := range t {
		for i := 1; i < len(r.TokenTimes); i++ {
			if in(r.TokenTimes[i], from, to) {
				out = append(out, sec(r.TokenTimes[i].Sub(r.TokenTimes[i-1])))
			}
		}
	}
	return out
}

// TokensIn counts the output tokens produced in (from, to]: the increase of
// vllm:generation_tokens_total (when no restart lies in between).
func (t Truth) TokensIn(from, to time.Time) int {
	n := 0
	for _, r := range t {
		for _, x := range r.TokenTimes {
			if in(x, from, to) {
				n++
			}
		}
	}
	return n
}

// InFlight is the number of requests inside the server at one instant.
type InFlight struct {
	Waiting, Running int
	// Deferred counts the waiting requests the scheduler skips (a subset of
	// Waiting): num_requests_waiting_by_reason{reason="deferred"}, the rest
	// being reason="capacity".
	Deferred int
	// PastFirstToken counts the running requests whose first token had come
	// (a subset of Running): counted in TTFT, not yet finished.
	PastFirstToken int
}

// Total is waiting + running.
func (f InFlight) Total() int { return f.Waiting + f.Running }

// InFlightAt counts the requests that had arrived by at and had not ended
// (finished, been cancelled or been lost) by then; Running are those already
// scheduled and not waiting again after a preemption. It equals vLLM's
// num_requests_waiting and num_requests_running at that instant.
func (t Truth) InFlightAt(at time.Time) InFlight {
	var f InFlight
	for _, r := range t {
		if r.Arrival.After(at) || (!r.Finish.IsZero() && !r.Finish.After(at)) {
			continue
		}
		if !r.Scheduled.IsZero() && !r.Scheduled.After(at) && !r.preemptedAt(at) {
			f.Running++
			if !r.FirstToken.IsZero() && !r.FirstToken.After(at) {
				f.PastFirstToken++
			}
		} else {
			f.Waiting++
			if r.deferredAt(at) {
				f.Deferred++
			}
		}
	}
	return f
}

// ReadTruth reads JSON Lines written by WriteTruth.
func ReadTruth(r io.Reader) (Truth, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 256<<20)
	var out Truth
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var wr wireRequest
		if err := json.Unmarshal(b, &wr); err != nil {
			return nil, fmt.Errorf("read truth: line %d: %w", line, err)
		}
		if wr.Arrival.IsZero() {
			return nil, fmt.Errorf("read truth: line %d: missing arrival", line)
		}
		if len(wr.TokenOffsetsNS) > 0 {
			wr.TokenTimes = make([]time.Time, len(wr.TokenOffsetsNS))
			for j, off := range wr.TokenOffsetsNS {
				wr.TokenTimes[j] = wr.Arrival.Add(time.Duration(off))
			}
		}
		out = append(out, wr.Request)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("read truth: line %d longer than 256 MiB: %w", len(out)+1, err)
		}
		return nil, fmt.Errorf("read truth: %w", err)
	}
	return out, nil
}

// RestartOptions change what a restart brings.
type RestartOptions struct {
	// Buckets, when non-nil, is the bucket layout of the restarted server.
	Buckets *Buckets
}

// Restart models a vLLM process restart at the current virtual time: every
// counter and histogram starts again from zero with a new `_created`, and the
// running and waiting requests are lost (aborted in the truth, observed
// nowhere). Arrivals continue. A new bucket layout may be applied.
func (s *Sim) Restart(opts RestartOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if opts.Buckets != nil {
		if err := opts.Buckets.validate(); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		s.buckets = *opts.Buckets
	}
	s.restartNow()
	if s.cfg.DiscardTruth {
		s.reqs = slices.DeleteFunc(s.reqs, (*request).done)
	}
	return nil
}
