package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
)

// evaluationMetrics tell the operator what the evaluation loop costs, as a
// Prometheus rule group's own series do: how long each evaluation took,
// and how many were missed because the one before was still running.
type evaluationMetrics struct {
	duration prometheus.Histogram
	missed   prometheus.Counter
}

func newEvaluationMetrics(reg prometheus.Registerer) evaluationMetrics {
	m := evaluationMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    exporter.Namespace + "_exporter_evaluation_duration_seconds",
			Help:    "Time one evaluation of every target, model, window, budget and alert took.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: exporter.Namespace + "_exporter_evaluations_missed_total",
			Help: "Evaluations skipped because the one before them was still running past its slot (the evaluation interval is too short for the fleet).",
		}),
	}
	reg.MustRegister(m.duration, m.missed)
	return m
}

// missedEvaluations is how many scheduled evaluations an evaluation that
// took elapsed made the loop skip at interval: while it runs, the ticker
// keeps one tick, so the evaluation due next runs late instead of being
// missed, and every further interval it overran is one evaluation missed
// (Prometheus counts a rule group's missed iterations the same way).
func missedEvaluations(elapsed, interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	return max(0, int(elapsed/interval)-1)
}
