package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

const capacityConfig = `targets:
  - name: gpu0
    url: http://127.0.0.1:8000/metrics
slos:
  - name: interactive
    objectives: {ttft: 500ms}
    goal: 0.99
`

// TestCapacityGroup: the ticket is generated with the configured margin and
// hold, the daemon's annotations written with label templates, and not at
// all with headroom_margin 0.
func TestCapacityGroup(t *testing.T) {
	out := generateString(t, capacityConfig+"capacity:\n  headroom_margin: 0.25\n  headroom_for: 30m\n")
	summary, _ := capacity.HeadroomAlertText("{{ $labels.target }}", "{{ $labels.model_name }}", "{{ $labels.slo }}", 0.25)
	for _, want := range []string{
		"alert: VLLMSLOCapacityHeadroomLow",
		"expr: max without (instance, job, kind) (vllm_slo_capacity_headroom_upper_ratio) < 0.25",
		"for: 30m", "severity: ticket", summary,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("generated rules lack %q", want)
		}
	}
	if off := generateString(t, capacityConfig+"capacity:\n  headroom_margin: 0\n"); strings.Contains(off, "VLLMSLOCapacityHeadroomLow") {
		t.Error("headroom_margin 0 still generates the ticket")
	}
}

// TestPromtoolCapacityTicket replays the exporter's headroom series through
// the generated ticket with promtool: silent while the upper end is above
// the margin, pending for the hold, firing with the daemon's labels and
// text, silent again after recovery, and never on a one-sided answer.
func TestPromtoolCapacityTicket(t *testing.T) {
	promtool(t)
	dir := t.TempDir()
	rules := generateString(t, capacityConfig+"capacity:\n  headroom_margin: 0.2\n  headroom_for: 15m\n")
	if err := os.WriteFile(filepath.Join(dir, "capacity_rules.yml"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join("testdata", "capacity_rules_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "capacity_rules_test.yml")
	if err := os.WriteFile(path, test, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "test", "rules", path)
}
