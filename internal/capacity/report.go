package capacity

// Report is the estimate of one target's, model's and SLO's capacity, as
// the exporter renders it.
type Report struct {
	Target, Model, SLO string
	// Labels are the target's extra labels.
	Labels   map[string]string
	Estimate Estimate
}

// ModelNeed is the replica signal of one model and SLO: Replicas over the
// estimates of every target serving the model.
type ModelNeed struct {
	Model, SLO string
	// Serving is the replicas serving the model now, as whoever builds the
	// report knows them (online.Stage: the report's targets serving the
	// model whose last scrape succeeded); 0 when unknown.
	Serving int
	// Policy is the policy Need was computed under.
	Policy ReplicaPolicy
	Need
}

// ModelNeeds is the replica signal of each model and SLO of reps, in the
// order each pair first appears, under p, on the sum of the pair's
// targets' loads (SumLoad, with the faults its comment names around a
// scale event) over the span config(goal) averages them over
// (DefaultConfig when config is nil, as the learners do). A pair none of
// whose targets has a capacity is kept, with Replicas NaN: what renders it
// can say that the signal waits for one.
func ModelNeeds(reps []Report, config func(goal float64) Config, p ReplicaPolicy) []ModelNeed {
	if config == nil {
		config = DefaultConfig
	}
	type key struct{ model, slo string }
	first := map[key]int{}
	var groups [][]Estimate
	var keys []key
	for _, r := range reps {
		k := key{r.Model, r.SLO}
		g, ok := first[k]
		if !ok {
			g = len(groups)
			first[k] = g
			groups, keys = append(groups, nil), append(keys, k)
		}
		groups[g] = append(groups[g], r.Estimate)
	}
	out := make([]ModelNeed, 0, len(groups))
	for g, es := range groups {
		n := Replicas(es, SumLoad(es, config(es[0].Goal).LoadSpan), p)
		out = append(out, ModelNeed{Model: keys[g].model, SLO: keys[g].slo, Policy: p, Need: n})
	}
	return out
}
