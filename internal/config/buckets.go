package config

import (
	"maps"
	"math"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// validateHistogramBuckets checks global.histogram_buckets: vLLM's latency
// families only, each a non-empty ascending list of positive finite edges.
func validateHistogramBuckets(g *Global) *fieldError {
	for _, name := range slices.Sorted(maps.Keys(g.HistogramBuckets)) {
		path := "global.histogram_buckets." + name
		if !slices.Contains(buckets.Families, buckets.Family(name)) {
			return errorf(path, "unknown bucket family (known: %v)", buckets.Families)
		}
		edges := g.HistogramBuckets[name]
		if len(edges) == 0 {
			return errorf(path, "at least one edge is required (leave the family out for vLLM's defaults)")
		}
		for i, e := range edges {
			if !(e > 0) || math.IsInf(e, 0) {
				return errorf(path, "edge %v must be positive and finite", e)
			}
			if i > 0 && e <= edges[i-1] {
				return errorf(path, "edge %v is not above %v: edges must ascend", e, edges[i-1])
			}
		}
	}
	return nil
}

// BucketEdges are the finite bucket edges the servers expose for a latency
// metric's histogram: global.histogram_buckets when it names the metric's
// family, else vLLM's defaults. Only what cannot read a scrape (the
// generated rules) needs this; the daemon reads the edges of every scrape.
func (g Global) BucketEdges(m slo.Metric) []float64 {
	if edges, ok := g.HistogramBuckets[string(buckets.FamilyOf(m))]; ok {
		return edges
	}
	return buckets.Default(buckets.FamilyOf(m))
}
