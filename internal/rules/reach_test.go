package rules

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestReachesOf checks the decode-time reaches on vLLM's default
// request-latency edges at a 15 s interval: each edge's finishers reach
// back within its intervals given its freshness, (k−1)·i − e − m = fresh >
// 0, and each edge is the largest that does for its look-back (2, 3, 5
// and 10 intervals, each fresh by less than an interval also one interval
// further back, where no earlier reach already is).
func TestReachesOf(t *testing.T) {
	i := 15 * time.Second
	got := reachesOf(buckets.Default(buckets.RequestLatency), i)
	want := []decodeReach{
		{10, 2, 4 * time.Second}, {10, 3, 19 * time.Second},
		{20, 3, 9 * time.Second}, {20, 4, 24 * time.Second},
		{50, 5, 9 * time.Second}, {50, 6, 24 * time.Second},
		{120, 10, 14 * time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("reachesOf = %v, want %v", got, want)
	}
	for j, r := range got {
		if r != want[j] {
			t.Errorf("reach %d = %v, want %v", j, r, want[j])
		}
		e := time.Duration(math.Round(r.edge * 1e9))
		if r.fresh != time.Duration(r.back-1)*i-e-slo.MatchMargin || r.fresh <= 0 {
			t.Errorf("reach %v: fresh is not (k-1)*i - e - m > 0", r)
		}
	}
}
