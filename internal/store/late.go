package store

import (
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// latestSamples is, per model of snap, the newest sample the history holds
// before snap is appended: the scrape each interval snap closes starts at.
func (s *Store) latestSamples(snap *scrape.Snapshot) map[string]*scrape.ModelSample {
	out := make(map[string]*scrape.ModelSample, len(snap.Models))
	for model := range snap.Models {
		if _, ms, ok := s.hist.Latest(model); ok {
			out[model] = ms
		}
	}
	return out
}

// markFinishCounts marks the intervals snap closed whose finished requests
// the family counting them cannot give (slo.Window.FinishCountUnknown), from
// the samples at their two ends: before (latestSamples, taken before the
// append) and snap's.
//
// A history counts a family that appears in a segment from zero, which is
// exact when the server creates the family at its first observation
// (llm-d-inference-sim does) and wrong when it does not; and a family that
// vanishes keeps its last value. Neither says how many requests finished,
// so the count is known only when its family is at both ends.
func markFinishCounts(intervals []history.Interval, before map[string]*scrape.ModelSample, snap *scrape.Snapshot) {
	for i := range intervals {
		iv := &intervals[i]
		if finishCounted(before[iv.Model], snap.Models[iv.Model]) {
			continue
		}
		iv.Window.FinishCountUnknown = true
		iv.Warm.FinishCountUnknown = true
	}
}

// finishCounted reports whether e2e, the family slo.FinishersOf counts
// finished requests by, is at both scrapes of an interval.
func finishCounted(start, end *scrape.ModelSample) bool {
	if start == nil || end == nil {
		return false
	}
	_, atStart := start.Histograms[scrape.E2E]
	_, atEnd := end.Histograms[scrape.E2E]
	return atStart && atEnd
}

// counted reports whether an interval's finishes count towards the SLOs:
// its warm-up-free increase counts the same finished requests as the
// whole one, both counts known. Not inside a warm-up, where the
// warm-up-free increase has other finishers, nor where either count is
// unknown (markFinishCounts).
func counted(iv history.Interval) bool {
	warm, all := slo.FinishersOf(iv.Warm), slo.FinishersOf(iv.Window)
	return warm.Known && all.Known && warm.N == all.N
}
