package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// Recording layout shared by every scenario: a scrape every recordStep of
// virtual time, recordScrapes+1 of them (the first at the sim's start), so the
// last one is at recordStart + recordScrapes·recordStep.
const (
	recordStep    = 15 * time.Second
	recordScrapes = 12
	replayTarget  = "vllm"
)

// recordStart is the virtual start of every recording (fixed, so the goldens
// are stable).
var recordStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// replayConfig is the configuration the recordings are replayed with. The
// windows end at the last scrape and begin exactly on earlier scrapes, so the
// pipeline's window (p0, p1] is the interval the truth is counted over.
const replayConfig = `global:
  scrape_interval: 15s
  scrape_timeout: 10s
  windows: [1m, 2m, 3m]
  quantiles: [0.5, 0.9, 0.99]
targets:
  - name: vllm
    url: http://127.0.0.1:8000/metrics
    labels: {gpu: sim}
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.99
    period: 1d
  - name: batch
    objectives: {e2e: 12s, ttft: 300ms}
    goal: 0.95
    period: 1d
cost:
  gpu_hourly_cost: 2.0
  currency: USD
`

// scenario is one recording: a sim configuration and what happens during it.
type scenario struct {
	name string
	// config returns the sim configuration; nil means the "steady" preset.
	config func() (sim.Config, error)
	// style returns the exposition style of scrape i; nil means the config's.
	style func(i int) *sim.Style
	// restartAt, when positive, restarts the sim right after scrape
	// restartAt (a nanosecond later, a ScheduledRestart of its
	// configuration: that scrape sees the server before the restart).
	restartAt      int
	restartBuckets *sim.Buckets
}

func steady(mod func(*sim.Config)) func() (sim.Config, error) {
	return func() (sim.Config, error) {
		c, err := sim.Preset("steady", 7, recordStart)
		if err == nil && mod != nil {
			mod(&c)
		}
		return c, err
	}
}

// scenarios are the replay goldens: the exposition styles real vLLM servers
// show (one process or several, OpenMetrics, two engines, two models, old
// metric names, integer le labels) and what happens to them (a restart, a
// restart with new buckets), each recorded on a virtual clock and replayed
// through the binary against its golden.
var scenarios = []scenario{
	{name: "single-process", config: steady(func(c *sim.Config) { c.Models[0].Engines = 1 })},
	{name: "multi-process", config: steady(func(c *sim.Config) { c.Style = sim.Style{Format: sim.MultiProcess, APIServers: 3} })},
	{name: "openmetrics", config: steady(func(c *sim.Config) { c.Style = sim.Style{Format: sim.OpenMetrics} })},
	{name: "two-engines", config: steady(func(c *sim.Config) { c.Style = sim.Style{TextVersion1: true} })},
	{name: "two-models", config: func() (sim.Config, error) { return sim.Preset("multi-model", 7, recordStart) }},
	{name: "restart", config: steady(nil), restartAt: 6},
	{name: "bucket-change", config: steady(nil), restartAt: 6, restartBuckets: &sim.Buckets{
		TTFT:           []float64{0.05, 0.1, 0.3, 0.5, 1, 2, 5, 10},
		ITL:            []float64{0.02, 0.04, 0.05, 0.08, 0.16, 0.5, 1},
		RequestLatency: []float64{0.5, 1, 2, 4, 8, 12, 16, 32, 64, 128},
	}},
	{name: "old-names", config: steady(func(c *sim.Config) { c.Style = sim.Style{OldNames: true} })},
	// The first half serves le="1.0", the second le="1" (Prometheus 3 style
	// normalisation differs from prometheus_client's): the same buckets.
	{name: "integer-le", config: steady(nil), style: func(i int) *sim.Style {
		return &sim.Style{IntegerLE: i > recordScrapes/2}
	}},
}

// generate runs the scenario on a virtual clock and returns its scrapes and
// the ground truth at the last scrape.
func (sc scenario) generate() ([]recording.Entry, sim.Truth, error) {
	cfg, err := sc.config()
	if err != nil {
		return nil, nil, fmt.Errorf("scenario %s: %w", sc.name, err)
	}
	if sc.restartAt > 0 {
		at := recordStart.Add(time.Duration(sc.restartAt)*recordStep + time.Nanosecond)
		cfg.Restarts = append(cfg.Restarts, sim.ScheduledRestart{At: at.Sub(cfg.Start), Buckets: sc.restartBuckets})
	}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("scenario %s: %w", sc.name, err)
	}
	var entries []recording.Entry
	for i := 0; i <= recordScrapes; i++ {
		at := recordStart.Add(time.Duration(i) * recordStep)
		s.AdvanceTo(at)
		var body []byte
		var ct string
		if sc.style != nil {
			body, ct = s.ExpositionStyle(*sc.style(i))
		} else {
			body, ct = s.Exposition()
		}
		entries = append(entries, recording.Entry{Time: at, Target: replayTarget, Status: 200, ContentType: ct, Body: string(body)})
	}
	return entries, s.Truth(), nil
}

// writeRecording writes entries to path (gzip when it ends in .gz).
func writeRecording(t *testing.T, path string, entries []recording.Entry) {
	t.Helper()
	w, err := recording.Create(path)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}
