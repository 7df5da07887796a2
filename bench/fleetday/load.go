package fleetday

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// pooledLoad is the model's load from the scrape intervals of every
// replica that served it in the last trendSpan before now (those since
// removed included), in any order: the arrivals (capacity.Interval.Arrivals) of the
// intervals ending in the last span, over span (over the time since the
// earliest interval's start, when that is shorter), and the least-squares
// slope of the arrival rate in consecutive bins of length bin (the
// intervals pooled by their end) over the last trendSpan, of the bins the
// intervals cover from their start (at least three, else no trend). A
// replica added or removed inside the span counts for the part of it that
// it served, so the pooled rate is the model's whatever the replicas did.
func pooledLoad(ivs []capacity.Interval, now time.Time, span, trendSpan, bin time.Duration) capacity.Load {
	l := capacity.Load{Span: span}
	if span <= 0 || bin <= 0 || len(ivs) == 0 {
		return l
	}
	first := now
	bins := make([]float64, int(trendSpan/bin))
	for _, iv := range ivs {
		if iv.End.After(now) {
			continue
		}
		if iv.Start.Before(first) {
			first = iv.Start
		}
		age := now.Sub(iv.End)
		if age < span {
			l.Rate += iv.Arrivals()
		}
		if k := int(age / bin); k < len(bins) {
			bins[k] += iv.Arrivals()
		}
	}
	if covered := min(span, now.Sub(first)); covered > 0 {
		l.Rate /= covered.Seconds()
	}
	// Bins before the first interval's start hold nothing because nothing
	// was seen, not because nothing arrived.
	nb := min(len(bins), int(now.Sub(first)/bin))
	var sx, sy, sxx, sxy float64
	for k, a := range bins[:nb] {
		x, y := -float64(k)*bin.Seconds(), a/bin.Seconds()
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n := float64(nb); nb >= 3 {
		l.Trend = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	}
	return l
}
