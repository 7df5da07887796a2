package sim

import (
	"sort"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
)

// hist is one histogram child: per-bucket (not cumulative) counts, the last
// entry being the +Inf bucket.
type hist struct {
	edges  []float64
	counts []uint64
	sum    float64
	n      uint64
}

func newHist(edges []float64) hist {
	return hist{edges: edges, counts: make([]uint64, len(edges)+1)}
}

func (h *hist) observe(v float64) {
	i := sort.SearchFloat64s(h.edges, v) // first edge >= v, i.e. v <= le
	h.counts[i]++
	h.sum += v
	h.n++
}

// cumulative returns the count at or below each edge, +Inf last.
func (h *hist) cumulative() []uint64 {
	out := make([]uint64, len(h.counts))
	var c uint64
	for i, v := range h.counts {
		c += v
		out[i] = c
	}
	return out
}

// finishReasons are vLLM's FinishReason values in enum order; a
// request_success_total child exists for each from startup.
var finishReasons = []string{"stop", "length", "abort", "error", "repetition"}

// histID indexes an engine's histograms.
type histID int

// The histograms of one engine, in exposition order.
const (
	hPromptTokens histID = iota
	hGenerationTokens
	hTTFT
	hITL
	hTPOT
	hE2E
	hQueue
	hInference
	hPrefill
	hDecode
	hPreemptions // per request, at finish; exposed only in the Newest style
	numHists
)

// engineMetrics is the cumulative state vLLM's PrometheusStatLogger keeps for
// one engine since the (re)start.
type engineMetrics struct {
	hists        [numHists]hist
	promptTokens uint64
	genTokens    uint64
	success      [5]uint64 // by finishReasons index
	preemptions  uint64    // vllm:num_preemptions_total
}

func newEngineMetrics(l layout) engineMetrics {
	var m engineMetrics
	for id := range numHists {
		m.hists[id] = newHist(l.edges(histID(id)))
	}
	return m
}

func (l layout) edges(id histID) []float64 {
	switch id {
	case hPromptTokens, hGenerationTokens:
		return l.tokens
	case hTTFT:
		return l.ttft
	case hPreemptions:
		return buckets.Default(buckets.RequestNumPreemptions)
	case hITL, hTPOT:
		return l.itl
	default:
		return l.latency
	}
}
