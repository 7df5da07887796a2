package bench

import (
	"fmt"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Interval is the scrape interval of every measurement, the default of the
// configuration.
const Interval = 15 * time.Second

// Workload is what a pipeline evaluates: the windows, quantiles and SLOs of
// the configuration.
type Workload struct {
	Windows   []time.Duration
	Quantiles []float64
	SLOs      []slo.SLO
}

// DefaultWorkload is the example configuration's evaluation: 4 windows × 4
// quantiles and one SLO (TTFT ≤ 500 ms and TPOT ≤ 50 ms for 99% of requests
// over 30 days), without burn-rate alerts.
func DefaultWorkload() Workload {
	return Workload{
		Windows:   []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour},
		Quantiles: []float64{0.5, 0.9, 0.95, 0.99},
		SLOs:      []slo.SLO{InteractiveSLO(30 * 24 * time.Hour)},
	}
}

// InteractiveSLO is the example configuration's SLO with the given period.
func InteractiveSLO(period time.Duration) slo.SLO {
	return slo.SLO{
		Name: "interactive",
		Objectives: []slo.Objective{
			{Metric: slo.TTFT, Threshold: 0.5},
			{Metric: slo.TPOT, Threshold: 0.05},
		},
		Goal:   0.99,
		Period: period,
	}
}

// longest returns the longest window and the longest SLO period.
func (w Workload) longest() (window, period time.Duration) {
	for _, d := range w.Windows {
		window = max(window, d)
	}
	for _, s := range w.SLOs {
		period = max(period, s.Period)
	}
	return window, period
}

// Spec is the pipeline spec of n targets named t0..t{n-1} evaluating w, with
// the retention the daemon derives from it.
func (w Workload) Spec(n int) pipeline.Spec {
	window, period := w.longest()
	spec := pipeline.Spec{
		Windows:   w.Windows,
		Quantiles: w.Quantiles,
		SLOs:      w.SLOs,
		Retention: history.NewRetention(window, period),
	}
	for i := range n {
		spec.Targets = append(spec.Targets, pipeline.TargetSpec{
			Name:     TargetName(i),
			URL:      fmt.Sprintf("http://127.0.0.1/t/%d/metrics", i),
			Profile:  scrape.VLLM,
			Interval: Interval,
		})
	}
	return spec
}

// TargetName is the name of the i-th target of a Spec.
func TargetName(i int) string { return fmt.Sprintf("t%d", i) }

// Scraper runs the daemon's per-scrape work for one target: parse the body,
// append the snapshot to the history, evaluate every window.
type Scraper struct {
	Pipe *pipeline.Pipeline
}

// NewScraper returns a scraper of one target evaluating w.
func NewScraper(w Workload) *Scraper {
	return &Scraper{Pipe: pipeline.New(w.Spec(1))}
}

// Scrape does one scrape's work and returns the report.
func (s *Scraper) Scrape(body []byte, contentType string, at time.Time) (*pipeline.Report, error) {
	snap, err := scrape.Parse(body, contentType, scrape.VLLM, at)
	if err != nil {
		return nil, fmt.Errorf("scrape at %s: %w", at.Format(time.RFC3339), err)
	}
	if err := s.Pipe.Ingest(TargetName(0), snap, 0); err != nil {
		return nil, fmt.Errorf("ingest at %s: %w", at.Format(time.RFC3339), err)
	}
	return s.Pipe.Evaluate(at), nil
}

// Warm feeds n scrapes of st to the scraper, so that every window is full
// before a measurement.
func (s *Scraper) Warm(st *Stream, n int) error {
	for range n {
		body, ct, at := st.Next()
		if _, err := s.Scrape(body, ct, at); err != nil {
			return err
		}
	}
	return nil
}
