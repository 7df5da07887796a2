package alertquality

import (
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// trueLedger holds, in finish order, the finished requests of one model and
// whether each met every objective of an SLO, so that the true attainment of
// any window is two binary searches.
type trueLedger struct {
	finish []time.Time
	// badBefore[i] is the number of bad requests among finish[:i].
	badBefore []int
	goal      float64
}

// newTrueLedger scores every finished request of the truth against an SLO.
// Only finished requests count, as in the daemon's joint attainment: a
// request lost in a restart or cancelled by its client has no finish
// observation in vLLM's histograms and no finish in its true record either.
func newTrueLedger(truth sim.Truth, s slo.SLO) *trueLedger {
	var done []sim.Request
	for _, r := range truth {
		if r.Finished() {
			done = append(done, r)
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].Finish.Before(done[j].Finish) })
	l := &trueLedger{goal: s.Goal, badBefore: make([]int, 1, len(done)+1)}
	for _, r := range done {
		bad := 0
		if !meetsAll(r, s) {
			bad = 1
		}
		l.finish = append(l.finish, r.Finish)
		l.badBefore = append(l.badBefore, l.badBefore[len(l.badBefore)-1]+bad)
	}
	return l
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

// burn is the true burn rate of the requests that finished in (from, to]:
// the bad share over the allowed bad share. ok is false when none finished.
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
