package traces

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Interval reads the spans of one scrape interval (start, end] of a target's
// model (and, when unnamed, of spans that named no model) for the ledger:
// when they number exactly finished, vLLM's count of the interval's
// finished requests, it returns per SLO the requests meeting every
// per-request objective and their generation tokens (slo.JudgeMeasured),
// and those meeting each per-request objective alone (ledger.PerRequest
// order), and ok. Otherwise (spans missing, sampled, still in flight, or
// more of them) ok is false, found after two binary searches per model, so
// an interval without its spans costs no evaluation.
func (s *Store) Interval(target, model string, unnamed bool, start, end time.Time, finished int, slos []slo.SLO) (ledger.SpanCounts, bool) {
	n, untokened := s.count(target, model, unnamed, start.UnixNano(), end.UnixNano())
	if n != finished {
		return ledger.SpanCounts{}, false
	}
	sel := s.Select(target, model, unnamed, start, end)
	if len(sel.All) != finished {
		return ledger.SpanCounts{}, false
	}
	var c ledger.SpanCounts
	c.Good, c.Tokens = slo.JudgeMeasured(sel.All, slos)
	if untokened > 0 {
		// A span without its completion tokens counts 0 of them: the
		// spans then bound the tokens from below only.
		for i := range c.Tokens {
			c.Tokens[i].Upper = math.Inf(1)
		}
	}
	c.Objectives = objectiveCounts(sel.All, slos)
	// The ledger has read the interval: its records are sealed.
	s.sealInterval(target, model, unnamed, start, end, slos)
	return c, true
}

// objectiveCounts counts, per SLO and per-request objective, the requests
// meeting that objective alone: JudgeMeasured of one single-objective SLO
// per objective, so that the comparison (and the bounds of a request
// lacking the metric) is EvaluateMeasured's.
func objectiveCounts(reqs []slo.Measured, slos []slo.SLO) [][]slo.Bounded {
	var single []slo.SLO
	for _, s := range slos {
		for _, o := range ledger.PerRequest(s) {
			single = append(single, slo.SLO{Name: s.Name, Goal: s.Goal, Objectives: []slo.Objective{o}})
		}
	}
	good, _ := slo.JudgeMeasured(reqs, single)
	out := make([][]slo.Bounded, len(slos))
	for i, s := range slos {
		n := len(ledger.PerRequest(s))
		out[i], good = good[:n:n], good[n:]
	}
	return out
}

// count is how many records of the model (and of the unnamed one) ended in
// (from, to], and how many of them lack their completion tokens.
func (s *Store) count(target, model string, unnamed bool, from, to int64) (n, untokened int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.limits.Now().UnixNano())
	ts, ok := s.targets[target]
	if !ok {
		return 0, 0
	}
	names := []string{model}
	if unnamed && model != "" {
		names = append(names, "")
	}
	for _, name := range names {
		ser, ok := ts.models[name]
		if !ok {
			continue
		}
		ser.merge()
		lo := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > from })
		hi := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > to })
		for i := lo; i < hi; i++ {
			if ser.recs[i].completion < 0 {
				untokened++
			}
		}
		n += max(0, hi-lo)
	}
	return n, untokened
}

// SettledGood is the good requests of one SLO in one scrape interval that
// settled, of "all" or of one per-request objective (by its metric): the
// spans' count where they covered it, the histograms' estimate otherwise
// (what a running total of good requests adds).
type SettledGood struct {
	SLO, Objective string
	Good           float64
}

// Settle offers a model's ledger the spans of its scrape intervals that
// ended at or before ready (ledger.Ledger.Settle), waiting up to lateness
// more for an interval whose spans are incomplete, and returns the settled
// intervals' good requests of every SLO with a per-request objective whose
// objectives were judged: of "all", and of each per-request objective (an
// SLO naming a metric twice, of its last objective on it, as
// slo.Evaluate keys them).
func (s *Store) Settle(target, model string, unnamed bool, l *ledger.Ledger, slos []slo.SLO, ready time.Time, lateness time.Duration) []SettledGood {
	spans := func(start, end time.Time, finished int) (ledger.SpanCounts, bool) {
		return s.Interval(target, model, unnamed, start, end, finished, slos)
	}
	var out []SettledGood
	for _, st := range l.Settle(ready, ready.Add(-lateness), spans) {
		for i, def := range slos {
			if !slo.HasPerRequestObjective(def) || !st.Known[i] {
				continue
			}
			out = append(out, SettledGood{SLO: def.Name, Objective: slo.AllKey, Good: st.Good[i]})
			objs := ledger.PerRequest(def)
			if len(st.Objectives[i]) != len(objs) {
				continue
			}
			for k, o := range objs {
				if !slices.ContainsFunc(objs[k+1:], func(x slo.Objective) bool { return x.Metric == o.Metric }) {
					out = append(out, SettledGood{SLO: def.Name, Objective: string(o.Metric), Good: st.Objectives[i][k]})
				}
			}
		}
	}
	return out
}
