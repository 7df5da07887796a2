// Package simtruth reads the simulator's ground truth (sim.Truth) as the
// tests of many packages need it: the populations each vLLM histogram
// observes in a window, the requests that ended otherwise, the in-flight
// counts the gauges show, the knee of a constant-rate sweep (Knee). It is
// test harness: no product package imports it.
package simtruth

import (
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// ForModel returns the requests of one model.
func ForModel(t sim.Truth, name string) sim.Truth {
	var out sim.Truth
	for _, r := range t {
		if r.Model == name {
			out = append(out, r)
		}
	}
	return out
}

// in reports whether x happened in (from, to].
func in(x, from, to time.Time) bool { return !x.IsZero() && x.After(from) && !x.After(to) }

// FinishedIn returns the requests that finished (neither lost nor cancelled)
// in (from, to]: the population of the histograms observed at finish.
func FinishedIn(t sim.Truth, from, to time.Time) sim.Truth {
	return endedIn(t, from, to, sim.Request.Finished)
}

// AbandonedIn returns the requests cancelled by their clients after their
// first token, with the abort in (from, to]: counted in TTFT, never finished.
func AbandonedIn(t sim.Truth, from, to time.Time) sim.Truth {
	return endedIn(t, from, to, sim.Request.Abandoned)
}

// CancelledIn returns every request cancelled by its client in (from, to],
// before or after its first token.
func CancelledIn(t sim.Truth, from, to time.Time) sim.Truth {
	return endedIn(t, from, to, func(r sim.Request) bool { return r.Cancelled })
}

// RejectedIn returns the requests turned away at admission in (from, to].
func RejectedIn(t sim.Truth, from, to time.Time) sim.Truth {
	return endedIn(t, from, to, func(r sim.Request) bool { return r.Rejected })
}

// LostIn returns the requests lost in a restart in (from, to].
func LostIn(t sim.Truth, from, to time.Time) sim.Truth {
	return endedIn(t, from, to, func(r sim.Request) bool { return r.Aborted })
}

func endedIn(t sim.Truth, from, to time.Time, keep func(sim.Request) bool) sim.Truth {
	var out sim.Truth
	for _, r := range t {
		if keep(r) && in(r.Finish, from, to) {
			out = append(out, r)
		}
	}
	return out
}

// FirstTokenIn returns the requests whose first token came in (from, to]: the
// population of the TTFT histogram.
func FirstTokenIn(t sim.Truth, from, to time.Time) sim.Truth {
	var out sim.Truth
	for _, r := range t {
		if in(r.FirstToken, from, to) {
			out = append(out, r)
		}
	}
	return out
}

// ITLGaps returns, in seconds, every inter-token gap whose later token was
// produced in (from, to]: the observations of the ITL histogram.
func ITLGaps(t sim.Truth, from, to time.Time) []float64 {
	var out []float64
	for _, r := range t {
		for i := 1; i < len(r.TokenTimes); i++ {
			if in(r.TokenTimes[i], from, to) {
				out = append(out, float64(r.TokenTimes[i].Sub(r.TokenTimes[i-1]))/1e9)
			}
		}
	}
	return out
}

// TokensIn counts the output tokens produced in (from, to]: the increase of
// vllm:generation_tokens_total (when no restart lies in between).
func TokensIn(t sim.Truth, from, to time.Time) int {
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
func InFlightAt(t sim.Truth, at time.Time) InFlight {
	var f InFlight
	for _, r := range t {
		if r.Arrival.After(at) || (!r.Finish.IsZero() && !r.Finish.After(at)) {
			continue
		}
		if !r.Scheduled.IsZero() && !r.Scheduled.After(at) && !preemptedAt(r, at) {
			f.Running++
			if !r.FirstToken.IsZero() && !r.FirstToken.After(at) {
				f.PastFirstToken++
			}
		} else {
			f.Waiting++
			if deferredAt(r, at) {
				f.Deferred++
			}
		}
	}
	return f
}

// holds reports whether at lies in the span.
func holds(s sim.Span, at time.Time) bool {
	return !at.Before(s.From) && (s.To.IsZero() || at.Before(s.To))
}

// deferredAt reports whether the request was deferred at at.
func deferredAt(r sim.Request, at time.Time) bool {
	return r.Deferred && (r.DeferredUntil.IsZero() || at.Before(r.DeferredUntil))
}

// preemptedAt reports whether the request waited after a preemption at at.
func preemptedAt(r sim.Request, at time.Time) bool {
	return slices.ContainsFunc(r.Preemptions, func(s sim.Span) bool { return holds(s, at) })
}
