package console

import (
	"math"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// HistogramView is one window's latency histogram as vLLM's buckets, with a
// smooth density that keeps every bucket's count (see density) and the
// quantile brackets.
//
// The x axis is logarithmic (vLLM's edges grow roughly geometrically), so
// densities are per decade: a bucket (l, u] holding c observations is drawn at
// height c/log10(u/l), and the area under both the bars and the curve over a
// bucket is its count. The first bucket (0, e] has no finite logarithm: it is
// drawn from e/10, and its observations below e/10 (if any) are not shown.
// The +Inf bucket cannot be drawn; AboveLast says how many it holds.
type HistogramView struct {
	Metric string `json:"metric"`
	Window string `json:"window"`
	// Start and End are the unix seconds of the scrapes bounding the window.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Count is the number of observations; AboveLast those above the last
	// finite edge.
	Count     float64 `json:"count"`
	AboveLast float64 `json:"above_last"`
	// X are the drawing positions in seconds, ascending: every bucket edge
	// drawn and Steps points inside each bucket. Bars[i] and Density[i] hold
	// on (X[i], X[i+1]]; the last value of each is null.
	X       []Value `json:"x"`
	Bars    []Value `json:"bars"`
	Density []Value `json:"density"`
	// Threshold is the SLO objective on this metric (null: none).
	Threshold Value `json:"threshold"`
	// Quantiles are the window's quantiles with their brackets.
	Quantiles []QuantileMark `json:"quantiles"`
}

// QuantileMark is one quantile of a histogram: the estimate and the bucket
// that certainly holds it (Upper null: the +Inf bucket).
type QuantileMark struct {
	Q        float64 `json:"q"`
	Estimate Value   `json:"estimate"`
	Lower    Value   `json:"lower"`
	Upper    Value   `json:"upper"`
}

// Steps is how many points the reconstructed density has inside each bucket.
const Steps = 12

// histograms draws the window's histogram of every metric charted for s.
func histograms(s slo.SLO, w *slo.WindowReport) []HistogramView {
	var out []HistogramView
	for _, m := range drawnMetrics(s) {
		h, ok := w.Window.Latency[m]
		if !ok || !h.Valid() || h.Total() <= 0 {
			continue
		}
		v := histogramView(h)
		v.Metric = string(m)
		v.Window = formatWindow(w.Window.Nominal)
		v.Start, v.End = unixSeconds(w.Window.Start), unixSeconds(w.Window.End)
		v.Threshold = Value(math.NaN())
		for _, o := range s.Objectives {
			if o.Metric == m {
				v.Threshold = Value(o.Threshold)
			}
		}
		for _, q := range w.Quantiles[m] {
			v.Quantiles = append(v.Quantiles, QuantileMark{Q: q.Q, Estimate: Value(q.Estimate), Lower: Value(q.Lower), Upper: Value(q.Upper)})
		}
		out = append(out, v)
	}
	return out
}

// histogramView lays out the finite buckets from the one before the first
// non-empty bucket to the one after the last (the rest are empty and would
// only stretch the axis), with a smooth density drawn at Steps log-spaced
// points inside each (see density).
func histogramView(h slo.Histogram) HistogramView {
	last := len(h.Edges) - 1 // the +Inf bucket
	counts := make([]float64, last)
	first, final := -1, -1
	for i := range last {
		c := h.Counts[i]
		if i > 0 {
			c -= h.Counts[i-1]
		}
		counts[i] = math.Max(0, c)
		if counts[i] > 0 {
			if first < 0 {
				first = i
			}
			final = i
		}
	}
	v := HistogramView{Count: h.Total(), AboveLast: math.Max(0, h.Total()-cumulative(h, last-1))}
	if first < 0 {
		return v
	}
	lo, hi := max(first-1, 0), min(final+1, last-1)
	var buckets []bucket
	for i := lo; i <= hi; i++ {
		l, u := lowerEdge(h, i), h.Edges[i]
		if !(l > 0) {
			continue // a non-positive edge has no place on a log axis
		}
		buckets = append(buckets, bucket{lower: l, upper: u, height: counts[i] / math.Log10(u/l)})
	}
	dens := density(buckets)
	for j, b := range buckets {
		for k := range Steps {
			v.X = append(v.X, Value(b.lower*math.Pow(b.upper/b.lower, float64(k)/Steps)))
			v.Bars = append(v.Bars, Value(b.height))
			v.Density = append(v.Density, Value(dens[j][k]))
		}
	}
	v.X = append(v.X, Value(h.Edges[hi]))
	v.Bars = append(v.Bars, Value(math.NaN()))
	v.Density = append(v.Density, Value(math.NaN()))
	return v
}

// bucket is one drawn bucket: its edges and its height per decade.
type bucket struct {
	lower, upper, height float64
}

// density is a continuous curve through the buckets that keeps each
// bucket's count (its area over the bucket, on the log axis), drawn as the
// mean over each of the Steps sub-intervals. Over a bucket it is linear in
// log x from the value at its lower edge to a peak at its middle and on to
// the value at its upper edge; an edge's value is the mean of the heights of
// the buckets it separates (0 at the outer edges, which bound empty
// buckets), and the middle is set so that the area is the bucket's count:
// (left + 2·middle + right)/4 = height. Where that middle would be negative
// (a nearly empty bucket between full ones) it is 0 and both edge values
// inside this bucket scale down to keep the count, leaving a step at its
// edges rather than a negative density. This replaces drawing the
// estimator's cumulative count sub-interval by sub-interval, whose
// differences put spikes at every bucket edge.
func density(bs []bucket) [][Steps]float64 {
	edge := make([]float64, len(bs)+1)
	for i := 1; i < len(bs); i++ {
		edge[i] = (bs[i-1].height + bs[i].height) / 2
	}
	out := make([][Steps]float64, len(bs))
	for i, b := range bs {
		l, r := edge[i], edge[i+1]
		m := 2*b.height - (l+r)/2
		if m < 0 {
			m = 0
			if s := l + r; s > 0 {
				l, r = l*4*b.height/s, r*4*b.height/s
			}
		}
		for k := range Steps {
			t := (float64(k) + 0.5) / Steps // the sub-interval's middle, where a linear piece takes its mean
			if t < 0.5 {
				out[i][k] = l + (m-l)*2*t
			} else {
				out[i][k] = m + (r-m)*2*(t-0.5)
			}
		}
	}
	return out
}

// lowerEdge is the lower edge of finite bucket i as drawn: the previous edge,
// or a tenth of the first edge (a log axis cannot reach 0).
func lowerEdge(h slo.Histogram, i int) float64 {
	if i == 0 || h.Edges[i-1] <= 0 {
		return h.Edges[i] / 10
	}
	return h.Edges[i-1]
}

func cumulative(h slo.Histogram, i int) float64 {
	if i < 0 {
		return 0
	}
	return h.Counts[i]
}
