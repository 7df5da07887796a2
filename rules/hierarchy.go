package rules

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
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
// 6 are.
func DefaultOptions() Options {
	return Options{Levels: []time.Duration{5 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}}
}

// GenerateWith is Generate with explicit options: Options{} writes the flat
// rules, whose results the hierarchy's equal (the package's tests compare
// the two on Prometheus and VictoriaMetrics).
func GenerateWith(cfg *config.Config, opts Options) (*RuleFile, error) {
	return generate(cfg, opts)
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

// SeriesLabel tells apart the per-interval series whose sums share a
// level's name (LevelRecord) or a window's: its value is the per-interval
// series' name.
const SeriesLabel = "series"

// LevelRecord is the name of one level of the hierarchy: the sums over span
// of every per-interval series windows sum, recorded at every evaluation,
// one series per per-interval series (SeriesLabel) and model. One name per
// level lets a level above read every series' terms with one selector per
// term, in one rule, instead of one rule per series: on VictoriaMetrics a
// rule costs vmalert about 3 ms beyond its query (a request, a response
// decoded and its samples written back), which with thirteen series per
// level was most of the levels' time.
func LevelRecord(span time.Duration) string {
	return "model_name:vllm_slo_ledger:interval_sum" + model.Duration(span).String()
}

// levelRules are the hierarchy's recording rules, after the per-interval
// rules they read: for every per-interval series a window sums, one series
// per level, each the sum of the span ending now, under the level's name
// with the per-interval series' name as SeriesLabel.
//
// The first level is sum_over_time over its span's per-interval samples,
// one rule per per-interval series; each level above it is one rule, the
// sum of the level below at the offsets 0, s, 2s, ... (s the span below) up
// to its own span, every series' at once: the spans tile it, and every
// level series is recorded at every evaluation, so the sample at each
// offset is the one that evaluation recorded. A term with no sample (before
// the history, or a stretch the per-interval series had none) adds nothing,
// as it adds nothing to the flat sum. Counts add, so every level is exactly
// the flat sum of the same per-interval samples. The series stay apart:
// their label sets differ in SeriesLabel, and the terms' sum only removes
// the label that tells the terms apart.
func (lp ledgerPlan) levelRules(interval []Rule) []Rule {
	summed := summedRules(interval)
	if len(lp.spans) == 0 || len(summed) == 0 {
		return nil
	}
	var rs []Rule
	first := LevelRecord(time.Duration(lp.spans[0]) * lp.interval)
	for _, r := range summed {
		labels := maps.Clone(r.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[SeriesLabel] = r.Record
		rs = append(rs, Rule{Record: first, Expr: lp.rangeSum(lp.sel(r.Record, r.Labels["objective"]), lp.spans[0], 0), Labels: labels})
	}
	rs[0].Comment = "The hierarchy: each per-interval series summed over " + lp.levelList() + ", recorded at every\n" +
		"evaluation, one name per level (label " + SeriesLabel + ": the per-interval series); a level is the level\n" +
		"below it at offsets that tile its span. Windows longer than the second level sum these (a bounded\n" +
		"number of samples per series whatever the window), and equal the flat sums of the same\n" +
		"per-interval samples (counts add)."
	for k := 1; k < len(lp.spans); k++ {
		below := selector(LevelRecord(time.Duration(lp.spans[k-1])*lp.interval), "slo", lp.slo.Name)
		var terms []string
		for j := 0; j < lp.spans[k]/lp.spans[k-1]; j++ {
			terms = append(terms, lp.at(below, j*lp.spans[k-1]))
		}
		rs = append(rs, Rule{Record: LevelRecord(time.Duration(lp.spans[k]) * lp.interval), Expr: sumTerms(terms), Labels: lp.labels("")})
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

// rangeSum sums the samples of sel recorded at the n evaluations ending
// offset evaluations before now.
func (lp ledgerPlan) rangeSum(sel string, n, offset int) string {
	r := model.Duration(time.Duration(n)*lp.interval - time.Millisecond)
	if offset == 0 {
		return fmt.Sprintf("sum_over_time(%s[%s])", sel, r)
	}
	return fmt.Sprintf("sum_over_time(%s[%s] offset %s)", sel, r, model.Duration(time.Duration(offset)*lp.interval))
}

// at selects the sample of sel recorded offset evaluations before now, and
// no other: the range holds one evaluation.
func (lp ledgerPlan) at(sel string, offset int) string {
	r := model.Duration(lp.interval - time.Millisecond)
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

// windowSumRecord is the name of the recorded sums of the per-interval
// series over a window that the hierarchy serves, one series per
// per-interval series (SeriesLabel) and model, as the levels are.
func windowSumRecord(w model.Duration) string {
	return "model_name:vllm_slo_ledger:interval_over" + w.String()
}

// hierarchical reports whether a window is summed from the hierarchy: it
// spans more evaluations than the second level (the first, with one
// level), so a flat sum would read more samples per series than that.
func (lp ledgerPlan) hierarchical(w model.Duration) bool {
	return len(lp.spans) > 0 && int(lp.windowStart(w)/lp.interval) > lp.spans[min(1, len(lp.spans)-1)]
}

// sumOverSelector is what a window's rules read for the sum of a
// per-interval series over w: the flat sum_over_time, or, where the
// hierarchy serves the window, the series' sum recorded once per window
// (windowSumRules) without SeriesLabel, the labels the flat sum has. That
// keeps every expression short (VictoriaMetrics refuses queries over 16 KiB
// by default) and the sum read once however many of the window's rules use
// it.
func (lp ledgerPlan) sumOverSelector(name, objective string, w model.Duration) string {
	if !lp.hierarchical(w) {
		return fmt.Sprintf("sum_over_time(%s[%s])", lp.sel(name, objective), w-model.Duration(time.Millisecond))
	}
	sel := selector(windowSumRecord(w), "slo", lp.slo.Name, SeriesLabel, name)
	if objective != "" {
		sel = selector(windowSumRecord(w), "slo", lp.slo.Name, "objective", objective, SeriesLabel, name)
	}
	return fmt.Sprintf("sum without (%s) (%s)", SeriesLabel, sel)
}

// windowSumRules record, for a window the hierarchy serves, the window's
// sums of every per-interval series it reads, in one rule before the
// window's rules.
func (lp ledgerPlan) windowSumRules(interval []Rule, w model.Duration) []Rule {
	summed := summedRules(interval)
	if !lp.hierarchical(w) || len(summed) == 0 {
		return nil
	}
	return []Rule{{Record: windowSumRecord(w), Expr: lp.windowSum(summed, w), Labels: lp.labels(""),
		Comment: fmt.Sprintf("The %s window's sums of the per-interval series, from the hierarchy's levels.", w)}}
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
//
// Every summed series is in each level term (one selector of the level's
// name); the rest, per series, is labelled with SeriesLabel as the levels
// are, and the series' rests joined with or (their label sets differ in
// it) into one term.
func (lp ledgerPlan) windowSum(summed []Rule, w model.Duration) string {
	n := int(lp.windowStart(w) / lp.interval)
	var terms []string
	offset := 0
	for k := len(lp.spans) - 1; k >= 0; k-- {
		span := lp.spans[k]
		sel := selector(LevelRecord(time.Duration(span)*lp.interval), "slo", lp.slo.Name)
		for ; n-offset >= span; offset += span {
			terms = append(terms, lp.at(sel, offset))
		}
	}
	if rest := n - offset; rest > 0 {
		parts := make([]string, len(summed))
		for i, r := range summed {
			parts[i] = fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", lp.rangeSum(lp.sel(r.Record, r.Labels["objective"]), rest, offset), SeriesLabel, r.Record)
		}
		terms = append(terms, "("+strings.Join(parts, " or ")+")")
	}
	return sumTerms(terms)
}
