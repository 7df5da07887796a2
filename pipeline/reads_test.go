package pipeline

import (
	"flag"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// defaultLikeSpec is the spec the default configuration gives one target
// and one SLO: windows 1m, 5m, 30m and 1h, a 30-day period and the three
// burn-rate alerts of the default policy (1h/5m, 6h/30m, 3d/6h).
func defaultLikeSpec(t testing.TB) Spec {
	spec := testSpec(t)
	s := interactive
	s.Period = 30 * 24 * time.Hour
	spec.SLOs = []slo.SLO{s}
	spec.Windows = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}
	spec.Alerts = []BurnAlert{
		{SLO: s.Name, Severity: "page", Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4},
		{SLO: s.Name, Severity: "page", Long: 6 * time.Hour, Short: 30 * time.Minute, Factor: 6},
		{SLO: s.Name, Severity: "ticket", Long: 72 * time.Hour, Short: 6 * time.Hour, Factor: 1},
	}
	spec.Retention = history.NewRetention(time.Hour, s.Period)
	return spec
}

// TestWindowReadsPerEvaluation counts the history windows one scrape and
// one evaluation read per model under the default windows and alerts.
var readsWarm = flag.Bool("reads.warm", false, "count with a warm-up")

func TestWindowReadsPerEvaluation(t *testing.T) {
	spec := defaultLikeSpec(t)
	if *readsWarm {
		spec.Targets[0].Warmup = time.Minute
	}
	p := New(spec)
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
	for at := start; !at.After(start.Add(3 * time.Minute)); at = at.Add(15 * time.Second) {
		scrapeInto(t, p, s, at)
	}
	before, _ := p.WindowReads("gpu0")
	scrapeInto(t, p, s, start.Add(3*time.Minute+15*time.Second))
	afterIngest, _ := p.WindowReads("gpu0")
	rep := p.Evaluate(start.Add(3*time.Minute + 15*time.Second))
	afterEval, _ := p.WindowReads("gpu0")
	models := len(rep.Targets[0].Models)
	if models != 1 {
		t.Fatalf("%d models, want 1", models)
	}
	_ = scrape.VLLM
	t.Logf("history window reads per model: ingest %d, evaluation %d", afterIngest-before, afterEval-afterIngest)
}
