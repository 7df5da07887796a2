package rules

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Names of the per-interval bounds on the finishers of one TTFT kind.
const (
	// recIntTTFTBadFin is the most finishers of the interval that can have
	// missed TTFT; the interval's TTFT lower bound is N minus it.
	recIntTTFTBadFin = "model_name:vllm_slo_ttft_bad_finishers_upper:interval"
	// recIntTTFTGoodFin is the most finishers of the interval that can
	// have met TTFT.
	recIntTTFTGoodFin = "model_name:vllm_slo_ttft_good_finishers_upper:interval"
	// The per-server bounds they sum: the carried one and the decode-time
	// reach's (one series per chunk of reaches, label reach).
	recSrvTTFTBadCarried  = "server:vllm_slo_ttft_bad_finishers_carried_upper:interval"
	recSrvTTFTGoodCarried = "server:vllm_slo_ttft_good_finishers_carried_upper:interval"
	recSrvTTFTBadReach    = "server:vllm_slo_ttft_bad_finishers_reach_upper:interval"
	recSrvTTFTGoodReach   = "server:vllm_slo_ttft_good_finishers_reach_upper:interval"
)

// candidateLabel tags the candidates of an element-wise minimum (minAll),
// so that `or` keeps them all; the minimum drops it again.
const candidateLabel = "vllm_slo_candidate"

// lags are the look-backs, in group intervals, of the carried in-flight
// bound (inFlightKind): the bound is the least over them, doubling so that
// a few reads reach far back.
var lags = []int{2, 4, 8}

// maxReachIntervals is the farthest look-back, in group intervals, of a
// decode-time reach (reachesOf).
const maxReachIntervals = 10

// decodeReach is one decode-time edge the finishers are split at: the
// finishers with a decode time at or under edge got their first token
// after the sample back group intervals ago, provided the interval's older
// sample lies less than fresh before the interval's start (t − i).
type decodeReach struct {
	edge  float64
	back  int
	fresh time.Duration
}

// reachPlan is what the bounds on an interval's finishers of one TTFT kind
// read, per server (series of the same labels in every family).
type reachPlan struct {
	interval time.Duration
	ttft     []string
	e2e      []string
	decode   []string // empty when no profile has the decode-time histogram
	running  []string
	waiting  []string
	// lo and hi are the TTFT edges at or under which a first token surely
	// and maybe met the objective; noLo: no edge is under the threshold,
	// noHi: none is above it.
	lo, hi     float64
	noLo, noHi bool
	reaches    []decodeReach
}

// newReachPlan gathers the reads of the finisher bounds; ok is false without
// a TTFT objective.
func newReachPlan(cfg *config.Config, lp ledgerPlan) (reachPlan, bool) {
	if lp.ttftPlan == nil {
		return reachPlan{}, false
	}
	p := *lp.ttftPlan
	rp := reachPlan{interval: lp.interval, ttft: lp.ttft, e2e: lp.e2e, running: lp.running, waiting: lp.waiting,
		lo: p.edge.Edge, noLo: p.edge.None}
	hi, ok := upperEdge(p.edges, p.obj.Threshold)
	rp.hi, rp.noHi = hi, !ok
	if names, err := histogramNames(cfg, slo.Decode); err == nil {
		rp.decode = names
		rp.reaches = reachesOf(cfg.Global.BucketEdges(slo.Decode), lp.interval)
	}
	return rp, true
}

// reachesOf picks, for each look-back of 2 to maxReachIntervals group
// intervals, the largest decode-time edge whose finishers' first tokens it
// can hold, and how fresh the interval's older sample must then be.
//
// A finisher of the interval (s_0, s] (s_0 the latest sample at or before
// t − i, s at or before t) finishes after s_0; with decode time d <= e its
// first token came at or after f − e − m (m = slo.MatchMargin, the slack
// between vLLM's clocks), so after s_0 − e − m. If s_0 lies after t − i − δ
// with δ = (k−1)·i − e − m > 0, that is after t − k·i, at or after the
// sample k intervals back.
func reachesOf(edges []float64, interval time.Duration) []decodeReach {
	var out []decodeReach
	m := slo.MatchMargin
	for k := 2; k <= maxReachIntervals; k++ {
		best := -1.0
		for _, e := range edges {
			d := time.Duration(math.Round(e * 1e9))
			if !math.IsInf(e, 1) && time.Duration(k-1)*interval-d-m > 0 {
				best = e
			}
		}
		if best < 0 {
			continue
		}
		fresh := time.Duration(k-1)*interval - time.Duration(math.Round(best*1e9)) - m
		if n := len(out); n > 0 && out[n-1].edge == best && out[n-1].fresh >= interval {
			continue // the one before already holds an interval of staleness
		}
		out = append(out, decodeReach{edge: best, back: k, fresh: fresh})
		if fresh < interval && k < maxReachIntervals {
			// The same edge one interval further back, for an interval
			// whose older sample is late by a failed scrape.
			out = append(out, decodeReach{edge: best, back: k + 1, fresh: fresh + interval})
		}
	}
	return out
}

