package exporter

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// reportGatherer renders each report into metric families once and serves
// the same families to every scrape until the next report: a central daemon
// with hundreds of targets exposes hundreds of thousands of series, and
// rebuilding them for every scraper (several Prometheus replicas, the
// dashboard, a curl) would cost a core.
type reportGatherer struct {
	source ReportSource

	mu       sync.Mutex
	rendered *pipeline.Report
	families []*dto.MetricFamily
	err      error
}

// Gather returns the families of the latest report. Each call gets its own
// family structs (sharing the read-only metrics), so a caller that merges
// families cannot change the cache.
func (g *reportGatherer) Gather() ([]*dto.MetricFamily, error) {
	rep := g.source()
	g.mu.Lock()
	if rep != g.rendered || g.families == nil && g.err == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(func() *pipeline.Report { return rep }))
		g.families, g.err = reg.Gather()
		g.rendered = rep
	}
	families, err := g.families, g.err
	g.mu.Unlock()
	out := make([]*dto.MetricFamily, len(families))
	for i, mf := range families {
		cp := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: slices.Clone(mf.Metric)}
		out[i] = cp
	}
	return out, err
}
