package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrUnknownTarget is returned for a target name the spec does not hold,
// such as a recorded scrape of a target the configuration does not name.
var ErrUnknownTarget = errors.New("unknown target")

// RecordedUse tallies what IngestRecorded made of a recording's entries, so
// that a replay can tell a recording it used from one whose targets the
// configuration does not name (which would otherwise print nothing and
// warn at every line).
type RecordedUse struct {
	// Used counts entries of configured targets, failed scrapes included.
	Used int
	// Unknown counts entries per target name the configuration lacks.
	Unknown map[string]int
}

// Add counts one entry of target by the error IngestRecorded returned for it.
// It reports whether the entry was of a configured target; entries of others
// are not worth a warning each (Err names them once).
func (u *RecordedUse) Add(target string, err error) bool {
	if errors.Is(err, ErrUnknownTarget) {
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
func (u RecordedUse) Err(configured []string) error {
	if u.Used > 0 {
		return nil
	}
	if len(u.Unknown) == 0 {
		return errors.New("the recording holds no scrape")
	}
	return fmt.Errorf("the configuration names none of the recording's targets (recording: %q; configuration: %q): the targets[].name of the configuration must be the --target the recording was made with",
		slices.Sorted(maps.Keys(u.Unknown)), configured)
}
