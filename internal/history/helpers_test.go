package history

import (
	"flag"
	"math"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// t0 is minute-aligned so that coarse-tier buckets fall on round offsets.
var t0 = time.Unix(1_700_000_040, 0).UTC()

var inf = math.Inf(1)

// edges3 is a small latency layout used by most tests.
var edges3 = []float64{0.1, 0.5, inf}

// at returns t0 plus seconds.
func at(sec float64) time.Time {
	return t0.Add(time.Duration(sec * float64(time.Second)))
}

// hist builds a histogram from edges and cumulative counts; the sum is given.
func hist(edges []float64, sum float64, counts ...float64) slo.Histogram {
	return slo.Histogram{Edges: edges, Counts: counts, Sum: sum}
}

// sample is a hand-built model sample: a TTFT histogram, the token and
// request counters, running/waiting gauges and a created time. Negative
// gauge values mean absent.
type sample struct {
	ttft             slo.Histogram
	gen, prompt, req float64
	running, waiting float64
	created          float64
}

func (s sample) model() *scrape.ModelSample {
	ms := &scrape.ModelSample{
		Histograms: map[scrape.Family]slo.Histogram{},
		Counters:   map[scrape.Family]float64{},
		Gauges:     map[scrape.Family]float64{},
		Created:    s.created,
	}
	if s.ttft.Edges != nil {
		ms.Histograms[scrape.TTFT] = s.ttft
	}
	ms.Counters[scrape.GenerationTokens] = s.gen
	ms.Counters[scrape.PromptTokens] = s.prompt
	ms.Counters[scrape.RequestSuccess] = s.req
	if s.running >= 0 {
		ms.Gauges[scrape.Running] = s.running
	}
	if s.waiting >= 0 {
		ms.Gauges[scrape.Waiting] = s.waiting
	}
	return ms
}

// snap wraps one model's sample into a snapshot at t.
func snap(t time.Time, model string, s sample) *scrape.Snapshot {
	return &scrape.Snapshot{Time: t, Models: map[string]*scrape.ModelSample{model: s.model()}}
}

// keepAll retains every point for a long time.
var keepAll = Retention{Tiers: []Tier{{Step: 0, Keep: 1000 * time.Hour}}}

// synthetic generates realistic snapshots: nHists histograms of ~20 buckets
// growing by a few observations per scrape, counters and gauges, with a
// restart every restartEvery scrapes (0: never).
type synthetic struct {
	nHists       int
	restartEvery int
	n            int
	edges        []float64
	counts       [][]float64
	sums         []float64
	gen          float64
	created      float64
	ms           *scrape.ModelSample
}

var syntheticFamilies = []scrape.Family{
	scrape.TTFT, scrape.TPOT, scrape.ITL, scrape.E2E, scrape.Queue, scrape.Prefill,
	scrape.Decode, scrape.Inference, scrape.PromptTokensHist, scrape.GenerationTokensHist,
}

func newSynthetic(nHists, restartEvery int) *synthetic {
	g := &synthetic{nHists: min(nHists, len(syntheticFamilies)), restartEvery: restartEvery}
	for i := 0; i < 19; i++ {
		g.edges = append(g.edges, 0.01*math.Pow(1.6, float64(i)))
	}
	g.edges = append(g.edges, inf)
	g.counts = make([][]float64, g.nHists)
	g.sums = make([]float64, g.nHists)
	for i := range g.counts {
		g.counts[i] = make([]float64, len(g.edges))
	}
	g.ms = &scrape.ModelSample{
		Histograms: map[scrape.Family]slo.Histogram{},
		Counters:   map[scrape.Family]float64{},
		Gauges:     map[scrape.Family]float64{},
	}
	return g
}

// next returns the sample at scrape n (reused between calls: History copies).
func (g *synthetic) next(t time.Time) *scrape.Snapshot {
	g.n++
	if g.restartEvery > 0 && g.n%g.restartEvery == 0 {
		for i := range g.counts {
			clear(g.counts[i])
			g.sums[i] = 0
		}
		g.gen = 0
		g.created = float64(t.Unix()) - 1
	}
	for i := range g.counts {
		b := (g.n*7 + i*3) % len(g.edges)
		for j := b; j < len(g.edges); j++ {
			g.counts[i][j] += float64(1 + g.n%3)
		}
		g.sums[i] += g.edges[max(b-1, 0)] * float64(1+g.n%3)
		g.ms.Histograms[syntheticFamilies[i]] = slo.Histogram{Edges: g.edges, Counts: g.counts[i], Sum: g.sums[i]}
	}
	g.gen += float64(50 + g.n%17)
	g.ms.Counters[scrape.GenerationTokens] = g.gen
	g.ms.Counters[scrape.PromptTokens] = 3 * g.gen
	g.ms.Counters[scrape.RequestSuccess] = g.gen / 50
	g.ms.Gauges[scrape.Running] = float64(g.n % 11)
	g.ms.Gauges[scrape.Waiting] = float64(g.n % 5)
	g.ms.Created = g.created
	return &scrape.Snapshot{Time: t, Models: map[string]*scrape.ModelSample{"m": g.ms}}
}
