package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// restarting generates a model that restarts often: at every scrape, or
// with probability p, with now and then a bucket-layout change that
// continues the segment, a family that joins (a new layout: a new run),
// whole-number gauges and, unless whole, sums that are not whole numbers.
type restarting struct {
	p       float64
	whole   bool
	edges   []float64
	counts  []float64
	sum     float64
	gen     float64
	extra   bool // the queue histogram is exposed
	created float64
}

func (g *restarting) next(r *rand.Rand, at time.Time) *scrape.ModelSample {
	if g.edges == nil || r.Float64() < g.p {
		if g.edges == nil || r.IntN(50) == 0 {
			g.edges = []float64{0.1, 0.5, 1, inf}
			g.extra = r.IntN(2) == 0
		}
		g.counts, g.sum, g.gen = make([]float64, len(g.edges)), 0, 0
		g.created = float64(at.Unix()) - float64(r.IntN(20))
	}
	if r.IntN(200) == 0 { // a layout change that continues the segment
		g.edges = []float64{0.1, 1, inf}
		total := g.counts[len(g.counts)-1]
		g.counts = []float64{total, total, total}
	}
	b := r.IntN(len(g.counts))
	add := float64(r.IntN(5))
	for i := b; i < len(g.counts); i++ {
		g.counts[i] += add
	}
	if g.whole {
		g.sum += add * float64(1+r.IntN(3))
	} else {
		g.sum += add * r.Float64()
	}
	g.gen += float64(r.IntN(100))
	ms := &scrape.ModelSample{
		Histograms: map[scrape.Family]slo.Histogram{scrape.TTFT: {Edges: g.edges, Counts: append([]float64(nil), g.counts...), Sum: g.sum}},
		Counters:   map[scrape.Family]float64{scrape.GenerationTokens: g.gen, scrape.PromptTokens: 2 * g.gen},
		Gauges:     map[scrape.Family]float64{scrape.Running: float64(r.IntN(9)), scrape.Waiting: float64(r.IntN(3))},
		Created:    g.created,
	}
	if g.extra {
		ms.Histograms[scrape.Queue] = slo.Histogram{Edges: g.edges, Counts: append([]float64(nil), g.counts...), Sum: g.sum}
	}
	if r.IntN(7) == 0 {
		delete(ms.Gauges, scrape.Waiting) // an unknown gauge now and then
	}
	return ms
}

// TestRunsAreThePieceByPieceSum compares every window of histories that
// restart at every scrape, or often, with the same window summed piece by
// piece (mergeNone), on raw and coarse tiers, with and without a warm-up or
// a memory limit, and after a state restore (which rebuilds the runs from
// the points). With whole-number values both must print the same to the
// bit; with sums that are not whole numbers, everything else must, and
// each sum must lie within the rounding both orders allow (see
// runSumSlack).
func TestRunsAreThePieceByPieceSum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	ret := Retention{Tiers: []Tier{{Step: 0, Keep: 10 * time.Minute}, {Step: time.Minute, Keep: 2 * time.Hour}, {Step: 5 * time.Minute, Keep: 1000 * time.Hour}}}
	var compared, merged, crossed int
	for trial := range 24 {
		g := &restarting{p: []float64{1, 1, 0.6, 0.2}[trial%4], whole: trial%3 != 2}
		rt := ret
		if trial%5 == 4 {
			rt.MaxBytes = 200 << 10
		}
		h := New(rt)
		end := t0
		for n := range 1500 {
			end = t0.Add(time.Duration(n) * 15 * time.Second)
			if err := h.Append(&scrape.Snapshot{Time: end, Models: map[string]*scrape.ModelSample{"m": g.next(r, end)}}); err != nil {
				t.Fatalf("trial %d, scrape %d: %v", trial, n, err)
			}
		}
		data, err := h.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		restored := New(rt)
		if err := restored.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		sr, rsr := h.models["m"], restored.models["m"]
		for range 150 {
			at := end.Add(-time.Duration(r.IntN(int(2*time.Hour/time.Second))) * time.Second)
			length := time.Duration(1+r.IntN(int(7*time.Hour/time.Second))) * time.Second
			opts := Options{}
			if r.IntN(2) == 0 {
				opts.Warmup = time.Duration(r.IntN(40)) * time.Second
			}
			if r.IntN(3) == 0 {
				opts.MaxGap = 30 * time.Second
			}
			got, okG := sr.window(at, length, opts, h.ret.Tiers)
			want, okW := sr.windowWith(at, length, opts, h.ret.Tiers, mergeNone)
			if okG != okW {
				t.Fatalf("trial %d: window ending %v, %v: ok %v, piece by piece %v", trial, at, length, okG, okW)
			}
			if !okG {
				continue
			}
			where := fmt.Sprintf("trial %d: window ending %v, %v, %+v", trial, at.Sub(t0), length, opts)
			compareRunWindow(t, where, got, want, !g.whole)
			againPlain, _ := rsr.windowWith(at, length, opts, restored.ret.Tiers, mergeNone)
			compareRunWindow(t, where+", restored plain", againPlain, want, !g.whole)
			again, _ := rsr.window(at, length, opts, restored.ret.Tiers)
			compareRunWindow(t, where+", restored", again, want, !g.whole)
			compared++
			i1 := sr.lastAtOrBefore(clampNanos(at))
			i0 := sr.lastAtOrBefore(clampNanos(got.Start))
			mode := mergeRaw
			if opts.Warmup > 0 {
				mode = mergeWarm
			}
			wk := sr.walkWith(i0, i1, mode)
			for _, pc := range wk.pieces {
				if pc.run != nil {
					merged++
				}
			}
			crossed += wk.crossed
		}
	}
	if compared < 2500 || merged < 1000 || crossed < 10000 {
		t.Fatalf("only %d windows compared, %d run pieces, %d blocks crossed", compared, merged, crossed)
	}
	t.Logf("%d windows compared, %d run pieces, %d blocks crossed", compared, merged, crossed)
}

// compareRunWindow fails unless got and want print the same, their sums
// aside when fractional is set, each of which must then be within
// runSumSlack of the other.
func compareRunWindow(t *testing.T, where string, got, want slo.Window, fractional bool) {
	t.Helper()
	if fractional {
		for m, h := range want.Latency {
			g := got.Latency[m]
			if d := math.Abs(g.Sum - h.Sum); d > runSumSlack() {
				t.Fatalf("%s: %s sum %v, piece by piece %v", where, m, g.Sum, h.Sum)
			}
			g.Sum = h.Sum
			got.Latency[m] = g
		}
	}
	if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
		t.Fatalf("%s:\nfrom runs      %s\npiece by piece %s", where, g, w)
	}
}

// runSumSlack bounds how far apart two float sums of the same window's
// _sum terms can lie. Every term is below 4 (at most 4 observations at a
// fraction below 1 each) and at most 1500 were ever appended, so every
// partial sum, every cum and every window sum lies below 6000, where one
// addition or subtraction rounds by at most u·6000 (u = 2⁻⁵³). Summed one
// by one, a window's sum takes at most 1500 additions; summed from the
// cums, at most 2·runBlock additions and one subtraction of two cums, each
// cum itself at most 1500 additions: at most 3100 roundings. Each sum lies
// within 3100·u·6000 of the exact one, so the two lie within twice that.
func runSumSlack() float64 {
	return 2 * 3100 * 6000 * math.Pow(2, -53)
}
