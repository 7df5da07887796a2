// Package replay feeds a recording of scrapes (package recording) to a
// pipeline exactly as the daemon feeds live ones, at the recorded times, and
// tallies what it made of the recording's entries. The replay and report
// commands use it; the pipeline itself knows snapshots, not recordings.
//
// It never reads a clock (time comes from the recording) and never writes
// the recording.
package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// Ingest feeds one recorded scrape to p exactly as the daemon feeds a live
// one, with the recorded time. A recorded failure or an exposition that does
// not parse is counted as a failure of the target and returned; an entry of
// a target p is not configured with returns pipeline.ErrUnknownTarget.
func Ingest(p *pipeline.Pipeline, e recording.Entry) error {
	profile, err := p.Profile(e.Target)
	if err != nil {
		return err
	}
	if e.Error != "" {
		err := errors.New(e.Error)
		p.RecordFailure(e.Target, "recorded_error", err, e.Time, 0)
		return err
	}
	snap, err := scrape.Parse([]byte(e.Body), e.ContentType, profile, e.Time)
	if err != nil {
		p.RecordFailure(e.Target, scrape.FailureReason(err), err, e.Time, 0)
		return err
	}
	return p.Ingest(e.Target, snap, 0)
}

// Use tallies what Ingest made of a recording's entries, so that a replay
// can tell a recording it used from one whose targets the configuration does
// not name (which would otherwise print nothing and warn at every line).
type Use struct {
	// Used counts entries of configured targets, failed scrapes included.
	Used int
	// Unknown counts entries per target name the configuration lacks.
	Unknown map[string]int
}

// Add counts one entry of target by the error Ingest returned for it. It
// reports whether the entry was of a configured target; entries of others
// are not worth a warning each (Err names them once).
func (u *Use) Add(target string, err error) bool {
	if errors.Is(err, pipeline.ErrUnknownTarget) {
		if u.Unknown == nil {
			u.Unknown = make(map[string]int)
		}
		u.Unknown[target]++
		return false
	}
	u.Used++
	return true
}

// Err is nil when some entry was of a configured target; otherwise it names
// the recording's targets and the configured ones, so the mismatch is plain.
func (u Use) Err(configured []string) error {
	if u.Used > 0 {
		return nil
	}
	if len(u.Unknown) == 0 {
		return errors.New("the recording holds no scrape")
	}
	return fmt.Errorf("the configuration names none of the recording's targets (recording: %q; configuration: %q): the targets[].name of the configuration must be the --target the recording was made with",
		slices.Sorted(maps.Keys(u.Unknown)), configured)
}
