package store

import (
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/ledger"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Closed is one model's scrape interval that an append closed, with its
// judgement: per SLO of the configuration, in order (none without SLOs).
type Closed struct {
	history.Interval
	SLOs []Judgement
}

// Judgement is what one SLO's judging of a scrape interval found.
type Judgement struct {
	// Objectives holds the estimated good requests per objective key over
	// the interval's warm-up-free increase (and "all" for an SLO of ITL
	// objectives alone), as slo.GoodRequestsOf gives them; nil when that
	// increase holds no finished request.
	Objectives map[string]slo.Bounded
	// Recorded is true when the ledger recorded the interval, and Ledger
	// is then its record: the good requests of every objective together,
	// which the running totals add, and the interval's bounds, which a
	// store learning from intervals reads.
	Recorded bool
	Ledger   ledger.Record
}

// judge judges one closed interval, once: per SLO, the good requests of
// each objective over its warm-up-free increase and, through its model's
// ledger, of every objective together. The ledger records the interval
// (and is thinned to the scrapes the history holds, which the store hands
// it), the totals add the judgement, and the judgement is returned with
// the interval. Without SLOs there is nothing to judge.
func (s *Store) judge(iv history.Interval) Closed {
	c := Closed{Interval: iv}
	slos := s.cfg.SLOs
	if len(slos) == 0 {
		return c
	}
	s.judged++
	l := s.ledgers[iv.Model]
	if l == nil {
		l = ledger.New(slos)
		s.ledgers[iv.Model] = l
	}
	if s.cfg.Spans {
		l.ExpectSpans()
	}
	isCounted := counted(iv)
	recs := l.Append(iv.Window, isCounted)
	if recs != nil && l.ThinDue(iv.Window.End) {
		l.Thin(iv.Window.End, s.hist.PointTimes(iv.Model))
	}
	c.SLOs = make([]Judgement, len(slos))
	for i, sl := range slos {
		j := &c.SLOs[i]
		j.Objectives, _ = slo.GoodRequestsOf(iv.Warm, sl)
		if recs != nil {
			j.Recorded, j.Ledger = true, recs[i]
		}
	}
	s.addJudged(iv.Model, isCounted, c.SLOs)
	return c
}

// addJudged adds an interval's judgement to its model's running totals:
// each objective's good requests and, for an SLO with a per-request
// objective, those of all of them together from the ledger's record. In
// exact mode the per-request objectives and "all" of a counted interval
// are added when its spans settle it instead (AddSettled), the exact
// count when they cover it. Each estimate is non-negative, so the totals
// only grow.
func (s *Store) addJudged(model string, isCounted bool, js []Judgement) {
	for i, sl := range s.cfg.SLOs {
		settles := s.cfg.Spans && isCounted && slo.HasPerRequestObjective(sl)
		for obj, good := range js[i].Objectives {
			if obj != string(slo.ITL) && settles {
				continue // added when the interval settles
			}
			s.addGood(model, sl.Name, obj, good.Estimate)
		}
	}
	if s.cfg.Spans {
		return
	}
	for i, sl := range s.cfg.SLOs {
		if r := js[i].Ledger; slo.HasPerRequestObjective(sl) && js[i].Recorded && r.GoodKnown {
			s.addGood(model, sl.Name, slo.AllKey, r.Good)
		}
	}
}
