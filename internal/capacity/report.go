package capacity

// Report is the estimate of one target's, model's and SLO's capacity, as
// the exporter renders it.
type Report struct {
	Target, Model, SLO string
	// Labels are the target's extra labels.
	Labels   map[string]string
	Estimate Estimate
}
