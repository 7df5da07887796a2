package notify

import (
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// TestGeneratorURL: a burn-rate alert links to its SLO's console page on
// the target it came from, a target-level alert to the overview, and
// nothing without an external URL.
func TestGeneratorURL(t *testing.T) {
	burn := pipeline.Alert{Target: "gpu 0", Labels: map[string]string{"alertname": pipeline.AlertBurnRate, "model_name": "Qwen/Qwen2.5-7B", "slo": "interactive"}}
	down := pipeline.Alert{Target: "gpu0", Labels: map[string]string{"alertname": pipeline.AlertTargetDown, "target": "gpu0"}}
	for _, c := range []struct {
		base string
		a    pipeline.Alert
		want string
	}{
		{"https://slo.example.com/console/", burn, "https://slo.example.com/console/slo?model=Qwen%2FQwen2.5-7B&slo=interactive&target=gpu+0"},
		{"http://127.0.0.1:10042", down, "http://127.0.0.1:10042/"},
		{"", burn, ""},
	} {
		if got := generatorURL(c.base, c.a); got != c.want {
			t.Errorf("generatorURL(%q, %v) = %q, want %q", c.base, c.a.Labels, got, c.want)
		}
	}
}
