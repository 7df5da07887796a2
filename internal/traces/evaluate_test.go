package traces

import (
	"maps"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Evaluate evaluates a Selection of one window's records as rows, against
// the histogram window w and its evaluation hist (see reconcile): the
// reference that the store's EvaluateWindow, reading sealed columns, must
// equal bit for bit.
func Evaluate(sel Selection, w slo.Window, hist slo.WindowReport, slos []slo.SLO, quantiles []float64) Result {
	res, ok := reconcile(len(sel.All), sel.FinishReasons, w, hist)
	if !ok {
		return res
	}
	secs := w.Seconds()
	exact := slo.EvaluateMeasured(sel.All, secs, slos, quantiles)
	names := slices.Sorted(maps.Keys(sel.Adapters))
	return res.judged(exact, hist, slos, names, func(name string) (slo.MeasuredReport, float64) {
		return slo.EvaluateMeasured(sel.Adapters[name], secs, slos, quantiles), float64(len(sel.Adapters[name])) / float64(len(sel.All))
	})
}
