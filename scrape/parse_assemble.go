package scrape

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
		h, err := childHistogram(ch)
		if err != nil {
			return famErr(err.reason, "%s", err.msg)
		}
		ms := modelSample(snap, ch.model)
		prev, ok := ms.Histograms[fam]
		if !ok {
			ms.Histograms[fam] = h
			continue
		}
		if !slices.Equal(prev.Edges, h.Edges) {
			return famErr(ReasonInvalidHistogram, "bucket layout %v differs from another child's %v", h.Edges, prev.Edges)
		}
		for i := range prev.Counts {
			prev.Counts[i] += h.Counts[i]
		}
		prev.Sum += h.Sum
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

// childHistogram sorts one child's buckets by le and checks that they form a
// cumulative histogram ending in +Inf.
func childHistogram(ch *histChild) (slo.Histogram, *childError) {
	b := ch.buckets
	// Expositions list buckets in ascending le; sorting only when they are
	// not strictly ascending gives the same order, without sort.Slice's cost.
	if !strictlyAscending(b) {
		sort.Slice(b, func(i, j int) bool { return b[i].le < b[j].le })
	}
	if len(b) == 0 || !math.IsInf(b[len(b)-1].le, 1) {
		return slo.Histogram{}, &childError{ReasonInvalidHistogram, "no +Inf bucket"}
	}
	// One array for both slices; Edges is clipped so that appending to it
	// can never write into Counts.
	vals := make([]float64, 2*len(b))
	h := slo.Histogram{Edges: vals[:len(b):len(b)], Counts: vals[len(b):], Sum: ch.sum}
	for i, bk := range b {
		if i > 0 && bk.le == b[i-1].le {
			return slo.Histogram{}, &childError{ReasonDuplicateSeries, fmt.Sprintf("bucket le=%g seen twice", bk.le)}
		}
		if i > 0 && bk.count < b[i-1].count {
			return slo.Histogram{}, &childError{ReasonInvalidHistogram,
				fmt.Sprintf("bucket le=%g count %g is below le=%g count %g", bk.le, bk.count, b[i-1].le, b[i-1].count)}
		}
		h.Edges[i], h.Counts[i] = bk.le, bk.count
	}
	if !ch.hasSum {
		return slo.Histogram{}, &childError{ReasonInvalidHistogram, "no _sum"}
	}
	return h, nil
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
	groups := make(map[string]*group)
	for _, key := range sortedKeys(children) {
		ch := children[key]
		gk := key
		if maxOverPID {
			gk = ch.group
		}
		g := groups[gk]
		if g == nil {
			groups[gk] = &group{model: ch.model, v: ch.v}
			continue
		}
		g.v = math.Max(g.v, ch.v)
	}
	for _, key := range sortedKeys(groups) {
		g := groups[key]
		ms := modelSample(snap, g.model)
		if maxOverPID {
			ms.Gauges[fam] += g.v
			if math.IsInf(ms.Gauges[fam], 0) {
				return &ParseError{Reason: ReasonInvalidValue, Family: name, Model: g.model, Err: errors.New("sum over children overflows")}
			}
			continue
		}
		ms.Counters[fam] += g.v
		if math.IsInf(ms.Counters[fam], 0) {
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
