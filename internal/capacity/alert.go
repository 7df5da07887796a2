package capacity

import (
	"fmt"
	"strconv"
)

// AlertHeadroomLow is the name of the capacity headroom ticket.
const AlertHeadroomLow = "VLLMSLOCapacityHeadroomLow"

// HeadroomLow reports whether e warrants the headroom ticket at margin:
// only a bounded estimate whose headroom's upper end is below the margin.
//
// Why the upper end: it is the headroom left if the capacity is at the
// upper end of its 90% prediction interval, so below the margin even the
// optimistic reading leaves less than the margin, and the ticket is not
// raised on the interval's width alone: with the interval's nominal
// coverage, a server whose true headroom is exactly the margin has its
// upper end below it in about 5% of evaluations (the upper tail), and one
// with more headroom less often. The estimate and the lower end
// are exported for those who want to act earlier: an autoscaler scales on
// the estimate. A lower_only answer has no upper end (the capacity may be
// far above every load seen), so it never raises the ticket; neither does
// an unknown one.
func HeadroomLow(e Estimate, margin float64) bool {
	return margin > 0 && e.Kind == Bounded && e.Headroom.Upper < margin
}

// HeadroomAlertText is the summary and description of the headroom ticket
// for a target's model and SLO. The generated Prometheus rule writes the
// same words with {{ $labels.target }}, {{ $labels.model_name }} and
// {{ $labels.slo }} in their place, because Alertmanager merges the
// daemon's and Prometheus's alert into one and keeps the annotations of
// whichever arrived last: the text holds nothing only one path knows.
func HeadroomAlertText(target, model, slo string, margin float64) (summary, description string) {
	m := strconv.FormatFloat(100*margin, 'f', -1, 64) + "%"
	summary = fmt.Sprintf("Target %s serving %s has less than %s headroom before SLO %s breaks", target, model, m, slo)
	description = fmt.Sprintf("Even the upper end of the 90%% prediction interval of the capacity headroom (1 − load over the last 10 minutes / the capacity's upper end) is below %s: "+
		"the load is that close to the highest sustained arrival rate at which the SLO's attainment stays at its goal, for the workload mix observed. "+
		"Add capacity or shed load; vllm_slo_capacity_time_to_breach_seconds says when the load's trend reaches it. "+
		"The capacity is a prediction learned from this server's history, not a bound (docs/capacity.md).", m)
	return summary, description
}
