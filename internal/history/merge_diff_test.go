package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// mergePartsPlain sums histogram increases on the edges they all share,
// every part at the end into fresh counts (the parts' sum as first
// written): the reference the running sum of merged must match to the bit.
func mergePartsPlain(ps []part) slo.Histogram {
	edges := ps[0].edges
	for _, p := range ps[1:] {
		edges = commonEdges(edges, p.edges)
	}
	out := slo.Histogram{Edges: append([]float64(nil), edges...), Counts: make([]float64, len(edges))}
	for _, p := range ps {
		j := 0
		for i, e := range out.Edges {
			for p.edges[j] != e {
				j++
			}
			out.Counts[i] += p.counts[j]
		}
		out.Sum += p.sum
	}
	return out
}

// TestMergedIsThePlainSum compares merged, fed the parts one by one, with
// mergePartsPlain on
// random parts (one or several, layouts differing, counts with −0, NaN and
// infinities), asserting equal bits of every edge, count and sum.
func TestMergedIsThePlainSum(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 43))
	all := []float64{0.1, 0.5, 1, 2, 5, 10, math.Inf(1)}
	odd := []float64{math.Copysign(0, -1), 0, math.NaN(), math.Inf(1), math.Inf(-1), 1e-310}
	val := func() float64 {
		if r.IntN(4) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return float64(r.IntN(100)) + r.Float64()*float64(r.IntN(2))
	}
	bits := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	}
	for trial := range 5000 {
		ps := make([]part, 1+r.IntN(3)*r.IntN(2))
		for n := range ps {
			var edges []float64
			for _, e := range all[:len(all)-1] {
				if r.IntN(3) > 0 {
					edges = append(edges, e)
				}
			}
			edges = append(edges, math.Inf(1))
			p := part{edges: edges, counts: make([]float64, len(edges)), sum: val()}
			for i := range p.counts {
				p.counts[i] = val()
			}
			ps[n] = p
		}
		plain := make([]part, len(ps))
		for n, p := range ps {
			plain[n] = part{edges: p.edges, counts: slices.Clone(p.counts), sum: p.sum}
		}
		want := mergePartsPlain(plain)
		var m merged
		for _, p := range ps {
			m.add(p)
		}
		got := m.histogram()
		if !bits(got.Edges, want.Edges) || !bits(got.Counts, want.Counts) || math.Float64bits(got.Sum) != math.Float64bits(want.Sum) {
			t.Fatalf("trial %d: %+v, the plain sum gives %+v", trial, got, want)
		}
	}
}
