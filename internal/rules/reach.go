package rules

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
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
	// recSrvTTFTFin is the per-server bound they sum, both kinds in one
	// series name told apart by kindLabel (finisherBound).
	recSrvTTFTFin = "server:vllm_slo_ttft_finishers_upper:interval"
)

// Names of the per-server series the bounds' look-backs read (pastRules),
// recorded at every evaluation from each server's latest sample in the
// interval ending there.
const (
	// recSrvTTFTPast is the counters of counter, the first tokens
	// that may have missed (kindLabel "bad") and met ("good") TTFT.
	recSrvTTFTPast = "server:vllm_slo_ttft_first_tokens_upper:last"
	// recSrvInFlightPast is running + waiting.
	recSrvInFlightPast = "server:vllm_slo_in_flight_requests:last"
	// recSrvUnresetPast is 1 for a server whose TTFT counter did not go
	// down between any two consecutive samples the later of which lies in
	// the interval (unresetNow).
	recSrvUnresetPast = "server:vllm_slo_ttft_first_tokens_unreset:interval"
)

// candidateLabel tags the candidates of an element-wise minimum (minAll),
// so that `or` keeps them all; the minimum drops it again.
const candidateLabel = "vllm_slo_candidate"

// kindLabel tells the two TTFT kinds of a per-server series apart: "bad"
// for the requests that may have missed TTFT, "good" for those that may
// have met it. One rule bounds both, so that what they share (every read
// but the TTFT counters) is read once.
const kindLabel = "vllm_slo_ttft_kind"

// kindName is kindLabel's value of a kind.
func kindName(bad bool) string {
	if bad {
		return "bad"
	}
	return "good"
}

// lags are the look-backs, in group intervals, of the carried in-flight
// bound (carriedBound): the bound is the least over them, doubling so that
// a few reads reach far back.
var lags = []int{2, 4, 8}

// reachBacks are the look-backs, in group intervals, of the decode-time
// reach (reachesOf), about doubling up to the farthest, 10 intervals. Each
// look-back costs reads of every server at every evaluation (its sample's
// counter and reset test and a freshness test, and the decode-time
// bucket's change per edge it adds): all of 2 to 10 doubled the reach's
// reads, for the edges between those picked (vLLM's defaults 40 and 60 s
// at 15 s), which bound the finishers with such decode times by an
// interval or two fewer first tokens. The alert-quality scenarios' 1m joint width moved by 0.3%
// to 0.7% of its value without them; with 2, 4 and 10 alone, by 1.2 to 2.4%.
var reachBacks = []int{2, 3, 5, 10}

// maxReachIntervals is the farthest look-back of reachBacks.
var maxReachIntervals = reachBacks[len(reachBacks)-1]

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
	slo      string
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
	rp := reachPlan{slo: lp.slo.Name, interval: lp.interval, ttft: lp.ttft, e2e: lp.e2e, running: lp.running, waiting: lp.waiting,
		lo: p.edge.Edge, noLo: p.edge.None}
	hi, ok := upperEdge(p.edges, p.obj.Threshold)
	rp.hi, rp.noHi = hi, !ok
	if names, err := histogramNames(cfg, slo.Decode); err == nil {
		rp.decode = names
		rp.reaches = reachesOf(cfg.Global.BucketEdges(slo.Decode), lp.interval)
	}
	return rp, true
}

