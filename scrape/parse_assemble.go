package scrape

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// assemble turns the collected samples into a snapshot, validating the chosen
// names only. Children are visited in sorted order so that float sums (and
// error messages) do not depend on map iteration order.
func (c *collector) assemble(t time.Time) (*Snapshot, error) {
	snap := &Snapshot{
		Time:   t,
		Models: make(map[string]*ModelSample),
		Found:  make(map[Family]string),
	}
	created := make(map[string]float64)
	for fi, spec := range c.plan.profile.Families {
		chosen := -1
		for ni, st := range c.states[fi] {
			if st != nil && st.present && st.wrongType == "" {
				chosen = ni
				break
			}
		}
		if chosen < 0 {
			snap.Missing = append(snap.Missing, spec.Family)
			continue
		}
		name := spec.Names[chosen]
		st := c.states[fi][chosen]
		snap.Found[spec.Family] = name
		var err error
		switch spec.Kind {
		case KindHistogram:
			err = assembleHistograms(snap, spec.Family, name, st.hist)
		case KindCounter:
			err = assembleValues(snap, spec.Family, name, st.vals, false)
		default:
			err = assembleValues(snap, spec.Family, name, st.vals, true)
		}
		if err != nil {
			return nil, err
		}
		if spec.Kind != KindGauge {
			for _, ch := range st.created {
				created[ch.model] = math.Max(created[ch.model], ch.v)
			}
		}
	}
	for model, v := range created {
		if ms, ok := snap.Models[model]; ok {
			ms.Created = v
		}
	}
	return snap, nil
}

// modelSample returns the snapshot's sample for model, creating it.
func modelSample(snap *Snapshot, model string) *ModelSample {
	ms := snap.Models[model]
	if ms == nil {
		ms = &ModelSample{
			Histograms: make(map[Family]slo.Histogram),
			Counters:   make(map[Family]float64),
			Gauges:     make(map[Family]float64),
		}
		snap.Models[model] = ms
	}
	return ms
}

// assembleHistograms validates each child of one histogram name and sums the
// children of each model.
func assembleHistograms(snap *Snapshot, fam Family, name string, children map[string]*histChild) error {
	for _, key := range sortedKeys(children) {
		ch := children[key]
		famErr := func(reason, format string, args ...any) error {
			return &ParseError{Reason: reason, Family: name, Model: ch.model,
				Err: fmt.Errorf("%s: "+format, append([]any{ch.desc()}, args...)...)}
		}
		if err := checkChild(ch); err != nil {
			return famErr(err.reason, "%s", err.msg)
		}
		ms := modelSample(snap, ch.model)
		prev, ok := ms.Histograms[fam]
		if !ok {
			ms.Histograms[fam] = childHistogram(ch)
			continue
		}
		if !sameEdges(prev.Edges, ch.buckets) {
			return famErr(ReasonInvalidHistogram, "bucket layout %v differs from another child's %v", childHistogram(ch).Edges, prev.Edges)
		}
		for i, bk := range ch.buckets {
			prev.Counts[i] += bk.count
		}
		prev.Sum += ch.sum
		if math.IsInf(prev.Total(), 0) || math.IsInf(prev.Sum, 0) {
			return famErr(ReasonInvalidValue, "sum over children overflows")
		}
		ms.Histograms[fam] = prev
	}
	return nil
}

// childError is a validation failure of one histogram child.
type childError struct {
	reason, msg string
}

// checkChild sorts one child's buckets by le and checks that they form a
// cumulative histogram ending in +Inf, with a `_sum`.
func checkChild(ch *histChild) *childError {
	b := ch.buckets
	// Expositions list buckets in ascending le; sorting only when they are
	// not strictly ascending gives the same order, without sort.Slice's cost.
	if !strictlyAscending(b) {
		sort.Slice(b, func(i, j int) bool { return b[i].le < b[j].le })
	}
	if len(b) == 0 || !math.IsInf(b[len(b)-1].le, 1) {
		return &childError{ReasonInvalidHistogram, "no +Inf bucket"}
	}
	for i := 1; i < len(b); i++ {
		bk := b[i]
		if bk.le == b[i-1].le {
			return &childError{ReasonDuplicateSeries, fmt.Sprintf("bucket le=%g seen twice", bk.le)}
		}
		if bk.count < b[i-1].count {
			return &childError{ReasonInvalidHistogram,
				fmt.Sprintf("bucket le=%g count %g is below le=%g count %g", bk.le, bk.count, b[i-1].le, b[i-1].count)}
		}
	}
	if !ch.hasSum {
		return &childError{ReasonInvalidHistogram, "no _sum"}
	}
	return nil
}

// childHistogram is a checked child's histogram.
func childHistogram(ch *histChild) slo.Histogram {
	n := len(ch.buckets)
	// One array for both slices; Edges is clipped so that appending to it
	// can never write into Counts.
	vals := make([]float64, 2*n)
	h := slo.Histogram{Edges: vals[:n:n], Counts: vals[n:], Sum: ch.sum}
	for i, bk := range ch.buckets {
		h.Edges[i], h.Counts[i] = bk.le, bk.count
	}
	return h
}

// sameEdges reports whether the buckets have exactly the given edges.
func sameEdges(edges []float64, b []bucket) bool {
	if len(edges) != len(b) {
		return false
	}
	for i, bk := range b {
		if bk.le != edges[i] {
			return false
		}
	}
	return true
}

// strictlyAscending reports whether every bucket's le is above the previous
// one's (NaN never is: Parse refuses a NaN le).
func strictlyAscending(b []bucket) bool {
	for i := 1; i < len(b); i++ {
		if !(b[i].le > b[i-1].le) {
			return false
		}
	}
	return true
}

// assembleValues sums the children of each model of a counter, or of a gauge
// after taking the maximum over pid within each group (maxOverPID).
func assembleValues(snap *Snapshot, fam Family, name string, children map[string]valChild, maxOverPID bool) error {
	type group struct {
		model string
		v     float64
	}
	if !maxOverPID {
		// Counters: every child is its own group, summed in key order.
		for _, key := range sortedKeys(children) {
			ch := children[key]
			ms := modelSample(snap, ch.model)
			ms.Counters[fam] += ch.v
			if math.IsInf(ms.Counters[fam], 0) {
				return &ParseError{Reason: ReasonInvalidValue, Family: name, Model: ch.model, Err: errors.New("sum over children overflows")}
			}
		}
		return nil
	}
	// Gauges: the maximum over pid within each group, then the groups summed.
	groups := make(map[string]*group)
	for _, key := range sortedKeys(children) {
		ch := children[key]
		g := groups[ch.group]
		if g == nil {
			groups[ch.group] = &group{model: ch.model, v: ch.v}
			continue
		}
		g.v = math.Max(g.v, ch.v)
	}
	for _, key := range sortedKeys(groups) {
		g := groups[key]
		ms := modelSample(snap, g.model)
		ms.Gauges[fam] += g.v
		if math.IsInf(ms.Gauges[fam], 0) {
			return &ParseError{Reason: ReasonInvalidValue, Family: name, Model: g.model, Err: errors.New("sum over children overflows")}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
