package store

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// WindowEdges decides a window's edges: which scrapes the window of a
// model ending at end and length long, [end − length, end], runs between,
// and so which scrape intervals it covers. End is the newest scrape of the
// model at or before end; Start the newest at or before end − length, or
// the oldest the history holds when it is shorter, or, when the scrape
// after that one came more than Config.MaxGap later (failed scrapes, a
// clock jump), the first scrape after the gap, since the increase over a
// gap cannot be split at the window's start. The window holds the
// intervals between Start and End, whole: Start and End say how much of
// the nominal length it covers. A window starts no earlier than the
// model's ledger's oldest checkpoint (a ledger begun after the history, as
// after a reconfiguration that changed the SLOs), so that the ledger holds
// a checkpoint at both edges too. ok is false when the model is unknown or
// the window holds no whole interval.
//
// Every part of a window asks it, so that all of them cover the same
// scrape intervals: the history's increases, counts and gauges (Counts) and
// the ledger's joints over the intervals (Joints), which "all", goodput,
// the abandoned requests, the burn rate and the budget come from.
func (s *Store) WindowEdges(model string, end time.Time, length time.Duration) (history.Edges, bool) {
	opts := history.Options{MaxGap: s.cfg.MaxGap}
	if l := s.ledgers[model]; l != nil {
		opts.NotBefore, _ = l.Since()
	}
	return s.hist.Edges(model, end, length, opts)
}

// Counts is what the history says happened to a model between the edges e
// (WindowEdges, with no append since): every histogram's and counter's
// increase and the gauges; with warm set, the warm-up after each restart
// left out of the increases (Config.Warmup).
func (s *Store) Counts(model string, e history.Edges, warm bool) (slo.Window, bool) {
	var warmup time.Duration
	if warm {
		warmup = s.cfg.Warmup
	}
	return s.hist.WindowAt(model, e, warmup)
}

// Joints are the ledger's joints of every SLO of slos (the caller's, which
// is the store's list unless a reconfiguration came in between: a ledger
// is kept only for SLOs of the same names and objectives, in the same
// order) with a per-request objective over the scrape intervals between
// the edges e (nil entries where the ledger has none), in the memory of
// sc; from the histograms alone when histograms is set. With exact set,
// unless histograms is, each carries the ledger's per-objective sums of
// exact and bounded intervals (ledger.Ledger.Objectives), which narrow the
// window's per-objective counts (slo.Joint.Objectives).
//
// A model whose latest scrape observes TTFT at the request's finish
// (scrape.ModelSample.TTFTAtFinish) gets none: the ledger counts first
// tokens and abandoned streams from TTFT observed at the first token, and
// on such a server it can bound "all" away from the truth, so "all",
// goodput, the burn rate and the abandoned requests are left unknown rather
// than wrong (docs/engines.md), and the objectives are not narrowed.
func (s *Store) Joints(model string, e history.Edges, slos []slo.SLO, histograms, exact bool, sc *ledger.Scratch) []*slo.Joint {
	out := make([]*slo.Joint, len(slos))
	l := s.ledgers[model]
	if l == nil {
		return out
	}
	if _, ms, ok := s.hist.Latest(model); ok && ms.TTFTAtFinish {
		return out
	}
	for i, sl := range slos {
		if !slo.HasPerRequestObjective(sl) {
			continue
		}
		j, ok := l.WindowIn(i, e.Start, e.End, !histograms, sc)
		if !ok {
			continue
		}
		if !histograms && exact {
			if goods, n, ok := l.Objectives(i, e.Start, e.End); ok && n == j.Finished {
				j.Objectives = goods
			}
		}
		out[i] = &j
	}
	return out
}

// SpansCoverage is the share of SLO i's finished requests between the
// edges e whose scrape interval the spans covered (exact mode); ok is false
// when the ledger has no such requests.
func (s *Store) SpansCoverage(model string, i int, e history.Edges) (float64, bool) {
	l := s.ledgers[model]
	if l == nil || i < 0 {
		return 0, false
	}
	c, n, ok := l.Covered(i, e.Start, e.End)
	return c / n, ok && n > 0
}
