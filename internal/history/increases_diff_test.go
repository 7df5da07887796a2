package history

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// increasesPlain is increases as first written: every piece's part kept per
// family and all of them summed at the end by mergePartsPlain. The
// reference the merge as the pieces come must match to the bit.
func (s *series) increasesPlain(pieces []piece) increases {
	parts := map[key][]part{}
	layouts := map[key][]float64{}
	out := increases{hists: map[key]slo.Histogram{}, counters: map[scrape.Family]float64{}}
	for n, pc := range pieces {
		to := s.at(pc.to).values()
		var from []float64
		var base *baseline
		switch {
		case pc.from >= 0:
			from = s.at(pc.from).values()
		case pc.seg.continues && n > 0:
			prev := pieces[n-1]
			base = &baseline{seg: prev.seg, vals: s.at(prev.to).values()}
		}
		empty := pc.from == pc.to
		for i := range pc.seg.entries {
			e := &pc.seg.entries[i]
			if e.end() > len(to) {
				break // entries are in offset order: the rest came later
			}
			if e.kind == scrape.KindCounter {
				out.counters[e.fam] += delta(to, from, e.off) - base.counter(e.key)
				continue
			}
			layouts[e.key] = e.edges
			if empty {
				continue
			}
			p := part{edges: e.edges, counts: make([]float64, len(e.edges))}
			for j := range p.counts {
				p.counts[j] = delta(to, from, e.off+j)
			}
			p.sum = delta(to, from, e.off+len(e.edges))
			parts[e.key] = append(parts[e.key], base.subtract(e.key, p))
		}
	}
	for k, edges := range layouts {
		ps := parts[k]
		if len(ps) == 0 {
			ps = []part{{edges: edges, counts: make([]float64, len(edges))}}
		}
		out.hists[k] = mergePartsPlain(ps)
	}
	return out
}

// TestIncreasesIsThePlainMerge compares increases with increasesPlain on
// the windows of random histories (restarts, layout changes that continue
// a segment, families joining mid-segment, −0 counts, packed coarse points,
// warm-ups): every field of both windows must print the same.
func TestIncreasesIsThePlainMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 10))
	ret := Retention{Tiers: []Tier{{Step: 0, Keep: 20 * time.Minute}, {Step: time.Minute, Keep: 1000 * time.Hour}}}
	compared, several := 0, 0
	for trial := range 40 {
		h := New(ret)
		g := newRandomSamples(r)
		for n := range 200 {
			at := t0.Add(time.Duration(n) * 15 * time.Second)
			if err := h.Append(&scrape.Snapshot{Time: at, Models: map[string]*scrape.ModelSample{"m": g.next(r, at)}}); err != nil {
				t.Fatalf("trial %d, scrape %d: %v", trial, n, err)
			}
		}
		sr := h.models["m"]
		for range 200 {
			i0 := r.IntN(sr.len() - 1)
			i1 := i0 + 1 + r.IntN(sr.len()-i0-1)
			pieces, _ := sr.walk(i0, i1)
			if r.IntN(2) == 0 {
				warm := time.Duration(r.IntN(600)) * time.Second
				for i := range pieces {
					sr.skipWarmup(&pieces[i], warm)
				}
			}
			want := slo.Window{Latency: map[slo.Metric]slo.Histogram{}}
			sr.increasesPlain(pieces).fill(&want)
			got := slo.Window{Latency: map[slo.Metric]slo.Histogram{}}
			sr.increases(pieces).fill(&got)
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
				t.Fatalf("trial %d, window (%d, %d], %d pieces:\nmerged as they come %s\nmerged at the end    %s", trial, i0, i1, len(pieces), g, w)
			}
			compared++
			if len(pieces) > 2 {
				several++
			}
		}
	}
	if compared < 5000 || several < 1000 {
		t.Fatalf("only %d windows compared (%d of more than two pieces)", compared, several)
	}
	t.Logf("%d windows compared, %d of more than two pieces", compared, several)
}
