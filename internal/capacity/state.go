package capacity

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// LearnerState is what a Learner keeps across a restart: its closed
// windows, the open one, and why and since when it learns. The Config is
// not part of it: the restoring side knows its own.
type LearnerState struct {
	Windows []Window
	Open    Window
	Reason  string
	ResetAt time.Time
}

// State copies what survives a restart.
func (l *Learner) State() LearnerState {
	return LearnerState{Windows: slices.Clone(l.windows), Open: l.open, Reason: l.reason, ResetAt: l.resetAt}
}

// maxReasonLen bounds the reason a restored learner repeats in every
// estimate: the longest one written is well under 100 bytes.
const maxReasonLen = 1024

// RestoreLearner rebuilds a learner under cfg from st. A state read from
// outside is refused, with the first fault named, unless its windows are
// in time order and disjoint, each ends after it starts and no later than
// the open window begins, and every count in them is finite and not
// negative with good bounds in order; it also refuses more windows than cfg
// can hold (History / (Window/2), the shortest window kept being half the
// length). Windows past cfg.History of the newest are dropped, as Add
// would have dropped them.
func RestoreLearner(cfg Config, st LearnerState) (*Learner, error) {
	if cfg.Window > 0 {
		if limit := int(cfg.History/(cfg.Window/2)) + 1; len(st.Windows) > limit {
			return nil, fmt.Errorf("capacity learner: %d windows, at most %d fit in %v of %v windows", len(st.Windows), limit, cfg.History, cfg.Window)
		}
	}
	if len(st.Reason) > maxReasonLen {
		return nil, fmt.Errorf("capacity learner: reason of %d bytes, at most %d", len(st.Reason), maxReasonLen)
	}
	var prevEnd time.Time
	for k, w := range st.Windows {
		if err := w.check(); err != nil {
			return nil, fmt.Errorf("capacity learner: window %d: %w", k, err)
		}
		if k > 0 && w.Start.Before(prevEnd) {
			return nil, fmt.Errorf("capacity learner: window %d starts at %v, before the previous one ends (%v)", k, w.Start, prevEnd)
		}
		prevEnd = w.End
	}
	if !st.Open.Start.IsZero() {
		if err := st.Open.check(); err != nil {
			return nil, fmt.Errorf("capacity learner: open window: %w", err)
		}
		if st.Open.Start.Before(prevEnd) {
			return nil, fmt.Errorf("capacity learner: open window starts at %v, before the last closed one ends (%v)", st.Open.Start, prevEnd)
		}
	}
	l := &Learner{cfg: cfg, windows: slices.Clone(st.Windows), open: st.Open, reason: st.Reason, resetAt: st.ResetAt}
	if n := len(l.windows); n > 0 {
		cut := 0
		for cut < n && l.windows[cut].End.Before(l.windows[n-1].End.Add(-cfg.History)) {
			cut++
		}
		l.windows = l.windows[cut:]
	}
	return l, nil
}

// check reports the first fault of a window read from outside.
func (w Window) check() error {
	if !w.End.After(w.Start) {
		return fmt.Errorf("ends at %v, not after its start %v", w.End, w.Start)
	}
	counts := []struct {
		name string
		v    float64
	}{
		{"arrivals", w.Arrivals}, {"waiting at start", w.WaitingStart}, {"waiting at end", w.WaitingEnd},
		{"finished", w.Finished}, {"good lower", w.Good.Lower}, {"good estimate", w.Good.Estimate}, {"good upper", w.Good.Upper},
		{"in flight", w.InFlight}, {"generated tokens", w.GeneratedTokens}, {"prompt tokens", w.PromptTokens},
		{"output tokens", w.OutputTokens}, {"TTFT sum", w.TTFT.Sum}, {"TTFT count", w.TTFT.Count},
		{"TPOT sum", w.TPOT.Sum}, {"TPOT count", w.TPOT.Count}, {"recent load", w.Recent},
	}
	for _, c := range counts {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			return fmt.Errorf("%s is %v", c.name, c.v)
		}
	}
	if w.Good.Lower > w.Good.Upper {
		return fmt.Errorf("good lower %v above good upper %v", w.Good.Lower, w.Good.Upper)
	}
	return nil
}
