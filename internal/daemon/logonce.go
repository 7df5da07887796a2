package daemon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// logKey is what makes two scrape failures "the same" for the log: the
// failure reason and the message with every run of digits replaced by '#'.
// A persisting fault whose text carries an ephemeral port ("127.0.0.1:54321
// -> ...: connection reset by peer") or live counts ("count 1234 below
// 1240") then keys alike from one scrape to the next, and is logged once;
// a fault that changes its nature (another reason, another family, another
// word) keys differently and is logged again.
func logKey(err error) string {
	if err == nil {
		return ""
	}
	return scrape.FailureReason(err) + "\x00" + maskDigits(err.Error())
}

// maskDigits replaces every run of ASCII digits in s by one '#'.
func maskDigits(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inDigits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			if !inDigits {
				b.WriteByte('#')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteByte(c)
	}
	return b.String()
}

// rejectionKey names which families of which models a good scrape left out
// and why, without the parse errors' line numbers and counts: the same
// broken family of the same model keys alike at every scrape. "" when the
// scrape left nothing out.
func rejectionKey(snap *scrape.Snapshot) string {
	if snap == nil || len(snap.Rejected) == 0 {
		return ""
	}
	keys := make([]string, 0, len(snap.Rejected))
	for _, r := range snap.Rejected {
		reason := ""
		if r.Err != nil {
			reason = r.Err.Reason
		}
		keys = append(keys, fmt.Sprintf("%s\x00%s\x00%s", r.Family, r.Model, reason))
	}
	slices.Sort(keys)
	return strings.Join(slices.Compact(keys), "\x01")
}

// loggedTarget is what the log last said of a target's state, so each change
// is logged once rather than at every evaluation.
type loggedTarget struct {
	// dropping: its history has dropped points for its memory limit.
	dropping bool
	// nothingFound: its last good scrape had none of the profile's families.
	nothingFound bool
}

// logTargetStates logs, once per change, a target whose history starts
// dropping points to stay within its memory limit, and a target on which
// the profile finds none of its families (wrong profile, wrong port, or
// vLLM started with --disable-log-stats). d.evalMu must be held.
func (d *Daemon) logTargetStates(rep *pipeline.Report) {
	for _, t := range rep.Targets {
		was := d.logged[t.Name]
		now := loggedTarget{
			dropping:     t.History.DroppedPoints > 0,
			nothingFound: t.Up && len(t.Found) == 0 && len(t.Missing) > 0,
		}
		if now.dropping && !was.dropping {
			d.logger.Warn("history over its memory limit: oldest points dropped, long windows shortened",
				"target", t.Name, "bytes", t.History.Bytes, "limit", t.History.Limit, "dropped_points", t.History.DroppedPoints)
		}
		switch {
		case now.nothingFound && !was.nothingFound:
			d.logger.Warn("the target serves none of its profile's families; no SLO series for it",
				"target", t.Name, "missing", t.Missing)
		case !now.nothingFound && was.nothingFound && t.Up:
			d.logger.Info("the target serves its profile's families again", "target", t.Name)
		}
		d.logged[t.Name] = now
	}
}
