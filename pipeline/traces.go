package pipeline

import (
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/traces"
)

// exactWindow evaluates the spans of a window against the histogram window
// and its evaluation. Spans that named no model count for the target's model
// when it serves only one.
func (t *target) exactWindow(spec Spec, model string, w slo.Window, wr slo.WindowReport) (traces.Result, bool) {
	if spec.Traces == nil {
		return traces.Result{}, false
	}
	unnamed := len(t.hist.Models()) == 1
	sel := spec.Traces.Select(t.spec.Name, model, unnamed, w.Start, w.End)
	return traces.Evaluate(sel, w, wr, spec.SLOs, spec.Quantiles), true
}
