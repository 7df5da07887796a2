package alertquality

import (
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// trueLedger holds, in the order they ended, the requests of one model that
// an SLO's population counts and whether each met every objective, so that
// the true attainment of any window is two binary searches.
type trueLedger struct {
	finish []time.Time
	// badBefore[i] is the number of bad requests among finish[:i].
	badBefore []int
	goal      float64
}

// newTrueLedger scores every request of the truth that the SLO's population
// holds against it: the finished requests, each bad when it missed some
// objective, and with `abandoned: bad` the requests that got a first token
// and never finished (cancelled by their client or lost in a restart), bad,
// at the time they ended, as the daemon's population counts them, and with
// `rejected: bad` the requests turned away at admission, bad, at their
// arrival. A request cancelled before its first token is in no population.
func newTrueLedger(truth sim.Truth, s slo.SLO) *trueLedger {
	type scored struct {
		at  time.Time
		bad bool
	}
	var done []scored
	for _, r := range truth {
		switch {
		case r.Finished():
			done = append(done, scored{r.Finish, !meetsAll(r, s)})
		case unfinished(r) && s.Abandoned == slo.AbandonedBad:
			done = append(done, scored{r.Finish, true})
		case r.Rejected && s.Rejected == slo.RejectedBad:
			done = append(done, scored{r.Finish, true}) // turned away at its arrival
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].at.Before(done[j].at) })
	l := &trueLedger{goal: s.Goal, badBefore: make([]int, 1, len(done)+1)}
	for _, r := range done {
		bad := 0
		if r.bad {
			bad = 1
		}
		l.finish = append(l.finish, r.at)
		l.badBefore = append(l.badBefore, l.badBefore[len(l.badBefore)-1]+bad)
	}
	return l
}

// unfinished reports whether a request got its first token and ended
// without finishing: abandoned by its client or lost in a restart.
func unfinished(r sim.Request) bool {
	return !r.Finish.IsZero() && !r.FirstToken.IsZero() && (r.Cancelled || r.Aborted)
}

// meetsAll reports whether a finished request met every objective.
func meetsAll(r sim.Request, s slo.SLO) bool {
	for _, o := range s.Objectives {
		v, ok := r.Value(string(o.Metric))
		if !ok || v > o.Threshold*(1+1e-9) {
			return false
		}
	}
	return true
}

// burn is the true burn rate of the population's requests that ended in
// (from, to]: the bad share over the allowed bad share. ok is false when
// none did.
func (l *trueLedger) burn(from, to time.Time) (rate float64, requests int, ok bool) {
	i := upperIndex(l.finish, from)
	j := upperIndex(l.finish, to)
	n := j - i
	if n <= 0 {
		return 0, 0, false
	}
	bad := l.badBefore[j] - l.badBefore[i]
	return float64(bad) / float64(n) / (1 - l.goal), n, true
}

// upperIndex is the number of times in ts at or before t.
func upperIndex(ts []time.Time, t time.Time) int {
	i, found := slices.BinarySearchFunc(ts, t, func(a, b time.Time) int { return a.Compare(b) })
	for found && i < len(ts) && !ts[i].After(t) {
		i++
	}
	return i
}
