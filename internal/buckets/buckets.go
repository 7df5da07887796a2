// Package buckets advises histogram bucket edges for vLLM's custom-bucket
// option (`--custom-histogram-buckets '{"request_latency": [...]}'`): every
// SLO threshold on an edge, so that each objective's good count is exact
// rather than bracketed between two edges, and the remaining edges where a
// recording's observed distribution puts its mass, so that the quantile
// brackets are narrow where the requests are.
//
// It is pure: it reads edges and counts and returns edges. It never fetches,
// never reads files and never changes a server.
package buckets

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Family is one of vLLM's bucket families: a list of edges shared by
// several histograms.
type Family string

// The latency families vLLM lets an operator replace, in the names its
// custom-bucket option takes.
const (
	// RequestLatency is e2e, queue, prefill, decode and inference.
	RequestLatency Family = "request_latency"
	// TimeToFirstToken is TTFT.
	TimeToFirstToken Family = "time_to_first_token"
	// InterTokenLatency is ITL and the per-request TPOT.
	InterTokenLatency Family = "inter_token_latency"
)

// RequestNumPreemptions is the family of vLLM's per-request preemption
// count histogram (vllm/v1/metrics/buckets.py): not a latency family, so not
// in Families, and never advised; its first edge, 1, puts 0 and 1 preemption
// in one bucket (see slo.PreemptedShare for what that allows).
const RequestNumPreemptions Family = "request_num_preemptions"

// Families lists the latency families in a fixed order.
var Families = []Family{TimeToFirstToken, InterTokenLatency, RequestLatency}

// FamilyOf is the family whose edges a metric's histogram uses.
func FamilyOf(m slo.Metric) Family {
	switch m {
	case slo.TTFT:
		return TimeToFirstToken
	case slo.TPOT, slo.ITL:
		return InterTokenLatency
	}
	return RequestLatency
}

// Default is vLLM's default edge list of a family (finite edges; +Inf is
// always added by the server), the same since vLLM gathered them into one
// module. The slice is the caller's.
func Default(f Family) []float64 {
	switch f {
	case TimeToFirstToken:
		return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
			1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	case InterTokenLatency:
		return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
			1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	case RequestNumPreemptions:
		return []float64{1, 2, 3, 4, 5, 10, 20}
	}
	return []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
}

// Thresholds gathers the SLOs' thresholds per family, sorted and without
// repeats.
func Thresholds(slos []slo.SLO) map[Family][]float64 {
	out := map[Family][]float64{}
	for _, s := range slos {
		for _, o := range s.Objectives {
			f := FamilyOf(o.Metric)
			if !slices.Contains(out[f], o.Threshold) {
				out[f] = append(out[f], o.Threshold)
			}
		}
	}
	for f := range out {
		slices.Sort(out[f])
	}
	return out
}

// Placement says where one objective's threshold lies among a histogram's
// edges.
type Placement struct {
	SLO       string
	Metric    slo.Metric
	Threshold float64
	// OnEdge is true when the threshold is an edge: the objective's good
	// count is then exact.
	OnEdge bool
	// Below and Above are the edges around an off-edge threshold (Above is
	// +Inf beyond the last edge); the good count is only bracketed between
	// the counts at these two.
	Below, Above float64
}

