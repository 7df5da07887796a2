package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// CapacityIntervals returns the scrape intervals of a target's model that
// end after since, oldest first, as the capacity estimate reads them: the
// ledger's bounds on each interval's good requests for SLO sloIndex and
// the history's load, mix and mean-latency figures over the same scrapes.
// Only intervals whose both scrapes are still kept at full resolution are
// returned (the ledger keeps an hour of intervals), so a caller reads
// every few minutes and keeps what it learned.
func (p *Pipeline) CapacityIntervals(target, model string, sloIndex int, since time.Time) ([]capacity.Interval, error) {
	t, spec, err := p.target(target)
	if err != nil {
		return nil, err
	}
	if sloIndex < 0 || sloIndex >= len(spec.SLOs) {
		return nil, fmt.Errorf("target %q: SLO index %d out of range [0, %d)", target, sloIndex, len(spec.SLOs))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.ledgers[model]
	if l == nil {
		return nil, nil
	}
	var out []capacity.Interval
	for _, iv := range l.intervals {
		if !iv.end.After(since) {
			continue
		}
		i0, i1 := l.at(iv.start), l.at(iv.end)
		if i0 < 0 || i1 <= i0 || l.points[i0].t != iv.start.UnixNano() || l.points[i1].t != iv.end.UnixNano() {
			continue
		}
		w, ok := t.hist.Window(model, iv.end, iv.end.Sub(iv.start), history.Options{})
		if !ok || !w.Start.Equal(iv.start) {
			continue
		}
		a, b := l.points[i0].sum(sloIndex), l.points[i1].sum(sloIndex)
		ci := capacityInterval(w)
		ci.Restarted = iv.restarted
		ci.Finished = b.finished - a.finished
		ci.GoodKnown = iv.counted && b.unknown == a.unknown
		ci.Good = nonNeg(slo.Bounded{Lower: b.lo - a.lo, Upper: b.hi - a.hi, Estimate: b.est - a.est})
		out = append(out, ci)
	}
	return out, nil
}

// capacityInterval reads one interval's load, mix and means from the
// history's window over it.
func capacityInterval(w slo.Window) capacity.Interval {
	ci := capacity.Interval{Start: w.Start, End: w.End}
	if h, ok := w.Latency[slo.TTFT]; ok && h.Valid() {
		ci.FirstTokens = h.Total()
		ci.TTFT = capacity.Mean{Sum: h.Sum, Count: h.Total()}
	}
	if h, ok := w.Latency[slo.TPOT]; ok && h.Valid() {
		ci.TPOT = capacity.Mean{Sum: h.Sum, Count: h.Total()}
	}
	if w.Waiting.Known {
		ci.WaitingStart, ci.WaitingEnd = math.Max(0, w.Waiting.AtStart), math.Max(0, w.Waiting.AtEnd)
	}
	if w.Running.Known {
		ci.RunningStart, ci.RunningEnd = math.Max(0, w.Running.AtStart), math.Max(0, w.Running.AtEnd)
	}
	ci.InFlightMean = math.Max(0, w.Running.Mean) + math.Max(0, w.Waiting.Mean)
	if w.HasTokenCounters {
		ci.GeneratedTokens = math.Max(0, w.GenerationTokensTotal)
	}
	if w.PromptTokens.Valid() && w.GenerationTokens.Valid() {
		ci.PromptTokens, ci.OutputTokens, ci.Mixed = math.Max(0, w.PromptTokens.Sum), math.Max(0, w.GenerationTokens.Sum), true
	}
	return ci
}
