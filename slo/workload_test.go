package slo

import (
	"math"
	"math/rand/v2"
	"slices"
)

// vLLM's default bucket edges (docs/design.md), without the +Inf bucket.
var (
	ttftEdges    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlEdges     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	requestEdges = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	tokenEdges   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
)

// histogramOf observes samples into a histogram with the given finite edges
// (+Inf appended), as a Prometheus client does: v counts in every bucket with
// v <= le.
func histogramOf(edges []float64, samples []float64) Histogram {
	h := Histogram{Edges: append(slices.Clone(edges), math.Inf(1)), Counts: make([]float64, len(edges)+1)}
	for _, v := range samples {
		h.Sum += v
		for i, e := range h.Edges {
			if v <= e {
				h.Counts[i]++
			}
		}
	}
	return h
}

// distribution draws one latency sample.
type distribution func(r *rand.Rand) float64

// lognormal has the given median and log-space standard deviation.
func lognormal(median, sigma float64) distribution {
	return func(r *rand.Rand) float64 { return median * math.Exp(sigma*r.NormFloat64()) }
}

// mixture draws from a with probability p, else from b.
func mixture(p float64, a, b distribution) distribution {
	return func(r *rand.Rand) float64 {
		if r.Float64() < p {
			return a(r)
		}
		return b(r)
	}
}

// exponential has the given mean.
func exponential(mean float64) distribution {
	return func(r *rand.Rand) float64 { return r.ExpFloat64() * mean }
}

// workload is one synthetic latency metric: a distribution and vLLM's edges
// for the metric it stands for.
type workload struct {
	name  string
	edges []float64
	dist  distribution
}

// workloads stand for what a vLLM server shows under load: skewed lognormal
// latencies, bimodal ones (short and long requests, queueing on and off) and
// the narrow-in-a-wide-bucket cases where histogram_quantile is worst.
var workloads = []workload{
	{"ttft lognormal", ttftEdges, lognormal(0.15, 0.8)},
	{"ttft queueing", ttftEdges, mixture(0.7, lognormal(0.05, 0.3), lognormal(1.5, 0.6))},
	{"tpot narrow", itlEdges, lognormal(0.03, 0.25)},
	{"itl lognormal", itlEdges, lognormal(0.035, 0.5)},
	{"e2e lognormal", requestEdges, lognormal(3, 0.8)},
	{"e2e short", requestEdges, lognormal(0.08, 0.5)},
	{"e2e bimodal", requestEdges, mixture(0.5, lognormal(0.6, 0.3), lognormal(8, 0.4))},
	{"queue mostly 0", requestEdges, mixture(0.6, exponential(0.01), lognormal(2, 1))},
}

// sample draws n sorted samples.
func (w workload) sample(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = w.dist(r)
	}
	slices.Sort(s)
	return s
}
