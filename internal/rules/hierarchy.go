package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

// Options are the choices of the generator that the configuration does not
// make.
type Options struct {
	// Levels are the spans of the recording-rule hierarchy that long
	// windows sum instead of the per-interval series, shortest first (each
	// rounded down to a multiple of the one before, the first to a multiple
	// of the group interval). None: every window sums the per-interval
	// series over its whole length (the flat rules).
	Levels []time.Duration
	// LongInterval is how often a second group per SLO, the long group,
	// evaluates the levels and the windows they serve (longgroup.go): the
	// longest multiple of the group interval up to it that divides the
	// first level's span. 0, or no level: one group records everything.
	LongInterval time.Duration
	// QueryOffset, when positive, is every group's query_offset: Prometheus
	// (2.53 and later; 2.x before refuses the field) and Thanos evaluate each
	// rule that long before the evaluation's time, so that samples stamped
	// at or before that time have been stored when the rule reads them.
	// Without it, a scrape whose timestamp is at or before an evaluation
	// but whose samples are committed after it is missed by that
	// evaluation, and the per-interval ledger, which takes each interval's
	// change between two evaluations, loses that change for good; samples
	// remote-written in from elsewhere arrive later still. It should exceed
	// the longest scrape (the scrape timeout) or the remote-write delay.
	QueryOffset time.Duration
}

// DefaultOptions are Generate's: the hierarchy 5m → 1h → 6h → 1d → 1w, so
// that a 30-day period reads 4 week-level and 2 day-level samples per
// series instead of 172,800 per-interval ones. The 6h level is there for
// cost, not reach: a level's terms lie in the TSDB's persisted blocks once
// they are older than its head (about 2 h on Prometheus), and each such
// term costs about 0.5 ms per 10 series against 0.1 ms in the head
// (measured on Prometheus 2.42); with the 1d level built from 24 terms of
// the 1h level, 21 of them in blocks, it was a third of the SLO group's time
// at 100 targets; from 4 terms of the 6h level (and 6h from 6 of 1h), about
// 6 are. The levels and the windows longer than an hour are evaluated
// every minute in the long group: on vmalert each rule costs about 3 ms
// of its own work per evaluation, and at 500 targets the SLO group's 245
// rules took 8.8% of its 15 s interval at the median, 10.7% at the slowest.
func DefaultOptions() Options {
	return Options{Levels: []time.Duration{5 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour},
		LongInterval: time.Minute}
}

// Generate builds the rule file for a loaded and validated configuration
// with these options: one group per SLO with recording rules per objective
// and window, the joint attainment's lower bound, burn rates, the error
// budget and the multiwindow burn-rate alerts, then the capacity headroom
// ticket and one group on the exporter's own series. Windows longer than an
// hour sum the hierarchy of o's levels (DefaultOptions is what the rules
// command writes); Options{} writes the flat rules, whose results the
// hierarchy's equal (the package's tests compare the two on Prometheus and
// VictoriaMetrics).
func (o Options) Generate(cfg *config.Config) (*RuleFile, error) {
	return generate(cfg, o)
}

// levelSpans turns the levels into spans counted in group intervals, each a
// multiple of the one before; levels that round to no longer than the one
// before are dropped.
func levelSpans(levels []time.Duration, interval time.Duration) []int {
	var spans []int
	prev := 1
	for _, l := range levels {
		n := int(l/interval) / prev * prev
		if n <= prev {
			continue
		}
		spans = append(spans, n)
		prev = n
	}
	return spans
}

// LevelRecord is the name of a level series of the hierarchy: the sum of
// the per-interval series name over span, recorded at every evaluation of
// the group that records the levels.
func LevelRecord(name string, span time.Duration) string {
	return name + "_sum" + model.Duration(span).String()
}

