package pipeline

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/traces"
)

// evaluateWindow evaluates the window of the given length ending at the last
// scrape at or before now, from the histograms. With a trace store, it also
// evaluates the spans of the window ending at the last scrape at or before
// now − TraceDelay (spans arrive in batches, after the counters move); when
// the spans cover that window fully, the window's report is that window's,
// with the exact numbers in place of the estimates. The trace result, when
// any, says which window it describes. ok is false when the history holds
// no such window.
func (t *target) evaluateWindow(spec Spec, model string, now time.Time, length time.Duration, opts slo.Options) (wr slo.WindowReport, exact *traces.Result, ok bool) {
	w, wr, ok := t.plainWindow(spec, model, now, length, opts)
	if !ok {
		return wr, nil, false
	}
	at := now
	if spec.Traces != nil {
		lagged, lw, lwr := now.Add(-spec.TraceDelay), w, wr
		found := true
		if spec.TraceDelay > 0 {
			lw, lwr, found = t.plainWindow(spec, model, lagged, length, opts)
		}
		if found {
			res := t.exactWindow(spec, model, lw, lwr)
			exact = &res
			if res.Covered {
				wr, at = lwr, lagged
				res.Apply(&wr)
			}
		}
	}
	if t.spec.Warmup > 0 {
		// SLO results only from the warm-up-free window (the spans' window
		// includes the warm-up, so it never replaces these).
		wr.SLOs = nil
		if ww, ok := t.hist.Window(model, at, length, t.windowOptions(true)); ok {
			wr.SLOs = slo.EvaluateWindow(ww, spec.SLOs, slo.Options{}).SLOs
			t.overlayAll(spec, model, wr.SLOs, ww)
		}
	}
	return wr, exact, true
}

// plainWindow is the history window ending at the last scrape at or before
// at, and its evaluation from the histograms (the joint of each SLO from the
// ledger, over the same window).
func (t *target) plainWindow(spec Spec, model string, at time.Time, length time.Duration, opts slo.Options) (slo.Window, slo.WindowReport, bool) {
	w, ok := t.hist.Window(model, at, length, t.windowOptions(false))
	if !ok {
		return slo.Window{}, slo.WindowReport{}, false
	}
	w.Nominal = length
	wr := slo.EvaluateWindow(w, spec.SLOs, opts)
	t.overlayAll(spec, model, wr.SLOs, w)
	return w, wr, true
}

// exactWindow evaluates the spans of a window against the histogram window
// and its evaluation. Spans that named no model count for the target's model
// when it serves only one.
func (t *target) exactWindow(spec Spec, model string, w slo.Window, wr slo.WindowReport) traces.Result {
	unnamed := len(t.hist.Models()) == 1
	sel := spec.Traces.Select(t.spec.Name, model, unnamed, w.Start, w.End)
	return traces.Evaluate(sel, w, wr, spec.SLOs, spec.Quantiles)
}
