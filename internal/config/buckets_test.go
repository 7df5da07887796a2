package config

import (
	"strings"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestHistogramBuckets: custom edges are validated by family, and a family
// left out keeps vLLM's defaults.
func TestHistogramBuckets(t *testing.T) {
	const rest = "\ntargets: [{name: a, url: \"http://127.0.0.1:8000/metrics\"}]\nslos: [{name: s, objectives: {ttft: 200ms}, goal: 0.9}]\n"
	for _, tc := range []struct{ buckets, err string }{
		{"{time_to_first_token: [0.1, 0.2]}", ""},
		{"{ttft: [0.1]}", "global.histogram_buckets.ttft: unknown bucket family"},
		{"{request_latency: []}", "at least one edge is required"},
		{"{request_latency: [1, 0.5]}", "edge 0.5 is not above 1"},
		{"{inter_token_latency: [-1]}", "edge -1 must be positive and finite"},
	} {
		cfg, err := Parse([]byte("global: {histogram_buckets: "+tc.buckets+"}"+rest), "c.yaml")
		if tc.err == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.buckets, err)
			}
			if got := cfg.Global.BucketEdges(slo.TTFT); len(got) != 2 || got[1] != 0.2 {
				t.Errorf("TTFT edges %v, want the configured [0.1 0.2]", got)
			}
			if got := cfg.Global.BucketEdges(slo.E2E); len(got) != 21 {
				t.Errorf("e2e edges %v, want vLLM's 21 defaults", got)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one containing %q", tc.buckets, err, tc.err)
		}
	}
}