// levelRules are the hierarchy's recording rules, after the per-interval
// rules they read: for every per-interval series a window sums, one series
// per level, each the sum of the span ending now.
//
// The first level is sum_over_time over its span's per-interval samples;
// each level above it is the sum of the level below at the offsets 0, s,
// 2s, ... (s the span below) up to its own span: the spans tile it, and
// every level series is recorded at every evaluation of its group (every
// group interval, or every long interval in the long group, which divides
// every span), so the sample at each offset is the one that evaluation
// recorded (with the long group, as of the SLO group's evaluation lag
// before it: longgroup.go proves the offsets exact). A term with no sample (before
// the history, or a stretch the per-interval series had none) adds nothing,
// as it adds nothing to the flat sum. Counts add, so every level is exactly
// the flat sum of the same per-interval samples.
func (lp ledgerPlan) levelRules(interval []Rule) []Rule {
	if len(lp.spans) == 0 {
		return nil
	}
	var rs []Rule
	for _, r := range summedRules(interval) {
		obj := r.Labels["objective"]
		for k, span := range lp.spans {
			rec := LevelRecord(r.Record, time.Duration(span)*lp.interval)
			expr := lp.rangeSum(lp.sel(r.Record, obj), span, 0)
			if k > 0 {
				below := lp.sel(LevelRecord(r.Record, time.Duration(lp.spans[k-1])*lp.interval), obj)
				var terms []string
				for j := 0; j < span/lp.spans[k-1]; j++ {
					terms = append(terms, lp.at(below, j*lp.spans[k-1]))
				}
				expr = sumTerms(terms)
			}
			rule := Rule{Record: rec, Expr: expr, Labels: r.Labels}
			if len(rs) == 0 {
				rule.Comment = "The hierarchy: each per-interval series summed over " + lp.levelList() + ", recorded at every\n" +
					"evaluation; a level is the level below it at offsets that tile its span. Windows longer than\n" +
					"the second level sum these (a bounded number of samples per series whatever the window), and\n" +
					"equal the flat sums of the same per-interval samples (counts add)."
			}
			rs = append(rs, rule)
		}
	}
	return rs
}

// summedRules are the per-interval rules whose series windows sum.
func summedRules(interval []Rule) []Rule {
	var out []Rule
	for _, r := range interval {
		if summedPerInterval(r.Record) {
			out = append(out, r)
		}
	}
	return out
}

// summedPerInterval reports whether windows sum a per-interval series
// (sumOver): every one but the objectives' upper edges, which only the
// interval's own bounds read.
func summedPerInterval(name string) bool {
	switch name {
	case recIntFinished, recIntFirst, recIntTTFTGoodLo, recIntTTFTGoodHi,
		recIntObserved, recIntObjGoodLo, recIntFinGoodLo, recIntFinGoodHi,
		recIntJointLo, recIntJointHi, recIntNewInFlight, recIntNewRunning, recIntRejected:
		return true
	}
	return false
}

// levelList writes the levels' spans: "5m, 1h, 1d".
func (lp ledgerPlan) levelList() string {
	parts := make([]string, len(lp.spans))
	for i, s := range lp.spans {
		parts[i] = model.Duration(time.Duration(s) * lp.interval).String()
	}
	return strings.Join(parts, ", ")
}

// rangeSum sums the samples of a per-interval series sel recorded at the n
// evaluations ending offset evaluations before now (before the SLO
// group's evaluation the long group describes, lag before now, in the
// long group).
func (lp ledgerPlan) rangeSum(sel string, n, offset int) string {
	r := model.Duration(time.Duration(n)*lp.interval - time.Millisecond)
	off := lp.lag() + time.Duration(offset)*lp.interval
	if off == 0 {
		return fmt.Sprintf("sum_over_time(%s[%s])", sel, r)
	}
	return fmt.Sprintf("sum_over_time(%s[%s] offset %s)", sel, r, model.Duration(off))
}

// at selects the sample of a level series sel recorded offset evaluations
// before now, and no other: the range holds one evaluation of the group
// that records the levels (offset is a multiple of its interval).
func (lp ledgerPlan) at(sel string, offset int) string {
	r := model.Duration(lp.step() - time.Millisecond)
	if offset == 0 {
		return fmt.Sprintf("last_over_time(%s[%s])", sel, r)
	}
	return fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, r, model.Duration(time.Duration(offset)*lp.interval))
}

