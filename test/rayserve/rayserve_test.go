package rayserve_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/rayserve"
)

// TestReexportSpeaksRayVLLM renders the simulator as Ray Serve re-exports it,
// in both spellings, and reads it with the ray-vllm profile: the snapshot
// must equal the vLLM profile's reading of the plain exposition in every
// value, with the Ray names found, and Ray's labels summed away.
func TestReexportSpeaksRayVLLM(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.DemoConfig(3, start))
	if err != nil {
		t.Fatal(err)
	}
	at := start.Add(2 * time.Minute)
	s.AdvanceTo(at)
	body, ct := s.ExpositionStyle(sim.Style{})
	plain, err := scrape.Parse(body, ct, scrape.VLLM, at)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{"ReplicaId": "llm:abc", "WorkerId": "w1", "Component": "core_worker", "SessionName": "s", "Version": "2.52.0"}
	for names, prefix := range map[rayserve.Names]string{rayserve.Underscore: "ray_vllm_", rayserve.Colon: "ray_vllm:"} {
		t.Run(prefix, func(t *testing.T) {
			ray := rayserve.Reexport(body, names, tags)
			for line := range strings.Lines(string(ray)) {
				if strings.HasPrefix(line, "vllm:") || strings.HasPrefix(line, prefix) && strings.Contains(line, "_created") {
					t.Fatalf("a vLLM name or a _created series left in: %s", line)
				}
			}
			snap, err := scrape.Parse(ray, ct, scrape.RayVLLM, at)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Missing) != len(plain.Missing) {
				t.Errorf("missing %v, want %v", snap.Missing, plain.Missing)
			}
			for f, name := range plain.Found {
				if want := strings.Replace(name, "vllm:", prefix, 1); snap.Found[f] != want {
					t.Errorf("%s read from %q, want %q", f, snap.Found[f], want)
				}
			}
			for model, want := range plain.Models {
				got := snap.Models[model]
				if got == nil {
					t.Fatalf("model %q missing", model)
				}
				same := len(got.Histograms) == len(want.Histograms)
				for f, h := range want.Histograms {
					g := got.Histograms[f]
					same = same && slices.Equal(g.Edges, h.Edges) && slices.Equal(g.Counts, h.Counts) && g.Sum == h.Sum
				}
				if !same || !maps.Equal(got.Counters, want.Counters) || !maps.Equal(got.Gauges, want.Gauges) {
					t.Errorf("model %q: Ray reading\n%+v\ndiffers from vLLM's\n%+v", model, got, want)
				}
				if got.Created != 0 {
					t.Errorf("model %q: Created %v from an exposition without _created", model, got.Created)
				}
			}
		})
	}
}