// at reads a family's series (every name, `or`-ed; le dropped) at their
// latest sample in (t − offset − within, t − offset].
func at(names []string, suffix, le string, offset, within time.Duration) string {
	r := model.Duration(within - time.Millisecond)
	parts := make([]string, len(names))
	for i, n := range names {
		sel := n + suffix
		if le != "" {
			sel += fmt.Sprintf("{le=~%q}", le)
		}
		read := fmt.Sprintf("last_over_time(%s[%s])", sel, r)
		if offset > 0 {
			read = fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, r, model.Duration(offset))
		}
		if le != "" {
			read = "sum without (le) (" + read + ")"
		}
		parts[i] = read
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// cumulative is the counter of first tokens of one kind per server, read
// k intervals back (sample): for the TTFT-bad ones the count minus
// the bucket at the lower edge (the most that missed), for the TTFT-good
// ones the bucket at the upper edge (the most that met).
func (rp reachPlan) cumulative(bad bool, k int) string {
	offset, within := rp.sample(k)
	cnt := at(rp.ttft, "_count", "", offset, within)
	if bad {
		if rp.noLo {
			return cnt
		}
		return "(" + cnt + " - " + at(rp.ttft, "_bucket", leRegex(rp.lo), offset, within) + ")"
	}
	if rp.noHi {
		return cnt
	}
	return at(rp.ttft, "_bucket", leRegex(rp.hi), offset, within)
}

// sample is where a read k intervals back looks. The interval's own samples
// (k = 0, 1) are those its counts are taken between (intervalDelta: the
// latest within lookback), read within two intervals: a sample late by a
// failed scrape is the same sample, an older one reads nothing and the
// terms on it drop, and a range of two samples instead of lookback's
// twenty keeps the reads cheap. Older ones lie within one interval of
// their instant, inside the range unreset checks.
func (rp reachPlan) sample(k int) (offset, within time.Duration) {
	if k <= 1 {
		return time.Duration(k) * rp.interval, 2 * rp.interval
	}
	return time.Duration(k) * rp.interval, rp.interval
}

// firstTokens is the most first tokens of one kind per server between the
// samples near and far intervals back: a counter difference, so missed
// evaluations of the group change nothing.
func (rp reachPlan) firstTokens(bad bool, near, far int) string {
	return fmt.Sprintf("(%s - %s)", rp.cumulative(bad, near), rp.cumulative(bad, far))
}

// unreset keeps the servers whose TTFT counter did not reset between the
// sample k intervals back (within one interval) and now: a restart empties
// the server, and a counter difference across it says nothing. The
// samples from the one k intervals back on are those of the range
// (t − (k+1)·i, t], and resets() over it compares each with the next; the
// pair of that sample and the one before it (at or before t − (k+1)·i) is
// compared on its own, so that Prometheus, whose resets() reads the range's
// samples only, and VictoriaMetrics, whose resets() also compares the first
// of them with the sample before the range, drop the same servers.
func (rp reachPlan) unreset(k int) string {
	r := model.Duration(time.Duration(k+1)*rp.interval - time.Millisecond)
	parts := make([]string, len(rp.ttft))
	for j, n := range rp.ttft {
		far := at([]string{n}, "_count", "", time.Duration(k)*rp.interval, rp.interval)
		before := latest(n+"_count", time.Duration(k+1)*rp.interval)
		parts[j] = fmt.Sprintf("(resets(%[1]s_count[%[2]s]) == 0 and (%[3]s >= %[4]s or %[3]s unless %[4]s))", n, r, far, before)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// inFlightAt is running + waiting per server at the sample k intervals
// back (sample).
func (rp reachPlan) inFlightAt(k int) string {
	o, within := rp.sample(k)
	return "(" + at(rp.running, "", "", o, within) + " + " + at(rp.waiting, "", "", o, within) + ")"
}

// finishedNow is the interval's finishers per server, exactly as
// recIntFinished counts them before summing (intervalDelta).
func (rp reachPlan) finishedNow() string {
	parts := make([]string, len(rp.e2e))
	for i, n := range rp.e2e {
		now, prev := latest(n+"_count", 0), latest(n+"_count", rp.interval)
		parts[i] = fmt.Sprintf("((%[1]s - %[2]s) >= 0 or (%[1]s and %[2]s))", now, prev)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// delta is a histogram series' change per server over the interval,
// between the interval's own samples (sample).
func (rp reachPlan) delta(names []string, suffix, le string) string {
	return fmt.Sprintf("(%s - %s)", at(names, suffix, le, 0, 2*rp.interval), at(names, suffix, le, rp.interval, 2*rp.interval))
}

// minAll is the element-wise minimum of vectors with the same labels, each
// written once: tagged apart so that `or` keeps every candidate a series
// has, then the least of them. A series keeps whichever candidates it has.
func minAll(terms ...string) string {
	if len(terms) == 1 {
		return terms[0]
	}
	tagged := make([]string, len(terms))
	for i, t := range terms {
		tagged[i] = fmt.Sprintf("label_replace(%s, %q, \"%d\", \"\", \"\")", t, candidateLabel, i)
	}
	return fmt.Sprintf("min without (%s) (\n  %s\n)", candidateLabel, strings.Join(tagged, "\n  or "))
}

// inFlightKind bounds, per server, the requests of one TTFT kind past their
// first token in flight at the interval's older sample s_1 (one interval
// back): running + waiting there, or, for a look-back k of lags, the first
// tokens of that kind between the sample k intervals back, s_k, and s_1,
// plus running + waiting at s_k.
//
// Proof: such a request got its first token after s_k, and then it is one
// of the first tokens of its kind counted in (s_k, s_1], or at or before
// s_k; then, unfinished at s_1, it was in flight past its first token at
// s_k, where running + waiting counts it. No counter reset in between
// (unreset), so the counter difference counts every first token of the
// span. Each read is of the sample sample says; a server without one (a failed scrape, a new series) has no such term and
// keeps the others: no recursion, so a missed evaluation breaks nothing.
func (rp reachPlan) inFlightKind(bad bool) string {
	terms := []string{rp.inFlightAt(1)}
	for _, k := range lags {
		terms = append(terms, fmt.Sprintf("((%s + %s) and %s)", rp.firstTokens(bad, 1, k), rp.inFlightAt(k), rp.unreset(k)))
	}
	return minAll(terms...)
}

// reachChunk is how many decode-time reaches one per-server rule holds:
// all of them in one expression would exceed VictoriaMetrics' default
// -search.maxQueryLen of 16 KiB.
const reachChunk = 4

// carriedBound is, per server, the carried bound on the interval's
// finishers of one TTFT kind: the kind's first tokens in the interval plus
// inFlightKind, with no reset since the interval's older sample (unreset
// one interval back, or two when that sample is late by a failed scrape).
func (rp reachPlan) carriedBound(bad bool) string {
	return fmt.Sprintf("(%s + %s) and (%s or %s)", rp.firstTokens(bad, 0, 1), rp.inFlightKind(bad), rp.unreset(1), rp.unreset(2))
}

// reachBound is, per server, the least decode-time reach bound over some
// of the reaches, where the decode-time histogram counted the interval's
// finishers.
func (rp reachPlan) reachBound(bad bool, reaches []decodeReach) string {
	same := fmt.Sprintf("(%s == %s)", rp.delta(rp.decode, "_count", ""), rp.delta(rp.e2e, "_count", ""))
	terms := make([]string, len(reaches))
	for j, r := range reaches {
		longer := fmt.Sprintf("(%s - %s)", rp.delta(rp.decode, "_count", ""), rp.delta(rp.decode, "_bucket", leRegex(r.edge)))
		freshOld := at(rp.e2e, "_count", "", rp.interval, r.fresh)
		terms[j] = fmt.Sprintf("((%s + %s) and %s and %s)", rp.firstTokens(bad, 0, r.back), longer, freshOld, rp.unreset(r.back))
	}
	return minAll(terms...) + " and " + same
}

// thisEvaluation reads a per-server series recorded by this evaluation of
// the group, and nothing older: a server whose bound this evaluation did
// not record must not take an earlier one. A bare selector would (the
// lookback on VictoriaMetrics, which has no staleness markers for recorded
// series, and on Prometheus too after a restart of its rule manager); the
// range a millisecond short of one interval holds this evaluation's
// sample only, on both engines.
func (rp reachPlan) thisEvaluation(sel string) string {
	return fmt.Sprintf("last_over_time(%s[%s])", sel, model.Duration(rp.interval-time.Millisecond))
}

// finisherRules are the per-interval bounds on the finishers of each TTFT
// kind, per model: the sum over servers of finisherBound, each server's
// least candidate, intersected with old, the model-wide bound of
// intervalRules (first tokens of the kind in the interval + running +
// waiting one interval back).
//
// Proof, for one server and one kind (TTFT-bad or TTFT-good), with the
// interval's finishers those finishing in (s_1, s_0] (its samples one
// interval back and now), N of them:
//   - At most N.
//   - Carried: a finisher's first token came in (s_1, s_0], counted in the
//     first tokens of its kind there, or it was past its first token in
//     flight at s_1, bounded by inFlightKind.
//   - Decode-time reach: when the decode-time histogram counted the same N
//     finishers in the interval, D of them with a decode time at or under
//     an edge e, and s_1 is fresh enough (reachesOf), those D got their
//     first tokens in (s_k, s_0], so at most the first tokens of the kind
//     there are among them, and the other N − D finishers may all be of
//     the kind: at most (first tokens of the kind in (s_k, s_0]) + N − D.
//     (Splitting the finishers so, min(D, that) + min(N − D, carried) is
//     the least of N, carried and this: nothing more to take.)
//
// Every term needs its samples (and no reset); a server without them keeps
// the terms it has, and always N. Each server's bound holds for its own
// finishers, so their sum holds for the model's.
func (rp reachPlan) finisherRules(lp ledgerPlan, old string, bad bool) []Rule {
	rec, carried, reach, what := recIntTTFTGoodFin, recSrvTTFTGoodCarried, recSrvTTFTGoodReach, "met"
	if bad {
		rec, carried, reach, what = recIntTTFTBadFin, recSrvTTFTBadCarried, recSrvTTFTBadReach, "missed"
	}
	rs := []Rule{{Record: carried, Labels: lp.labels(""), Expr: rp.carriedBound(bad),
		Comment: fmt.Sprintf("Per server, the most finishers of the interval that can have %s TTFT: the first tokens of\n"+
			"that kind in the interval + those in flight one interval back (running + waiting there, or the kind's\n"+
			"first tokens since k intervals back + running + waiting then); and, below, the decode-time reach\n"+
			"(finishers with a decode time under an edge got their first token within k intervals: the kind's\n"+
			"first tokens since then + the finishers over the edge). Proof: Go doc of the rules package's finisherRules.", what)}}
	terms := []string{rp.finishedNow(), "min without (slo) (" + rp.thisEvaluation(lp.sel(carried, "")) + ")"}
	if len(rp.decode) > 0 && len(rp.reaches) > 0 {
		for j := 0; j < len(rp.reaches); j += reachChunk {
			l := lp.labels("")
			l["reach"] = fmt.Sprint(j / reachChunk)
			rs = append(rs, Rule{Record: reach, Labels: l, Expr: rp.reachBound(bad, rp.reaches[j:min(j+reachChunk, len(rp.reaches))])})
		}
		terms = append(terms, "min without (slo, reach) ("+rp.thisEvaluation(lp.sel(reach, ""))+")")
	}
	expr := minAll("sum by (model_name) ("+old+")", fmt.Sprintf("sum by (model_name) (\n  %s\n)", minAll(terms...)))
	return append(rs, Rule{Record: rec, Labels: lp.labels(""), Expr: expr,
		Comment: "Per model: the servers' least bounds (N at most) summed, and at most the model-wide bound."})
}
