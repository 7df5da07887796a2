package pipeline

import (
	"fmt"

	"github.com/prometheus/common/model"
)

// BurnAlertText is the summary and description of a burn-rate alert of SLO
// sloName for model. The generated Prometheus rules write the same words
// with {{ $labels.slo }} and {{ $labels.model_name }} in their place (the
// rules package pins this with a test), because Alertmanager merges the
// daemon's and Prometheus's alert for one breach into one and keeps the
// annotations of whichever arrived last: two wordings would flip at every
// resend. So the text holds nothing that only one path knows (no current
// value); the daemon's numbers are in its other annotations (burn_rate,
// coverage, ...) and both paths' on /metrics.
func BurnAlertText(sloName, modelName string, a BurnAlert) (summary, description string) {
	factor := shortNumber(a.Factor)
	long, short := model.Duration(a.Long), model.Duration(a.Short)
	summary = fmt.Sprintf("SLO %s of model %s burns its error budget faster than %s× over %s", sloName, modelName, factor, long)
	description = fmt.Sprintf("Over %s and over %s, both the upper bound of the burn rate and its evidence (the larger of its lower bound and the observed burn rate: the requests seen bad, abandoned ones included as the SLO counts them) exceed %s: "+
		"at this pace a whole SLO period's error budget lasts the period divided by %s. "+
		"The values are the exporter's vllm_slo_burn_rate_upper and _lower and the rules' burn_rate_upper, burn_rate_lower and burn_rate_observed recordings; the exporter's console links the SLO's charts.",
		long, short, factor, factor)
	return summary, description
}