// sumTerms adds vectors with the same label sets where a series absent from
// some terms counts 0 there (a plain + would drop it): each term is given a
// distinct label, joined with or, and the label summed away.
func sumTerms(terms []string) string {
	if len(terms) == 1 {
		return terms[0]
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = fmt.Sprintf("label_replace(%s, \"part\", \"%s\", \"\", \"\")", t, strconv.Itoa(i))
	}
	return "sum without (part) (\n  " + strings.Join(parts, "\n  or ") + "\n)"
}

// windowSumRecord is the name of the recorded sum of a per-interval series
// over a window that the hierarchy serves.
func windowSumRecord(name string, w model.Duration) string {
	return name + "_over" + w.String()
}

// hierarchical reports whether a window is summed from the hierarchy: it
// spans more evaluations than the second level (the first, with one
// level), so a flat sum would read more samples per series than that.
func (lp ledgerPlan) hierarchical(w model.Duration) bool {
	return len(lp.spans) > 0 && int(lp.windowStart(w)/lp.interval) > lp.spans[min(1, len(lp.spans)-1)]
}

// sumOverSelector is what a window's rules read for the sum of a
// per-interval series over w: the flat sum_over_time, or, where the
// hierarchy serves the window, the selector of the sum recorded once per
// window (windowSumRules), which keeps every expression short
// (VictoriaMetrics refuses queries over 16 KiB by default) and the sum read
// once however many of the window's rules use it.
func (lp ledgerPlan) sumOverSelector(name, objective string, w model.Duration) string {
	if !lp.hierarchical(w) {
		return fmt.Sprintf("sum_over_time(%s[%s])", lp.sel(name, objective), w-model.Duration(time.Millisecond))
	}
	return lp.sel(windowSumRecord(name, w), objective)
}

// windowSumRules record, for a window the hierarchy serves, the window's
// sum of every per-interval series it reads, before the window's rules.
func (lp ledgerPlan) windowSumRules(interval []Rule, w model.Duration) []Rule {
	if !lp.hierarchical(w) {
		return nil
	}
	var rs []Rule
	for _, r := range summedRules(interval) {
		obj := r.Labels["objective"]
		rs = append(rs, Rule{Record: windowSumRecord(r.Record, w), Expr: lp.windowSum(r.Record, obj, w), Labels: r.Labels})
	}
	if len(rs) > 0 {
		rs[0].Comment = fmt.Sprintf("The %s window's sums of the per-interval series, from the hierarchy's levels.", w)
	}
	return rs
}

// windowSum sums a per-interval series over the ceil(w/interval)
// evaluations of a window the hierarchy serves (windows up to the second
// level's span are summed flat, at most that many samples per series):
// greedily from the longest level down, the rest from the per-interval
// series. The terms
// tile the same evaluations as the flat sum, so the result is the same
// number; each reads one sample per series, the rest fewer than the first
// level's span.
//
// Proof of the bound: with spans s_1 < ... < s_L, each a multiple of the
// one before, the greedy cut of n evaluations takes floor(n/s_L) top-level
// terms, fewer than s_{k+1}/s_k terms of each level k below it and fewer
// than s_1 per-interval samples: at most n/s_L + Σ (s_{k+1}/s_k − 1) + s_1 −
// 1 samples per series, whatever the window: n/s_L + 6 + 3 + 5 + 11 + 19 at
// 15 s with the default levels (spans 20, 240, 1440, 5760 and 40,320
// evaluations); a 30-day period reads 6 (4 weeks, 2 days) against 172,800
// flat.
func (lp ledgerPlan) windowSum(name, objective string, w model.Duration) string {
	n := int(lp.windowStart(w) / lp.interval)
	var terms []string
	offset := 0
	for k := len(lp.spans) - 1; k >= 0; k-- {
		span := lp.spans[k]
		sel := lp.sel(LevelRecord(name, time.Duration(span)*lp.interval), objective)
		for ; n-offset >= span; offset += span {
			terms = append(terms, lp.at(sel, offset))
		}
	}
	if rest := n - offset; rest > 0 {
		terms = append(terms, lp.rangeSum(lp.sel(name, objective), rest, offset))
	}
	return sumTerms(terms)
}
