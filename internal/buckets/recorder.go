package buckets

import (
	"maps"
	"math"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Recorder accumulates what a run of scrapes observed: each latency
// histogram's increase per target and model (restarts read as Prometheus's
// increase() reads them), and the edges the server exposes per family.
type Recorder struct {
	prev  map[string]map[slo.Metric]slo.Histogram
	acc   map[string]map[slo.Metric]*slo.Histogram
	edges map[Family][]float64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{prev: map[string]map[slo.Metric]slo.Histogram{}, acc: map[string]map[slo.Metric]*slo.Histogram{}, edges: map[Family][]float64{}}
}

// Add takes one scrape of a target.
func (r *Recorder) Add(target string, snap *scrape.Snapshot) {
	for model, ms := range snap.Models {
		key := target + "\x00" + model
		if r.prev[key] == nil {
			r.prev[key], r.acc[key] = map[slo.Metric]slo.Histogram{}, map[slo.Metric]*slo.Histogram{}
		}
		for _, m := range slo.Metrics {
			h, ok := ms.Histograms[scrape.Family(m)]
			if !ok || len(h.Edges) == 0 {
				continue
			}
			r.edges[FamilyOf(m)] = finiteEdges(h.Edges)
			if p, ok := r.prev[key][m]; ok {
				r.acc[key][m] = Increase(r.acc[key][m], p, h)
			}
			r.prev[key][m] = h
		}
	}
}

// Histograms is each metric's increase summed over targets and models; a
// model whose edges differ from the first one seen is left out.
func (r *Recorder) Histograms() map[slo.Metric]slo.Histogram {
	out := map[slo.Metric]slo.Histogram{}
	for _, key := range slices.Sorted(maps.Keys(r.acc)) {
		for m, h := range r.acc[key] {
			sum, ok := out[m]
			if !ok {
				out[m] = slo.Histogram{Edges: h.Edges, Counts: slices.Clone(h.Counts)}
				continue
			}
			if !slices.Equal(sum.Edges, h.Edges) {
				continue
			}
			for i, c := range h.Counts {
				sum.Counts[i] += c
			}
		}
	}
	return out
}

// Edges is the finite edges of each family in the newest scrape that had it.
func (r *Recorder) Edges() map[Family][]float64 { return maps.Clone(r.edges) }

// Observed is the distribution edges should follow for a family: the mix
// (see Mix) of the recorded histograms of the family's metrics that the
// SLOs judge, or of all its metrics when they judge none; nil without
// observations.
func (r *Recorder) Observed(f Family, slos []slo.SLO) *slo.Histogram {
	hists := r.Histograms()
	var judged, all []slo.Histogram
	for _, m := range slo.Metrics {
		h, ok := hists[m]
		if !ok || FamilyOf(m) != f {
			continue
		}
		all = append(all, h)
		if judges(slos, m) {
			judged = append(judged, h)
		}
	}
	if len(judged) > 0 {
		return Mix(judged)
	}
	return Mix(all)
}

func judges(slos []slo.SLO, m slo.Metric) bool {
	for _, s := range slos {
		for _, o := range s.Objectives {
			if o.Metric == m {
				return true
			}
		}
	}
	return false
}

func finiteEdges(edges []float64) []float64 {
	if n := len(edges); n > 0 && math.IsInf(edges[n-1], 1) {
		return slices.Clone(edges[:n-1])
	}
	return slices.Clone(edges)
}