// reachesOf picks, for each look-back of reachBacks, the largest
// decode-time edge whose finishers' first tokens it
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
	for _, k := range reachBacks {
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

// counter is the counter of first tokens of one kind per server at its
// latest sample in (t − offset − within, t − offset]: for the TTFT-bad
// ones the count minus the bucket at the lower edge (the most that
// missed), for the TTFT-good ones the bucket at the upper edge (the most
// that met).
func (rp reachPlan) counter(bad bool, offset, within time.Duration) string {
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

// The interval's own samples, s_0 and s_1 (k = 0, 1 intervals back), are
// read raw, each the latest within two intervals of its instant, so that
// a sample late by a failed scrape is the same sample (an older one reads
// nothing and the terms on it drop), and a range of two samples instead of
// lookback's twenty keeps the reads cheap. Older samples are read from
// pastRules' series (past).

// pastRules record, at every evaluation and per server, what the bounds'
// look-backs read of the server's latest sample in the interval ending
// there, (t − i, t]: the counters of each TTFT kind (counter), running +
// waiting, and whether the TTFT counter was unreset (unresetNow). A
// look-back k >= 2 intervals reads them (past) instead of the raw series:
// one read of one series per server where the raw reads were up to five
// of several, and the same read shared by every bound that looks back
// there.
func (rp reachPlan) pastRules() []Rule {
	l := map[string]string{"slo": rp.slo}
	kind := func(bad bool) map[string]string {
		return map[string]string{"slo": rp.slo, kindLabel: kindName(bad)}
	}
	return []Rule{
		{Record: recSrvTTFTPast, Labels: kind(true), Expr: rp.counter(true, 0, rp.interval),
			Comment: "Per server, at its latest sample in the interval: the first tokens that may have missed TTFT and\n" +
				"those that may have met it, running + waiting, and 1 where the TTFT counter did not go down (and the\n" +
				"server has a sample within lookback): what the finisher bounds read 2 to 10 intervals back."},
		{Record: recSrvTTFTPast, Labels: kind(false), Expr: rp.counter(false, 0, rp.interval)},
		{Record: recSrvInFlightPast, Labels: l, Expr: rp.inFlightSample(0, rp.interval)},
		{Record: recSrvUnresetPast, Labels: l, Expr: rp.unresetNow()},
	}
}

// past reads a series of pastRules as recorded k >= 2 intervals back,
// without its slo label, so that it matches the raw series' labels.
//
// Proof of phase: pastRules are in the same group as their readers, whose
// evaluations are stamped at t_j = t_0 + j·i (Prometheus and vmalert stamp
// each evaluation of a group one interval after the one before). At t_j
// the range [t_j − k·i − i + 1 ms, t_j − k·i], i consecutive milliseconds,
// holds exactly one evaluation, t_{j−k}, whose sample is the server's
// latest in (t_j − (k+1)·i, t_j − k·i]: what a raw read k intervals back
// within one interval selects. The condition, as for the long group
// (longgroup.go): that evaluation ran and its series are searchable two
// intervals later. When not, the term on it is absent and the bound keeps
// its other terms: wider, never wrong.
func (rp reachPlan) past(name string, k int) string {
	return fmt.Sprintf("min without (slo) (last_over_time(%s[%s] offset %s))", selector(name, "slo", rp.slo),
		model.Duration(rp.interval-time.Millisecond), model.Duration(time.Duration(k)*rp.interval))
}

// resetIn selects the servers whose TTFT counter went down between two
// consecutive samples the later of which lies in the last n intervals,
// (t − n·i, t]: resets() over that range counts the pairs inside it, and
// its least sample below the latest sample at or before t − n·i is the pair
// across its start. VictoriaMetrics' resets() also compares the range's
// first sample with the one before it, which the second test already
// does, so both engines select the same servers.
func (rp reachPlan) resetIn(n int) string {
	r := model.Duration(time.Duration(n)*rp.interval - time.Millisecond)
	parts := make([]string, len(rp.ttft))
	for j, name := range rp.ttft {
		parts[j] = fmt.Sprintf("(resets(%[1]s_count[%[2]s]) > 0 or min_over_time(%[1]s_count[%[2]s]) < %[3]s)",
			name, r, latest(name+"_count", time.Duration(n)*rp.interval))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// unresetNow is 1 for every server with a TTFT count within lookback but
// none of resetIn(1): no reset between consecutive samples the later of
// which lies in this interval (nothing to compare when it has none).
func (rp reachPlan) unresetNow() string {
	return fmt.Sprintf("(%s * 0 + 1) unless %s", at(rp.ttft, "_count", "", 0, lookback), rp.resetIn(1))
}

// unresetBack keeps, for k >= 3, the servers of pastRules' unreset series
// at every evaluation 2 to k − 1 intervals back (k − 2 samples, past's
// phase: the range [t − k·i + 1 ms, t − 2·i] holds exactly those
// evaluations): no reset between consecutive samples the later of which
// lies in (t − k·i, t − 2·i]. A missed evaluation, or a rule that failed
// there, counts as a reset.
func (rp reachPlan) unresetBack(k int) string {
	r := model.Duration(time.Duration(k-2)*rp.interval - time.Millisecond)
	return fmt.Sprintf("min without (slo) (count_over_time(%s[%s] offset %s) == %d)", selector(recSrvUnresetPast, "slo", rp.slo),
		r, model.Duration(2*rp.interval), k-2)
}

// inFlightSample is running + waiting per server at its latest sample in
// (t − offset − within, t − offset].
func (rp reachPlan) inFlightSample(offset, within time.Duration) string {
	return "(" + at(rp.running, "", "", offset, within) + " + " + at(rp.waiting, "", "", offset, within) + ")"
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
// between the interval's own samples, each the latest within two intervals.
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

// bothKinds is the counter of both TTFT kinds per server (counter), told
// apart by kindLabel, at the latest sample in (t − offset − within,
// t − offset].
func (rp reachPlan) bothKinds(offset, within time.Duration) string {
	return fmt.Sprintf("(label_replace(%s, %q, \"bad\", \"\", \"\") or label_replace(%s, %q, \"good\", \"\", \"\"))",
		rp.counter(true, offset, within), kindLabel, rp.counter(false, offset, within), kindLabel)
}

// perKind is x − F, x a per-server vector without kindLabel and F a
// vector of both kinds (bothKinds or past's recSrvTTFTPast): each kind's
// difference, with its kindLabel.
func perKind(x, f string) string {
	return fmt.Sprintf("(%s - ignoring (%s) group_right () %s)", x, kindLabel, f)
}

// unresetSince keeps, for a look-back k >= 2, the servers whose TTFT
// counter did not go down between consecutive samples from s_k on, s_k
// the latest sample k intervals back within one interval (past): those
// the later of which lies in the last two intervals are the bound's own
// test (resetIn(2) in finisherBound); those in (t − k·i, t − 2·i],
// unresetBack's, from k = 3 on. Samples before s_k do not matter: the
// terms on s_k count first tokens after it and requests in flight at it.
func (rp reachPlan) unresetSince(term string, k int) string {
	if k <= 2 {
		return term
	}
	return fmt.Sprintf("(%s and ignoring (%s) %s)", term, kindLabel, rp.unresetBack(k))
}

// carriedTerms are the candidates of the carried bound on the interval's
// finishers of each TTFT kind, less F(s_0) (finisherBound): B − F(s_1),
// with F the kind's counter (counter) and B the bound on the requests
// of the kind past their first token in flight at s_1, the interval's
// older sample: running + waiting there, R(s_1); or, for a look-back k of
// lags, the kind's first tokens between the sample k intervals back, s_k,
// and s_1, plus running + waiting at s_k, F(s_1) − F(s_k) + R(s_k). So
// the candidates are R(s_1) − F(s_1) and R(s_k) − F(s_k).
//
// Proof of B: such a request got its first token after s_k, and then it
// is one of the first tokens of its kind counted in (s_k, s_1], or at or
// before s_k; then, unfinished at s_1, it was in flight past its first
// token at s_k, where running + waiting counts it. The counter difference
// counts every first token of (s_k, s_0] with no reset from s_k on
// (unresetSince).
func (rp reachPlan) carriedTerms() []string {
	terms := []string{perKind(rp.inFlightSample(rp.interval, 2*rp.interval), rp.bothKinds(rp.interval, 2*rp.interval))}
	for _, k := range lags {
		terms = append(terms, rp.unresetSince(perKind(rp.past(recSrvInFlightPast, k), rp.past(recSrvTTFTPast, k)), k))
	}
	return terms
}

// reachTerm is the decode-time reach's candidate, less F(s_0)
// (finisherBound), where the decode-time histogram counted the
// interval's finishers: for a reach (edge e, look-back k), F(s_0) −
// F(s_k) + N − D_e (finisherRules) with N the interval's finishers and
// D_e those with a decode time at or under e, so N + the least over the
// reaches of −D_e − F(s_k). The decode-time count's change, filtered on
// equalling the finishers', is N; the rest is edgeTerm per edge.
func (rp reachPlan) reachTerm() string {
	var edges []string
	for j := 0; j < len(rp.reaches); {
		e := rp.reaches[j].edge
		var same []decodeReach
		for ; j < len(rp.reaches) && rp.reaches[j].edge == e; j++ {
			same = append(same, rp.reaches[j])
		}
		edges = append(edges, rp.edgeTerm(same))
	}
	n := fmt.Sprintf("(%s == %s)", rp.delta(rp.decode, "_count", ""), rp.delta(rp.e2e, "_count", ""))
	return plusPerKind(n, minAll(edges...))
}

// edgeTerm is the least over reaches of one edge e (consecutive in
// reachesOf, one look-back apart) of −D_e − F(s_k): −D_e, read once, plus
// the least of −F(s_k) over the reaches whose freshness test holds and
// whose counter did not reset from s_k on (unresetSince). Regrouping the
// least of sums so is exact: the counts are integers, exact in a float64.
// A reach's term exists exactly where it did with its own −D_e: every
// server with D_e, the freshness sample, F(s_k) and no reset.
func (rp reachPlan) edgeTerm(reaches []decodeReach) string {
	backs := make([]string, len(reaches))
	for i, r := range reaches {
		fresh := fmt.Sprintf("(-%s and ignoring (%s) %s)", rp.past(recSrvTTFTPast, r.back), kindLabel, at(rp.e2e, "_count", "", rp.interval, r.fresh))
		backs[i] = rp.unresetSince(fresh, r.back)
	}
	return plusPerKind("-"+rp.delta(rp.decode, "_bucket", leRegex(reaches[0].edge)), minAll(backs...))
}

// plusPerKind is x + F, x a per-server vector without kindLabel and F a
// vector of both kinds: each kind's sum, with its kindLabel.
func plusPerKind(x, f string) string {
	return fmt.Sprintf("(%s + ignoring (%s) group_right () %s)", x, kindLabel, f)
}

// finisherBound is, per server and TTFT kind (kindLabel), the most
// finishers of the interval of that kind: F(s_0), the kind's counter now,
// plus the least of the carried candidates (carriedTerms) and, with the
// decode-time histogram, the reach's (reachTerm). Both kinds are one
// vector, so every read but the TTFT counters' serves both; each raw
// sample and each past read is written once per candidate group; the
// counts are integers, exact in a float64, so regrouping the sums gives
// the same numbers.
//
// No reset may lie between s_k and s_0 for a term on s_k, so that every
// counter difference counts every first token of its span: the servers
// with a reset between consecutive samples the later of which lies in the
// last two intervals are dropped here (resetIn(2); s_1 lies at or after
// t − 3·i, so this covers the pairs from s_1 on), and a term on s_k also
// needs unresetSince. Each read is of the sample its range and past say; a
// server without one (a failed scrape, a new series, a missed evaluation)
// has no such term and keeps the others: no recursion, so a missed
// evaluation breaks nothing.
func (rp reachPlan) finisherBound() string {
	terms := rp.carriedTerms()
	if len(rp.decode) > 0 && len(rp.reaches) > 0 {
		terms = append(terms, rp.reachTerm())
	}
	return fmt.Sprintf("(%s + %s) unless ignoring (%s) %s", rp.bothKinds(0, 2*rp.interval), minAll(terms...), kindLabel, rp.resetIn(2))
}

// serverRules are the per-server rules of the finisher bounds: pastRules
// and finisherBound.
func (rp reachPlan) serverRules() []Rule {
	return append(rp.pastRules(), Rule{Record: recSrvTTFTFin, Labels: map[string]string{"slo": rp.slo}, Expr: rp.finisherBound(),
		Comment: "Per server and TTFT kind (vllm_slo_ttft_kind: bad, good), the most finishers of the interval that can have\n" +
			"missed (met) TTFT: the first tokens of that kind in the interval + those in flight one interval back\n" +
			"(running + waiting there, or the kind's first tokens since k intervals back + running + waiting then),\n" +
			"or the decode-time reach (finishers with a decode time under an edge got their first token within k\n" +
			"intervals: the kind's first tokens since then + the finishers over the edge). Proof: Go doc of the\n" +
			"rules package's finisherRules and finisherBound."})
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
//     flight at s_1, bounded by carriedBound's B.
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
	rec := recIntTTFTGoodFin
	if bad {
		rec = recIntTTFTBadFin
	}
	kind := fmt.Sprintf("label_replace(vector(1), %q, %q, \"\", \"\")", kindLabel, kindName(bad))
	srv := fmt.Sprintf("min without (slo, %s) (%s and on (%s) %s)", kindLabel, rp.thisEvaluation(lp.sel(recSrvTTFTFin, "")), kindLabel, kind)
	terms := []string{rp.finishedNow(), srv}
	expr := minAll("sum by (model_name) ("+old+")", fmt.Sprintf("sum by (model_name) (\n  %s\n)", minAll(terms...)))
	return []Rule{{Record: rec, Labels: lp.labels(""), Expr: expr,
		Comment: "Per model: the servers' least bounds (N at most) summed, and at most the model-wide bound."}}
}
