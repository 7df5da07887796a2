package rules

import (
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// exactCounts rewrites an objective's windowed request and good counts as
// sums of the ledger's per-interval changes, when the ledger records them
// (every per-request objective; ITL is not in the ledger and keeps
// increase()).
//
// increase() is where the engines part: Prometheus extrapolates the change
// between the first and last samples inside the range to the range's edges,
// VictoriaMetrics (MetricsQL) does not extrapolate and starts from the last
// sample before the range. Over complete data their ratios agree, but across
// failed scrapes the two count different intervals, and the observed burn
// rate the alerts need differed by up to 0.6 on a 1m window. The per-interval
// changes are exact counter differences, so their sum over a window is the
// same number on both engines (and the requests the window's evaluations
// saw, no more).
func (lp ledgerPlan) exactCounts(requests, good Rule, p objectivePlan, w model.Duration) (Rule, Rule) {
	switch p.obj.Metric {
	case slo.ITL:
		return requests, good
	case slo.TTFT:
		requests.Expr = lp.sumOver(recIntFirst, "", w)
		good.Expr = lp.sumOver(recIntTTFTGoodLo, "", w)
	default:
		obj := string(p.obj.Metric)
		requests.Expr = "sum without (objective) (" + lp.sumOver(recIntObserved, obj, w) + ")"
		good.Expr = "sum without (objective) (" + lp.sumOver(recIntObjGoodLo, obj, w) + ")"
	}
	return requests, good
}
