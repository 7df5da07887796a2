package sim

import (
	"errors"
	"fmt"
	"time"
)

// ScheduledRestart is a vLLM process restart that is part of a Config, so that
// a preset can carry it: at At (after the sim's Start) the process dies, every
// running and waiting request is lost (aborted in the truth, observed nowhere)
// and every counter and histogram is gone. For Down the server is down:
// /metrics refuses connections (Serving is false) and arriving requests are
// refused at the door (they never reach vLLM and are not in the truth). At
// At+Down a new process starts, with counters from zero and `_created` at that
// instant. Down 0 is an instant restart.
type ScheduledRestart struct {
	// At is when the process dies, measured from the sim's Start (> 0).
	At time.Duration
	// Down is how long /metrics and the API refuse connections (>= 0).
	Down time.Duration
	// Buckets, when non-nil, is the bucket layout of the new process.
	Buckets *Buckets
}

// lifeEvent is a crash or a recovery at a virtual time.
type lifeEvent struct {
	at      int64
	crash   bool
	buckets *Buckets // the new layout, on a recovery
}

// lifeEvents lists the crashes and recoveries of validated restarts in time order.
func lifeEvents(rs []ScheduledRestart) []lifeEvent {
	var out []lifeEvent
	for _, r := range rs {
		out = append(out,
			lifeEvent{at: int64(r.At), crash: true},
			lifeEvent{at: int64(r.At + r.Down), buckets: r.Buckets})
	}
	return out
}

func validateRestarts(rs []ScheduledRestart) error {
	var prevEnd time.Duration
	for i, r := range rs {
		if r.At <= 0 || r.Down < 0 {
			return fmt.Errorf("restart %d: at %v down %v, want at > 0 and down >= 0", i, r.At, r.Down)
		}
		if i > 0 && r.At <= prevEnd {
			return fmt.Errorf("restart %d at %v: not after the previous one's recovery at %v", i, r.At, prevEnd)
		}
		if r.Buckets != nil {
			if err := r.Buckets.validate(); err != nil {
				return fmt.Errorf("restart %d: %w", i, err)
			}
		}
		prevEnd = r.At + r.Down
	}
	return nil
}

// apply carries out a crash or a recovery at the current virtual time.
func (s *Sim) apply(ev lifeEvent) {
	if ev.crash {
		s.restartNow()
		s.down = true
		return
	}
	if ev.buckets != nil {
		s.buckets = *ev.buckets
		for _, m := range s.models {
			m.layout = s.buckets.resolve(m.cfg.MaxModelLen)
			for _, e := range m.engines {
				e.met = newEngineMetrics(m.layout)
			}
		}
	}
	s.created = s.now
	s.down = false
}

// Serving reports whether the server answers at the current virtual time:
// false during the Down of a ScheduledRestart. A harness that reads
// Exposition directly should treat a scrape while not serving as failed
// (the exposition then shows an empty, freshly zeroed process).
func (s *Sim) Serving() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.down
}

// errRefused is what the Handler reports when it cannot drop the connection.
var errRefused = errors.New("simulated vLLM is down")
