package history

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestOnePieceIsTheMergedSum compares a one-piece window's increases
// computed by fillOnePiece with the general path (increases, then fill) on
// random histories: families that appear mid-segment (a point's values
// then cover only part of the layout), −0 and zero counts, restarts,
// layout changes, coarse tiers (packed points) and warm-ups that empty a
// piece. Every field of both windows must print the same (fmt prints −0
// and distinct floats distinctly).
func TestOnePieceIsTheMergedSum(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 9))
	ret := Retention{Tiers: []Tier{{Step: 0, Keep: 20 * time.Minute}, {Step: time.Minute, Keep: 1000 * time.Hour}}}
	compared, empties := 0, 0
	for trial := range 40 {
		h := New(ret)
		g := newRandomSamples(r)
		for n := range 150 {
			at := t0.Add(time.Duration(n) * 15 * time.Second)
			if err := h.Append(&scrape.Snapshot{Time: at, Models: map[string]*scrape.ModelSample{"m": g.next(r, at)}}); err != nil {
				t.Fatalf("trial %d, scrape %d: %v", trial, n, err)
			}
		}
		sr := h.models["m"]
		for range 300 {
			i0 := r.IntN(sr.len() - 1)
			i1 := i0 + 1 + r.IntN(sr.len()-i0-1)
			pieces, _ := sr.walk(i0, i1)
			if len(pieces) != 1 {
				continue
			}
			if r.IntN(2) == 0 {
				sr.skipWarmup(&pieces[0], time.Duration(r.IntN(600))*time.Second)
			}
			want := slo.Window{Latency: map[slo.Metric]slo.Histogram{}}
			sr.increases(pieces).fill(&want)
			got := slo.Window{Latency: map[slo.Metric]slo.Histogram{}}
			sr.fillOnePiece(pieces[0], &got)
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
				t.Fatalf("trial %d, window (%d, %d], piece %+v:\none piece %s\nmerged    %s", trial, i0, i1, pieces[0], g, w)
			}
			compared++
			if pieces[0].from == pieces[0].to {
				empties++
			}
		}
	}
	if compared < 2000 || empties < 50 {
		t.Fatalf("only %d one-piece windows compared (%d empty)", compared, empties)
	}
	t.Logf("%d one-piece windows compared, %d of them empty", compared, empties)
}

// randomSamples draws a model's scrapes: latency and token histograms and
// counters that grow by small amounts (often by nothing, sometimes from −0),
// families that start later than others, and now and then a restart or a
// change of bucket layout.
type randomSamples struct {
	hists    map[scrape.Family]slo.Histogram
	counters map[scrape.Family]float64
	created  float64
}

var randomHistFamilies = []scrape.Family{scrape.TTFT, scrape.TPOT, scrape.E2E, scrape.Queue, scrape.PromptTokensHist, scrape.GenerationTokensHist, scrape.PreemptionsHist}

var randomCounterFamilies = []scrape.Family{scrape.PromptTokens, scrape.GenerationTokens, scrape.RequestSuccess, scrape.RequestAborted, scrape.Preemptions,
	scrape.PromptTokensComputed, scrape.PromptTokensCached, scrape.PromptTokensExternal}

func newRandomSamples(r *rand.Rand) *randomSamples {
	g := &randomSamples{}
	g.restart(r, t0)
	return g
}

// restart starts from zero: some families present from the first scrape,
// the others joining later.
func (g *randomSamples) restart(r *rand.Rand, at time.Time) {
	g.hists, g.counters = map[scrape.Family]slo.Histogram{}, map[scrape.Family]float64{}
	g.created = float64(at.Unix()) - 1
	for _, f := range randomHistFamilies {
		if r.IntN(3) > 0 {
			g.hists[f] = randomLayout(r)
		}
	}
	for _, f := range randomCounterFamilies {
		if r.IntN(3) > 0 {
			g.counters[f] = math.Copysign(0, -1)
		}
	}
}

// randomLayout is an empty histogram on a random subset of five edges
// (+Inf always), its counts −0.
func randomLayout(r *rand.Rand) slo.Histogram {
	var edges []float64
	for _, e := range []float64{0.05, 0.2, 1, 4} {
		if r.IntN(3) > 0 {
			edges = append(edges, e)
		}
	}
	edges = append(edges, math.Inf(1))
	counts := make([]float64, len(edges))
	for i := range counts {
		counts[i] = math.Copysign(0, -1)
	}
	return slo.Histogram{Edges: edges, Counts: counts, Sum: math.Copysign(0, -1)}
}

func (g *randomSamples) next(r *rand.Rand, at time.Time) *scrape.ModelSample {
	switch r.IntN(40) {
	case 0:
		g.restart(r, at)
	case 1: // one family's new layout, every count the old total: no count decreases, so a layout change that continues the segment
		if fams := slices.Sorted(maps.Keys(g.hists)); len(fams) > 0 {
			f := fams[r.IntN(len(fams))]
			h, old := randomLayout(r), g.hists[f]
			for i := range h.Counts {
				h.Counts[i] = old.Total()
			}
			h.Sum = old.Sum
			g.hists[f] = h
		}
	case 2, 3: // a family joins
		f := randomHistFamilies[r.IntN(len(randomHistFamilies))]
		if _, ok := g.hists[f]; !ok {
			g.hists[f] = randomLayout(r)
		}
		c := randomCounterFamilies[r.IntN(len(randomCounterFamilies))]
		if _, ok := g.counters[c]; !ok {
			g.counters[c] = 0
		}
	}
	ms := &scrape.ModelSample{Histograms: map[scrape.Family]slo.Histogram{}, Counters: map[scrape.Family]float64{}, Gauges: map[scrape.Family]float64{}, Created: g.created}
	for _, f := range slices.Sorted(maps.Keys(g.hists)) { // in order: the draws repeat
		h := g.hists[f]
		if r.IntN(3) > 0 {
			counts := append([]float64(nil), h.Counts...)
			b := r.IntN(len(counts))
			add := float64(r.IntN(4))
			for i := b; i < len(counts); i++ {
				counts[i] += add
			}
			h = slo.Histogram{Edges: h.Edges, Counts: counts, Sum: h.Sum + add*r.Float64()}
			g.hists[f] = h
		}
		ms.Histograms[f] = h
	}
	for _, f := range slices.Sorted(maps.Keys(g.counters)) {
		v := g.counters[f]
		if r.IntN(2) > 0 {
			v += float64(r.IntN(50)) * r.Float64()
			g.counters[f] = v
		}
		ms.Counters[f] = v
	}
	ms.Gauges[scrape.Running] = float64(r.IntN(9))
	ms.Gauges[scrape.Waiting] = float64(r.IntN(5))
	return ms
}
