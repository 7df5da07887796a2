package capacity

import (
	"slices"
)

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
	// The estimates are copied once, into one slice whose runs are the
	// groups, in the order each pair first appears.
	index := map[key]int{}
	var keys []key
	var counts []int
	group := make([]int, len(reps))
	for i, r := range reps {
		k := key{r.Model, r.SLO}
		g, ok := index[k]
		if !ok {
			g = len(keys)
			index[k] = g
			keys, counts = append(keys, k), append(counts, 0)
		}
		group[i] = g
		counts[g]++
	}
	starts := make([]int, len(keys)+1)
	for g, c := range counts {
		starts[g+1] = starts[g] + c
	}
	es := make([]Estimate, len(reps))
	next := slices.Clone(starts[:len(keys)])
	for i, r := range reps {
		es[next[group[i]]] = r.Estimate
		next[group[i]]++
	}
	out := make([]ModelNeed, 0, len(keys))
	for g, k := range keys {
		run := es[starts[g]:starts[g+1]]
		n := Replicas(run, SumLoad(run, config(run[0].Goal).LoadSpan), p)
		out = append(out, ModelNeed{Model: k.model, SLO: k.slo, Policy: p, Need: n})
	}
	return out
}
