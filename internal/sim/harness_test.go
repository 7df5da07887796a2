package sim

// The sim's tests (package sim_test) read and drive the sim with methods the
// daemon and the commands do not need: its config and clock, a step of
// virtual time, a restart at the current instant (the same as a
// ScheduledRestart then, which TestScheduledRestartMatchesRestart checks);
// and read back what WriteTruth wrote (ReadTruth).

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
