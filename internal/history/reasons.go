package history

import (
	"math"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// reasonGauges are one point's waiting-by-reason gauges of the newest vLLM
// (num_requests_waiting_by_reason): waiting for capacity, then deferred.
// They split the waiting requests, so they never join the in-flight sums.
// A point holds them behind a pointer, nil on servers without them, and
// only in the raw tier: a point moving to a coarse tier drops them, so a
// window reaching past the raw tier (or across a daemon restart: the state
// file does not keep them) reports them unknown. That keeps the cost of a
// point unchanged where they are absent and bounded by the raw tier where
// they are present.
type reasonGauges [2]gaugeState

// reasonFamily is the family of the j-th reason gauge.
func reasonFamily(j int) scrape.Family {
	if j == 0 {
		return scrape.WaitingCapacity
	}
	return scrape.WaitingDeferred
}

// reasonsAt is the reason gauges ms samples at t, their integrals carried
// from prev (the previous point, nil for the model's first); nil when
// neither ms nor prev has them.
func reasonsAt(prev *point, t int64, ms *scrape.ModelSample) *reasonGauges {
	_, capacity := ms.Gauges[scrape.WaitingCapacity]
	_, deferred := ms.Gauges[scrape.WaitingDeferred]
	carried := prev != nil && prev.r != nil
	if !capacity && !deferred && !carried {
		return nil
	}
	var r reasonGauges
	for j := range r {
		if carried {
			r[j] = sampleGauge(&prev.r[j], prev.t, reasonFamily(j), t, ms)
		} else {
			r[j] = sampleGauge(nil, 0, reasonFamily(j), t, ms)
		}
	}
	return &r
}

// foldMax folds the maxima of a dropped point's reason gauges (from) into
// r's, so that window maxima stay exact; nothing when either is absent.
func (r *reasonGauges) foldMax(from *reasonGauges) {
	if r == nil || from == nil {
		return
	}
	for j := range r {
		r[j].max = maxKnown(r[j].max, from[j].max)
	}
}

// reasonWindow is the reason gauges over the window between the points i0
// and i1 (see windowGauge), unknown unless both ends hold them.
func (sr *series) reasonWindow(i0, i1 int) (capacity, deferred slo.Gauge) {
	p0, p1 := sr.at(i0), sr.at(i1)
	if p0.r == nil || p1.r == nil {
		return slo.Gauge{}, slo.Gauge{}
	}
	var out [2]slo.Gauge
	for j := range out {
		a, b := p0.r[j], p1.r[j]
		d := b.known - a.known
		if math.IsNaN(a.v) || math.IsNaN(b.v) || !(d > 0) {
			continue
		}
		mx := a.v
		for i := i0 + 1; i <= i1; i++ {
			if r := sr.at(i).r; r != nil {
				mx = maxKnown(mx, r[j].max)
			}
		}
		g := slo.Gauge{Known: true, AtStart: a.v, AtEnd: b.v, Max: mx}
		g.Mean = min((b.integral-a.integral)/d, g.Max)
		out[j] = g
	}
	return out[0], out[1]
}
