package pipeline

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// regular evaluates the window of the given length ending at the last
// scrape at or before now, from the histograms. With a trace store, it also
// evaluates the spans of the window ending at the last scrape at or before
// now − TraceDelay (spans arrive in batches, after the counters move); when
// the spans cover that window fully, the window's report is that window's,
// with the exact numbers in place of the estimates. The trace result, when
// any, says which window it describes. ok is false when the history holds
// no such window.
func (p *pass) regular(length time.Duration) (wr slo.WindowReport, exact *traces.Result, ok bool) {
	e := p.window(p.now, length, false, true)
	if !e.ok {
		return slo.WindowReport{}, nil, false
	}
	wr = e.rep
	at := p.now
	if p.spec.Traces != nil {
		lagged := p.now.Add(-p.spec.TraceDelay)
		le := p.windowOf(passKey{end: lagged, length: length, histograms: true}, true)
		if le.ok {
			res := p.exactWindow(le.w, le.rep)
			exact = &res
			if res.Covered {
				// The pass shares le's evaluation with the alerts' windows:
				// the exact numbers go into a copy of its own.
				wr, at = le.rep.Clone(), lagged
				res.Apply(&wr)
			}
		}
	}
	if p.t.spec.Warmup > 0 {
		// SLO results only from the warm-up-free window (the spans' window
		// includes the warm-up, so it never replaces these).
		wr.SLOs = nil
		if we := p.window(at, length, true, false); we.ok {
			wr.SLOs = we.rep.SLOs
		}
	}
	return wr, exact, true
}

// exactWindow evaluates the spans of a window against the histogram window
// and its evaluation. Spans that named no model count for the target's model
// when it serves only one.
func (p *pass) exactWindow(w slo.Window, wr slo.WindowReport) traces.Result {
	unnamed := len(p.t.store.Models()) == 1
	return p.spec.Traces.EvaluateWindow(p.t.spec.Name, p.model, unnamed, w, wr, p.spec.SLOs, p.spec.Quantiles)
}

// settleSpans settles each ledger's scrape intervals against the spans
// (traces.Store.Settle) and adds their good requests, of "all" and of each
// per-request objective, to the store's running totals.
func (t *target) settleSpans(spec Spec, now time.Time) {
	ready := now.Add(-spec.TraceDelay)
	for _, sl := range t.store.SpanLedgers() {
		goods := spec.Traces.Settle(t.spec.Name, sl.Model, sl.Unnamed, sl.Ledger, spec.SLOs, ready, spec.TraceLateness)
		settled := make([]store.Settled, 0, len(goods))
		for _, g := range goods {
			settled = append(settled, store.Settled{SLO: g.SLO, Objective: g.Objective, Good: g.Good})
		}
		t.store.AddSettled(sl.Model, settled)
	}
}
