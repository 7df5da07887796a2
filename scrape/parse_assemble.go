package scrape

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// assemble turns the collected samples into a snapshot, validating the chosen
// names only, and drops every model with a rejected family. Children are
// visited in sorted order so that float sums (and the first error) do not
// depend on map iteration order.
func (c *collector) assemble(t time.Time) (*Snapshot, error) {
	snap := &Snapshot{
		Time:   t,
		Models: make(map[string]*ModelSample),
		Found:  make(map[Family]string),
	}
	rej := rejections{}
	created := make(map[string]float64)
	for fi, spec := range c.plan.profile.Families {
		chosen := slices.IndexFunc(c.states[fi], func(st *nameState) bool {
			return st != nil && st.present && st.wrongType == ""
		})
		if chosen < 0 {
			if !spec.Family.Optional() {
				snap.Missing = append(snap.Missing, spec.Family)
			}
			continue
		}
		name := spec.Names[chosen]
		st := c.states[fi][chosen]
		snap.Found[spec.Family] = name
		for model, err := range st.rejected {
			rej.add(fi, spec.Family, model, err)
		}
		famRej := func(model string, err *ParseError) { rej.add(fi, spec.Family, model, err) }
		switch spec.Kind {
		case KindHistogram:
			assembleHistograms(snap, spec.Family, name, st, famRej)
		case KindCounter:
			assembleCounters(snap, spec.Family, name, st, famRej)
		default:
			assembleGauges(snap, spec.Family, name, st, famRej)
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
	return rej.apply(snap)
}

// rejections are the first error of each family and model of one parse,
// keyed by the family's index in the profile and the model.
type rejections map[rejectKey]Rejection

type rejectKey struct {
	fam   int
	model string
}

// add records err unless the family already has an error for model.
func (r rejections) add(fam int, family Family, model string, err *ParseError) {
	k := rejectKey{fam, model}
	if _, seen := r[k]; !seen {
		r[k] = Rejection{Family: family, Model: model, Err: err}
	}
}

// apply removes every rejected model from snap and lists the rejections in
// profile order, then model order. With nothing left of a scrape that had
// rejections, the first one is the scrape's error.
func (r rejections) apply(snap *Snapshot) (*Snapshot, error) {
	if len(r) == 0 {
		return snap, nil
	}
	keys := slices.SortedFunc(maps.Keys(r), func(a, b rejectKey) int {
		return cmp.Or(cmp.Compare(a.fam, b.fam), cmp.Compare(a.model, b.model))
	})
	for _, k := range keys {
		delete(snap.Models, k.model)
		snap.Rejected = append(snap.Rejected, r[k])
	}
	if len(snap.Models) == 0 {
		return nil, snap.Rejected[0].Err
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
// children of each model; a model with a bad child is rejected.
func assembleHistograms(snap *Snapshot, fam Family, name string, st *nameState, reject func(string, *ParseError)) {
	broken := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(st.hist)) {
		ch := st.hist[key]
		if _, bad := st.rejected[ch.model]; bad || broken[ch.model] {
			continue
		}
		if err := addChild(snap, fam, ch); err != nil {
			err.Family, err.Model = name, ch.model
			err.Err = fmt.Errorf("%s: %w", ch.desc(), err.Err)
			reject(ch.model, err)
			broken[ch.model] = true
		}
	}
}

// addChild checks one histogram child and adds it to its model's sum.
func addChild(snap *Snapshot, fam Family, ch *histChild) *ParseError {
	if err := checkChild(ch); err != nil {
		return err
	}
	ms := modelSample(snap, ch.model)
	if fam == TTFT && ch.labels.Has(labelPriority) {
		ms.TTFTAtFinish = true
	}
	prev, ok := ms.Histograms[fam]
	if !ok {
		ms.Histograms[fam] = childHistogram(ch)
		return nil
	}
	if !sameEdges(prev.Edges, ch.buckets) {
		return &ParseError{Reason: ReasonInvalidHistogram, Line: ch.line,
			Err: fmt.Errorf("bucket layout %v differs from another child's %v", childHistogram(ch).Edges, prev.Edges)}
	}
	for i, bk := range ch.buckets {
		prev.Counts[i] += bk.count
	}
	prev.Sum += ch.sum
	if math.IsInf(prev.Total(), 0) || math.IsInf(prev.Sum, 0) {
		return &ParseError{Reason: ReasonInvalidValue, Line: ch.line, Err: errors.New("sum over children overflows")}
	}
	ms.Histograms[fam] = prev
	return nil
}

// checkChild sorts one child's buckets by le and checks that they form a
// cumulative histogram ending in +Inf, with a `_sum`. An error points at the
// line that shows the fault: the highest bucket for a missing +Inf (where a
// truncated exposition stops), the offending bucket, or the child's first
// line for a missing `_sum`.
func checkChild(ch *histChild) *ParseError {
	b := ch.buckets
	slices.SortStableFunc(b, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
	fail := func(reason string, line int, format string, args ...any) *ParseError {
		return &ParseError{Reason: reason, Line: line, Err: fmt.Errorf(format, args...)}
	}
	if len(b) == 0 {
		return fail(ReasonInvalidHistogram, ch.line, "no bucket, no +Inf bucket")
	}
	if top := b[len(b)-1]; !math.IsInf(top.le, 1) {
		return fail(ReasonInvalidHistogram, top.line, "no +Inf bucket (highest le=%g)", top.le)
	}
	for i := 1; i < len(b); i++ {
		bk, prev := b[i], b[i-1]
		if bk.le == prev.le {
			return fail(ReasonDuplicateSeries, max(bk.line, prev.line), "bucket le=%g seen twice", bk.le)
		}
		if bk.count < prev.count {
			return fail(ReasonInvalidHistogram, bk.line, "bucket le=%g count %g is below le=%g count %g", bk.le, bk.count, prev.le, prev.count)
		}
	}
	if !ch.hasSum {
		return fail(ReasonInvalidHistogram, ch.line, "no _sum")
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
	return slices.EqualFunc(edges, b, func(e float64, bk bucket) bool { return e == bk.le })
}

// assembleCounters sums the children of each model of a counter, in key
// order; a model whose sum overflows is rejected.
func assembleCounters(snap *Snapshot, fam Family, name string, st *nameState, reject func(string, *ParseError)) {
	for _, key := range slices.Sorted(maps.Keys(st.vals)) {
		ch := st.vals[key]
		if _, bad := st.rejected[ch.model]; bad {
			continue
		}
		ms := modelSample(snap, ch.model)
		ms.Counters[fam] += ch.v
		if math.IsInf(ms.Counters[fam], 0) {
			reject(ch.model, overflow(name, ch))
		}
	}
}

// assembleGauges takes the maximum over pid within each group (the same
// labels but pid) of a gauge, then sums the groups of each model; a model
// whose sum overflows is rejected.
func assembleGauges(snap *Snapshot, fam Family, name string, st *nameState, reject func(string, *ParseError)) {
	groups := make(map[string]valChild)
	for _, key := range slices.Sorted(maps.Keys(st.vals)) {
		ch := st.vals[key]
		if _, bad := st.rejected[ch.model]; bad {
			continue
		}
		if g, ok := groups[ch.group]; ok {
			ch.v = math.Max(g.v, ch.v)
		}
		groups[ch.group] = ch
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		ms := modelSample(snap, g.model)
		ms.Gauges[fam] += g.v
		if math.IsInf(ms.Gauges[fam], 0) {
			reject(g.model, overflow(name, g))
		}
	}
}

// overflow is the error of a counter or gauge whose sum over children
// overflows, at the child that made it overflow.
func overflow(name string, ch valChild) *ParseError {
	return &ParseError{Reason: ReasonInvalidValue, Line: ch.line, Family: name, Model: ch.model,
		Err: errors.New("sum over children overflows")}
}
