package pipeline

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestResetEveryScrapeStaysBounded: a target whose process restarts at
// every scrape (a new `_created` each time) makes every point the last of
// its segment, which the tiers keep for the whole period. The memory limit
// then drops the oldest points, and the ledger follows: its checkpoints
// never outnumber the history's points by more than the scrapes of one
// thinning interval, so both stay bounded however long it goes on.
func TestResetEveryScrapeStaysBounded(t *testing.T) {
	spec := testSpec(t)
	spec.HistoryLimit = 128 << 10
	p := New(spec)
	edges := []float64{0.1, 0.5, 1, math.Inf(1)}
	hist := slo.Histogram{Edges: edges, Counts: []float64{1, 2, 3, 3}, Sum: 1.2}
	at := start
	for k := 0; k < 2000; k++ {
		at = at.Add(15 * time.Second)
		snap := &scrape.Snapshot{Time: at, Models: map[string]*scrape.ModelSample{"m": {
			Histograms: map[scrape.Family]slo.Histogram{
				scrape.Family(slo.E2E): hist, scrape.Family(slo.TTFT): hist, scrape.Family(slo.TPOT): hist, scrape.Family(slo.Decode): hist,
			},
			Gauges:  map[scrape.Family]float64{scrape.Running: 1, scrape.Waiting: 0},
			Created: float64(at.Unix()),
		}}}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
	}
	tg := p.targets["gpu0"]
	usage := tg.store.History().Usage()
	if usage.DroppedPoints == 0 || usage.Bytes > spec.HistoryLimit {
		t.Fatalf("history usage %+v: the limit did not hold it", usage)
	}
	points := tg.store.History().Len()
	intervals, checkpoints := tg.store.Ledger("m").Len()
	if slack := int(time.Minute / (15 * time.Second)); checkpoints > points+slack {
		t.Errorf("ledger holds %d checkpoints for the history's %d points", checkpoints, points)
	}
	if max := int(time.Hour/(15*time.Second)) + 1; intervals > max {
		t.Errorf("ledger holds %d intervals, more than an hour's %d", intervals, max)
	}
	t.Logf("after 2000 resets: history %d points (%d bytes, %d dropped), ledger %d checkpoints, %d intervals",
		points, usage.Bytes, usage.DroppedPoints, checkpoints, intervals)
}
