package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/sglangmetrics"
)

// sglangConfig is replayConfig with SLOs SGLang can measure (no TPOT).
const sglangConfig = `global:
  scrape_interval: 15s
  windows: [1m, 2m, 3m]
  quantiles: [0.5, 0.9, 0.99]
targets:
  - name: vllm
    url: http://127.0.0.1:8000/metrics
    profile: PROFILE
    labels: {gpu: sim}
slos:
  - name: batch
    objectives: {e2e: 12s, ttft: 300ms}
    goal: 0.95
    period: 1d
cost:
  gpu_hourly_cost: 2.0
  currency: USD
`

// TestReplaySGLang records one simulated server as vLLM and as SGLang serve
// it, and replays both: every series of the SGLang replay must be in the
// vLLM one with the same value (SGLang lacks some families, so it has fewer
// series, never other numbers).
func TestReplaySGLang(t *testing.T) {
	cfg, err := steady(func(c *sim.Config) { c.Models[0].Engines = 1 })()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var vllmEntries, sglangEntries []recording.Entry
	for i := 0; i <= recordScrapes; i++ {
		at := recordStart.Add(time.Duration(i) * recordStep)
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		vllmEntries = append(vllmEntries, recording.Entry{Time: at, Target: replayTarget, Status: 200, ContentType: ct, Body: string(body)})
		vbody, _ := s.ExpositionStyle(sim.Style{})
		sbody, sct, err := sglangmetrics.FromVLLM(vbody)
		if err != nil {
			t.Fatal(err)
		}
		sglangEntries = append(sglangEntries, recording.Entry{Time: at, Target: replayTarget, Status: 200, ContentType: sct, Body: string(sbody)})
	}
	dir := t.TempDir()
	replay := func(profile string, entries []recording.Entry) series {
		rec := filepath.Join(dir, profile+".jsonl")
		writeRecording(t, rec, entries)
		cfgFile := writeFile(t, dir, profile+".yaml", strings.Replace(sglangConfig, "PROFILE", profile, 1))
		out, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+cfgFile, "--recording="+rec)
		if code != 0 {
			t.Fatalf("replay with profile %s: exit %d\n%s", profile, code, stderr)
		}
		return parseExposition(t, out)
	}
	want := map[string]float64{}
	for _, smp := range replay("vllm", vllmEntries) {
		want[smp.key()] = smp.value
	}
	got := replay("sglang", sglangEntries)
	checked, skipped := 0, 0
	for _, smp := range got {
		// The sidecar's own series, and the size of its history (which grows
		// with the number of families stored), describe the sidecar, not the data.
		// The joint of every objective ("all" and what derives from it) is
		// matched first token to finish through vLLM's decode-time histogram,
		// which SGLang lacks: its bounds differ (both hold the truth, which
		// the truth tests check), so only the rest must be equal.
		// SGLang creates its aborted-request series at the first abort, so
		// until then that family is missing there and present (at 0) in vLLM.
		lazyAborted := smp.name == "vllm_slo_target_metric_missing" && strings.Contains(smp.key(), "metric=request_aborted")
		if strings.HasPrefix(smp.name, "vllm_slo_exporter_") || strings.HasPrefix(smp.name, "vllm_slo_target_history_") || fromJoint(smp) || lazyAborted {
			skipped++
			continue
		}
		w, ok := want[smp.key()]
		if !ok || !(w == smp.value || math.IsNaN(w) && math.IsNaN(smp.value)) {
			t.Errorf("%s = %v in the SGLang replay; vLLM's: %v (present %v)", smp.key(), smp.value, w, ok)
		}
		if strings.HasPrefix(smp.name, "vllm_slo_attainment") || strings.HasPrefix(smp.name, "vllm_slo_latency") {
			checked++
		}
	}
	t.Logf("%d series compared, %d of attainment or latency", len(got)-skipped, checked)
	if checked == 0 {
		t.Error("the SGLang replay has no attainment or latency series to compare")
	}
}

// fromJoint reports whether a series derives from the joint of an SLO's
// objectives (attainment of "all", goodput, burn rate, budget, abandoned).
func fromJoint(smp sample) bool {
	for _, p := range []string{"vllm_slo_burn_rate", "vllm_slo_goodput_", "vllm_slo_abandoned_", "vllm_slo_error_budget_remaining"} {
		if strings.HasPrefix(smp.name, p) {
			return true
		}
	}
	return smp.labels["objective"] == "all" || (strings.HasPrefix(smp.name, "vllm_slo_cost") && smp.labels["basis"] == "goodput")
}
