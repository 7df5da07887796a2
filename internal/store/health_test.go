package store

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var at = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestScrapesRecord: a good scrape is up at its time, a good scrape that
// left models out names the first rejection and counts each, a failure is
// down under its reason with its error, and a clone is left alone by the
// scrapes after it.
func TestScrapesRecord(t *testing.T) {
	var s Scrapes
	rejected := []scrape.Rejection{
		{Family: "ttft", Model: "a", Err: &scrape.ParseError{Reason: "invalid_histogram", Family: "vllm:time_to_first_token_seconds", Model: "a"}},
		{Family: "running", Model: "b", Err: &scrape.ParseError{Reason: "invalid_value", Family: "vllm:num_requests_running", Model: "b"}},
	}
	s.Succeeded(&scrape.Snapshot{Time: at, Rejected: rejected, Missing: []scrape.Family{"itl"},
		Found: map[scrape.Family]string{"ttft": "vllm:time_to_first_token_seconds"}}, 2*time.Second)
	if !s.Tried || !s.Up || !s.LastScrape.Equal(at) || s.Duration != 2 {
		t.Errorf("after a good scrape: %+v", s)
	}
	if !strings.HasPrefix(s.LastError, "model left out of the scrape: ") || !strings.HasSuffix(s.LastError, "(and 1 more rejected families)") {
		t.Errorf("last error %q, want the first rejection and the count of the others", s.LastError)
	}
	if s.Rejections[Rejection{Family: "ttft", Reason: "invalid_histogram"}] != 1 || s.Rejections[Rejection{Family: "running", Reason: "invalid_value"}] != 1 {
		t.Errorf("rejections %v", s.Rejections)
	}
	before := s.Clone()
	s.Failed("timeout", errors.New("context deadline exceeded"), at.Add(time.Minute), time.Second)
	s.Succeeded(&scrape.Snapshot{Time: at.Add(2 * time.Minute), Found: map[scrape.Family]string{"e2e": "vllm:e2e_request_latency_seconds"}}, 0)
	if s.Failures["timeout"] != 1 || s.LastError != "" || !s.Up || !slices.Equal(s.Missing, []string{}) || len(s.Found) != 1 {
		t.Errorf("after a failure and a clean scrape: %+v", s)
	}
	if !before.Up || before.Failures != nil || !slices.Equal(before.Missing, []string{"itl"}) || before.Found["ttft"] == "" || len(before.Found) != 1 {
		t.Errorf("the clone changed with later scrapes: %+v", before)
	}
	s.Failed("refused", nil, at.Add(3*time.Minute), 0)
	if s.Up || s.LastError != "" || !s.LastScrape.Equal(at.Add(3*time.Minute)) {
		t.Errorf("a failure without an error: %+v", s)
	}
}

// TestWarnings: a target that answers with none of the profile's families
// is warned about, one that serves some is not; a threshold between two
// edges is warned about once with its nearest edges, one on an edge never,
// and forgetting the edges drops the warning until the next check.
func TestWarnings(t *testing.T) {
	var s Scrapes
	s.Succeeded(&scrape.Snapshot{Time: at, Missing: []scrape.Family{"ttft", "e2e"}}, 0)
	if w := s.Warnings("vllm"); len(w) != 1 || !strings.Contains(w[0], `profile "vllm"`) {
		t.Errorf("warnings %q, want the profile mismatch", w)
	}
	h := slo.Histogram{Edges: []float64{0.1, 0.25, 0.5, math.Inf(1)}, Counts: []float64{1, 2, 3, 3}, Sum: 1}
	snap := &scrape.Snapshot{Time: at.Add(time.Minute), Found: map[scrape.Family]string{"ttft": "vllm:time_to_first_token_seconds"},
		Models: map[string]*scrape.ModelSample{"m": {Histograms: map[scrape.Family]slo.Histogram{"ttft": h}}}}
	s.Succeeded(snap, 0)
	slos := []slo.SLO{
		{Name: "fast", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.2}}},
		{Name: "edge", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.25}}},
		{Name: "absent", Objectives: []slo.Objective{{Metric: slo.TPOT, Threshold: 0.2}}},
	}
	s.CheckEdges(slos, snap)
	s.CheckEdges(slos, snap)
	w := s.Warnings("vllm")
	want := `SLO "fast" objective ttft <= 0.2s is not a bucket edge of model "m" (nearest edges 0.1 and 0.25)`
	if len(w) != 1 || !strings.HasPrefix(w[0], want) {
		t.Errorf("warnings %q, want one starting %q", w, want)
	}
	s.ForgetEdges()
	if w := s.Warnings("vllm"); len(w) != 0 {
		t.Errorf("warnings %q after forgetting the edges", w)
	}
}

// TestCap: models the history already holds always pass, new ones only up
// to the cap, each refused one is counted, and the caller's snapshot keeps
// every model.
func TestCap(t *testing.T) {
	models := map[string]*scrape.ModelSample{"a": {}, "b": {}, "c": {}, "d": {}}
	snap := &scrape.Snapshot{Time: at, Models: models}
	for _, c := range []struct {
		name    string
		known   []string
		max     int
		want    []string
		dropped float64
	}{
		{"no cap", nil, 0, []string{"a", "b", "c", "d"}, 0},
		{"room for all", nil, 4, []string{"a", "b", "c", "d"}, 0},
		{"new ones in name order", nil, 2, []string{"a", "b"}, 2},
		{"known ones first", []string{"d"}, 2, []string{"a", "d"}, 2},
		{"known beyond the cap stay", []string{"c", "d"}, 1, []string{"c", "d"}, 2},
	} {
		var s Scrapes
		got := s.Cap(snap, c.known, c.max)
		if names := slices.Sorted(maps.Keys(got.Models)); !slices.Equal(names, c.want) || s.ModelsDropped != c.dropped {
			t.Errorf("%s: kept %q, dropped %v; want %q, %v", c.name, names, s.ModelsDropped, c.want, c.dropped)
		}
		if len(snap.Models) != 4 {
			t.Fatalf("%s: the caller's snapshot lost models: %d left", c.name, len(snap.Models))
		}
	}
}
