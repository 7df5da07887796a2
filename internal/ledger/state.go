package ledger

import (
	"fmt"
	"math"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// State is the state-file form of a ledger (gob needs exported fields; the
// field names are the format, so they never change). Times are Unix
// nanoseconds.
type State struct {
	// SLOs is sloTexts of the SLOs the sums were kept for: a ledger is
	// restored only under the same list.
	SLOs      []string
	Seg       int
	Intervals []intervalState
	Points    []checkpointState
	// Spans and Pending are the intervals waiting for their spans
	// (exact.go); absent in states written before exact intervals.
	Spans   bool
	Pending []pendingState
}

type (
	intervalState struct {
		Start, End    int64
		Seg           int
		Restarted     bool
		InFlightStart float64
		Sources       []sourceState
		Counted       bool
		Judged        []judgedState
		// ReachStart and ReachOlder are how far back the interval's
		// finishers can reach; a state without them (zero) reaches back
		// beyond every kept interval, which only loosens a bound.
		ReachStart int64
		ReachOlder bool
	}
	judgedState struct {
		N, FinLo, FinHi, TTFTLo, TTFTHi float64
		Unknown                         bool
		Tokens                          slo.TokenCurve
		HasTokens                       bool
	}
	sourceState struct {
		Start, End                             int64
		FirstTokens, Bad, Good, GoodEst        float64
		InFlightEnd, InFlightGood, InFlightBad float64
		HasSplit                               bool
	}
	checkpointState struct {
		T                                     int64
		Seg                                   int
		FirstTokens, Finished, FinishedTokens float64
		// QLittle is the estimate of the requests past their first token
		// in flight (checkpoint.qEst; the name is kept so that states that
		// held the former Little's-law estimate still load).
		QLo, QHi, QLittle float64
		Boundary          bool
		SLOs              []sloSumsState
		// Exact holds per SLO the running sums over the intervals the
		// spans covered; absent before the first.
		Exact []exactSumsState
		// Objective is the per-objective running sums of exact mode
		// (exact_objectives.go, objLayout), flat; absent in states written
		// before them or without spans.
		Objective []float64
	}
	exactSumsState struct {
		N, SpanLo, SpanHi, SpanEst, HistLo, HistHi, HistEst float64
		TokSpanLo, TokSpanHi, TokSpanEst                    float64
		TokHistLo, TokHistHi, TokHistEst                    float64
	}
	pendingState struct {
		Start, End        int64
		Finished, Success float64
		SLOs              []pendingSLOState
	}
	pendingSLOState struct {
		Known, TokKnown      bool
		Lo, Hi, Est          float64
		TokLo, TokHi, TokEst float64
		// Obj is the interval's per-objective bounds (pendingSLO.obj);
		// absent in states written before them.
		Obj []float64
	}
	sloSumsState struct {
		Finished, Lo, Hi, Est, TokLo, TokHi, TokEst float64
		CLo, CHi                                    float64
		Unknown, TokensUnknown                      uint32
		UnknownMask                                 uint8
	}
)

// sloTexts lists the name and objectives of each SLO, in order: what a
// ledger's sums depend on (a new goal or abandoned setting keeps them).
func sloTexts(slos []slo.SLO) []string {
	out := make([]string, len(slos))
	for i, s := range slos {
		out[i] = s.Name + " " + fmt.Sprint(s.Objectives)
	}
	return out
}

// nanos converts a time to Unix ns, the zero time to 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf converts Unix ns back, 0 to the zero time.
func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// State copies the ledger into its state-file form.
func (l *Ledger) State() State {
	st := State{SLOs: sloTexts(l.slos), Seg: l.seg}
	for _, iv := range l.intervals {
		is := intervalState{Start: nanos(iv.start), End: nanos(iv.end), Seg: iv.seg, Restarted: iv.restarted, InFlightStart: iv.inFlightStart, Counted: iv.counted, ReachStart: iv.reachStart, ReachOlder: iv.reachOlder}
		for _, j := range iv.judged {
			is.Judged = append(is.Judged, judgedState{N: j.n, FinLo: j.finLo, FinHi: j.finHi, TTFTLo: j.ttftLo, TTFTHi: j.ttftHi, Unknown: j.unknown, Tokens: j.tokens, HasTokens: j.hasTokens})
		}
		for _, s := range iv.sources {
			is.Sources = append(is.Sources, sourceState{
				Start: nanos(s.Start), End: nanos(s.End), FirstTokens: s.FirstTokens, Bad: s.Bad, Good: s.Good, GoodEst: s.GoodEst,
				InFlightEnd: s.InFlightEnd, InFlightGood: s.InFlightGood, InFlightBad: s.InFlightBad, HasSplit: s.HasSplit,
			})
		}
		st.Intervals = append(st.Intervals, is)
	}
	for _, p := range l.points {
		ps := checkpointState{T: p.t, Seg: int(p.seg), FirstTokens: p.firstTokens, Finished: p.finished, FinishedTokens: p.finishedTokens, QLo: p.qLo, QHi: p.qHi, QLittle: p.qEst, Boundary: p.boundary}
		for i := range l.slos {
			s := p.sum(i)
			ss := sloSumsState{Finished: s.finished, Lo: s.lo, Hi: s.hi, Est: s.est, TokLo: s.tokLo, TokHi: s.tokHi, TokEst: s.tokEst, CLo: s.cLo, CHi: s.cHi, Unknown: s.unknown, TokensUnknown: s.tokensUnknown, UnknownMask: s.unknownMask}
			ps.SLOs = append(ps.SLOs, ss)
		}
		ps.Exact = exactState(&p)
		if p.more != nil {
			ps.Objective = cloneObjective(p.more.objective)
		}
		st.Points = append(st.Points, ps)
	}
	st.Spans, st.Pending = l.spans, pendingStates(l.pending)
	return st
}

// Restore rebuilds a ledger for slos from its state; it refuses a state kept
// for other SLOs or whose shape does not fit them.
func Restore(st State, slos []slo.SLO) (*Ledger, error) {
	want := sloTexts(slos)
	if len(st.SLOs) != len(want) {
		return nil, fmt.Errorf("ledger kept for %d SLOs, %d configured", len(st.SLOs), len(want))
	}
	for i := range want {
		if st.SLOs[i] != want[i] {
			return nil, fmt.Errorf("ledger kept for SLO %q, now %q", st.SLOs[i], want[i])
		}
	}
	l := New(slos)
	l.seg = st.Seg
	for _, is := range st.Intervals {
		if len(is.Sources) != len(slos) || len(is.Judged) != len(slos) {
			return nil, fmt.Errorf("interval with %d sources and %d results for %d SLOs", len(is.Sources), len(is.Judged), len(slos))
		}
		iv := interval{start: timeOf(is.Start), end: timeOf(is.End), seg: is.Seg, restarted: is.Restarted, inFlightStart: is.InFlightStart, counted: is.Counted, reachStart: is.ReachStart, reachOlder: is.ReachOlder || is.ReachStart == 0}
		for _, j := range is.Judged {
			iv.judged = append(iv.judged, judged{n: j.N, finLo: j.FinLo, finHi: j.FinHi, ttftLo: j.TTFTLo, ttftHi: j.TTFTHi, unknown: j.Unknown, tokens: j.Tokens, hasTokens: j.HasTokens})
		}
		for _, s := range is.Sources {
			iv.sources = append(iv.sources, slo.Source{
				Start: timeOf(s.Start), End: timeOf(s.End), FirstTokens: s.FirstTokens, Bad: s.Bad, Good: s.Good, GoodEst: s.GoodEst,
				InFlightEnd: s.InFlightEnd, InFlightGood: s.InFlightGood, InFlightBad: s.InFlightBad, HasSplit: s.HasSplit,
			})
		}
		l.intervals = append(l.intervals, iv)
	}
	var last int64 = math.MinInt64
	for _, ps := range st.Points {
		if len(ps.SLOs) != len(slos) || ps.T <= last {
			return nil, fmt.Errorf("checkpoint at %d: %d SLO sums for %d SLOs, or out of order", ps.T, len(ps.SLOs), len(slos))
		}
		last = ps.T
		p := newCheckpoint(ps.T, ps.Seg, len(slos))
		p.firstTokens, p.finished, p.finishedTokens, p.qLo, p.qHi, p.qEst = ps.FirstTokens, ps.Finished, ps.FinishedTokens, ps.QLo, ps.QHi, ps.QLittle
		p.boundary = ps.Boundary
		for k, ss := range ps.SLOs {
			s := sloSums{finished: ss.Finished, lo: ss.Lo, hi: ss.Hi, est: ss.Est, tokLo: ss.TokLo, tokHi: ss.TokHi, tokEst: ss.TokEst, cLo: ss.CLo, cHi: ss.CHi, unknown: ss.Unknown, tokensUnknown: ss.TokensUnknown, unknownMask: ss.UnknownMask}
			*p.sum(k) = s
		}
		if err := restoreExact(&p, ps.Exact, len(slos)); err != nil {
			return nil, err
		}
		if err := restoreObjective(&p, ps.Objective, slos); err != nil {
			return nil, err
		}
		l.points = append(l.points, p)
	}
	l.spans = st.Spans
	pend, err := restorePending(st.Pending, slos)
	if err != nil {
		return nil, err
	}
	l.pending = pend
	return l, nil
}
