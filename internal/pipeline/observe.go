package pipeline

import (
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// ClosedInterval is one model's scrape interval that an ingest closed: the
// history's increase over it and, per SLO of the spec (in order), the
// ledger's record of its good requests. Good[i].End is zero when the
// ledger did not record the interval for SLO i.
type ClosedInterval struct {
	history.Interval
	Good []ledger.IntervalGood
}

// IntervalObserver is told, in scrape order and under the target's lock,
// every interval an ingest of the target closed, with the spec's SLOs: a
// store that learns from intervals (package capacity/online) is fed
// without reading the history back. It must return quickly.
type IntervalObserver interface {
	ObserveIntervals(target TargetSpec, slos []slo.SLO, intervals []ClosedInterval)
}

// observe hands the intervals just closed, with the ledgers' records of
// them from their judgements, to the spec's observer, if there is one. (A
// reconfiguration between the ingest's reading of the spec and its append
// can have judged them under another SLO list: their records are then left
// out.) t.mu must be held.
func (t *target) observe(spec Spec, closed []store.Closed) {
	if spec.Intervals == nil || len(closed) == 0 {
		return
	}
	out := make([]ClosedInterval, len(closed))
	for k, c := range closed {
		out[k] = ClosedInterval{Interval: c.Interval, Good: make([]ledger.IntervalGood, len(spec.SLOs))}
		if len(c.SLOs) != len(spec.SLOs) {
			continue
		}
		for i, j := range c.SLOs {
			if j.Recorded {
				out[k].Good[i] = j.Ledger.Interval
			}
		}
	}
	spec.Intervals.ObserveIntervals(t.spec, spec.SLOs, out)
}