// Place finds every objective's threshold among the edges its metric's
// family has on the server (edges maps a family to its finite edges; a
// missing family means vLLM's default).
func Place(slos []slo.SLO, edges map[Family][]float64) []Placement {
	var out []Placement
	for _, s := range slos {
		for _, o := range s.Objectives {
			es, ok := edges[FamilyOf(o.Metric)]
			if !ok {
				es = Default(FamilyOf(o.Metric))
			}
			p := Placement{SLO: s.Name, Metric: o.Metric, Threshold: o.Threshold, Below: 0, Above: math.Inf(1)}
			i, found := slices.BinarySearch(es, o.Threshold)
			p.OnEdge = found
			if !found {
				if i > 0 {
					p.Below = es[i-1]
				}
				if i < len(es) {
					p.Above = es[i]
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// Advice is the advised edges of one family.
type Advice struct {
	Family Family
	// Edges are the finite edges, ascending: every threshold of the family,
	// then what the budget leaves.
	Edges []float64
	// Thresholds are the edges that are SLO thresholds.
	Thresholds []float64
	// FromObserved is true when the free edges follow an observed
	// distribution, false when they are vLLM's defaults thinned to the budget.
	FromObserved bool
}

// Advise places budget finite edges for one family: every threshold; then,
// when a distribution was observed, the rest where its requests are:
//
//   - a geometric ladder (steps of about 4x) from the largest observed value
//     to the largest default edge, so that the tail keeps a finite bracket
//     and a request as slow as vLLM's defaults allow still lands below +Inf;
//   - half of what is left at equal shares of the observed distribution
//     (equal shares make the largest share of the requests one bucket holds
//     as small as they can, and that share is the rank a quantile's bracket
//     spans), and half at quantiles from p90 to p99.9 spread evenly on a log
//     scale of 1 − p, where the tail quantiles an SLO is read at are.
//
// Without observations the rest is vLLM's defaults, thinned to the budget
// where the edges are densest on a log scale. Free edges are rounded to
// three significant digits; one within 2% of a threshold adds nothing and is
// dropped.
func Advise(f Family, thresholds []float64, observed *slo.Histogram, budget int) (Advice, error) {
	adv := Advice{Family: f, Thresholds: slices.Clone(thresholds)}
	for _, th := range thresholds {
		if !(th > 0) || math.IsInf(th, 0) {
			return adv, fmt.Errorf("buckets: %s threshold %v: want a positive finite number", f, th)
		}
	}
	if budget < len(thresholds) {
		return adv, fmt.Errorf("buckets: %s: a budget of %d edges cannot hold its %d thresholds", f, budget, len(thresholds))
	}
	defaults := Default(f)
	top := defaults[len(defaults)-1]
	free := budget - len(thresholds)
	candidates := defaults
	if observed != nil && observed.Total() > 0 && free > 2 {
		adv.FromObserved = true
		tail := ladder(observedMax(*observed), top, free/4)
		candidates = append(levels(*observed, free-len(tail), top), tail...)
	}
	edges := merge(thresholds, candidates)
	adv.Edges = thin(edges, thresholds, budget)
	return adv, nil
}

// observedMax is the upper edge of the highest bucket that holds an
// observation (twice the last finite edge when that is +Inf's bucket).
func observedMax(h slo.Histogram) float64 {
	finite := len(h.Edges) - 1
	if finite < 1 {
		return 1
	}
	if h.Total() > h.Counts[finite-1] {
		return 2 * h.Edges[finite-1]
	}
	for i := finite - 1; i > 0; i-- {
		if h.Counts[i] > h.Counts[i-1] {
			return h.Edges[i]
		}
	}
	return h.Edges[0]
}

// ladder is at most n edges from lo (excluded) to top (included) in equal
// ratios of about 4 (fewer edges when 4x steps reach top sooner).
func ladder(lo, top float64, n int) []float64 {
	if n < 1 || !(lo > 0) || lo >= top {
		return []float64{top}
	}
	steps := min(n, max(1, int(math.Ceil(math.Log(top/lo)/math.Log(4)))))
	ratio := math.Pow(top/lo, 1/float64(steps))
	out := make([]float64, 0, steps)
	for i := 1; i < steps; i++ {
		out = append(out, lo*math.Pow(ratio, float64(i)))
	}
	return append(out, top)
}

// levels are k edges at quantiles of the observed distribution: half at
// equal shares i/(n+1), half from p90 to p99.9 evenly in log(1 − p).
func levels(h slo.Histogram, k int, top float64) []float64 {
	even := (k + 1) / 2
	var ps []float64
	for i := 1; i <= even; i++ {
		ps = append(ps, float64(i)/float64(even+1))
	}
	tail := k - even
	for j := range tail {
		share := 1.0
		if tail > 1 {
			share = float64(j) / float64(tail-1)
		}
		ps = append(ps, 1-0.1*math.Pow(0.01, share))
	}
	out := make([]float64, 0, len(ps))
	for _, p := range ps {
		out = append(out, quantileOf(h, p, top))
	}
	return out
}

// quantileOf reads the p quantile of the observed distribution from its
// cumulative counts by linear interpolation inside each bucket (from 0
// below the first edge). Mass beyond the last finite edge has no place to
// be read from; its quantiles are spread geometrically between that edge
// and top.
func quantileOf(h slo.Histogram, p, top float64) float64 {
	total := h.Total()
	finite := len(h.Edges) - 1
	rank := total * p
	j := rankIndex(h.Counts[:finite], rank)
	if j >= finite {
		lastEdge := 1e-3
		if finite > 0 {
			lastEdge = math.Max(h.Edges[finite-1], lastEdge)
		}
		beyond := total - h.Counts[finite-1]
		share := (rank - h.Counts[finite-1]) / beyond
		return lastEdge * math.Pow(top/lastEdge, share)
	}
	lo, below := 0.0, 0.0
	if j > 0 {
		lo, below = h.Edges[j-1], h.Counts[j-1]
	}
	if width := h.Counts[j] - below; width > 0 {
		return lo + (h.Edges[j]-lo)*(rank-below)/width
	}
	return h.Edges[j]
}

// rankIndex is the first index whose cumulative count reaches rank.
func rankIndex(counts []float64, rank float64) int {
	for i, c := range counts {
		if c >= rank {
			return i
		}
	}
	return len(counts)
}

// merge is the thresholds and the candidates rounded to three significant
// digits, ascending, without a candidate within 2% of a threshold and
// without repeats.
func merge(thresholds, candidates []float64) []float64 {
	out := slices.Clone(thresholds)
	for _, c := range candidates {
		c = round3(c)
		if !(c > 0) || nearAny(c, thresholds) || slices.Contains(out, c) {
			continue
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func nearAny(v float64, edges []float64) bool {
	for _, e := range edges {
		if math.Abs(v-e) <= 0.02*e {
			return true
		}
	}
	return false
}

func round3(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// thin removes edges until budget remain: each time the free edge (not a
// threshold, not the largest) whose neighbours are closest on a log scale,
// the edge whose removal widens the finest resolution least; the largest
// goes last. The budget admits every threshold (Advise checks), so the loop
// ends.
func thin(edges, keep []float64, budget int) []float64 {
	for len(edges) > budget {
		best, bestGap := -1, math.Inf(1)
		for i := 0; i < len(edges)-1; i++ {
			if slices.Contains(keep, edges[i]) {
				continue
			}
			lo := edges[i] / 2
			if i > 0 {
				lo = edges[i-1]
			}
			if gap := math.Log(edges[i+1] / lo); gap < bestGap {
				best, bestGap = i, gap
			}
		}
		if best < 0 {
			// Only thresholds and the largest edge left: the largest goes.
			best = len(edges) - 1
		}
		edges = slices.Delete(edges, best, best+1)
	}
	return edges
}

// Increase adds the observations between two scrapes of one histogram to
// acc (nil: a new one), as Prometheus's increase() reads a counter: a count
// that went down means the server restarted, and the later scrape alone is
// its increase. A change of edges starts afresh from the later scrape's
// increase; acc's edges are then the new ones.
func Increase(acc *slo.Histogram, prev, cur slo.Histogram) *slo.Histogram {
	inc := slo.Histogram{Edges: cur.Edges, Counts: slices.Clone(cur.Counts)}
	if slices.Equal(prev.Edges, cur.Edges) && !dropped(prev.Counts, cur.Counts) {
		for i := range inc.Counts {
			inc.Counts[i] -= prev.Counts[i]
		}
	}
	if acc == nil || !slices.Equal(acc.Edges, inc.Edges) {
		return &inc
	}
	for i := range acc.Counts {
		acc.Counts[i] += inc.Counts[i]
	}
	return acc
}

func dropped(prev, cur []float64) bool {
	for i := range cur {
		if cur[i] < prev[i] {
			return true
		}
	}
	return false
}

// Mix is the distribution of several histograms of one family (same
// edges), each weighted to the same total: TPOT (one observation per
// request) and ITL (one per output step) share edges, and neither should
// drown the other. Histograms with other edges than the first, or without
// observations, are left out; nil when none is left.
func Mix(hs []slo.Histogram) *slo.Histogram {
	var out *slo.Histogram
	for _, h := range hs {
		total := h.Total()
		if !(total > 0) || (out != nil && !slices.Equal(out.Edges, h.Edges)) {
			continue
		}
		if out == nil {
			out = &slo.Histogram{Edges: slices.Clone(h.Edges), Counts: make([]float64, len(h.Counts))}
		}
		for i, c := range h.Counts {
			out.Counts[i] += c / total
		}
	}
	return out
}

// Representative is one metric whose histogram uses the family's edges.
func Representative(f Family) slo.Metric {
	switch f {
	case TimeToFirstToken:
		return slo.TTFT
	case InterTokenLatency:
		return slo.TPOT
	}
	return slo.E2E
}
