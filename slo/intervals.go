package slo

import (
	"math"
	"slices"
	"time"
)

// MatchMargin is the slack allowed between vLLM's two clocks when a finished
// request's decode time is used to place its first token. TTFT and the finish
// are observed by the frontend when it processes an output batch, while the
// decode time is measured between engine-core timestamps; the frontend
// observes each event at most a processing lag after the engine produced it,
// so first token = finish − decode holds to within that lag either way. One
// second is far above the lag of a healthy frontend (milliseconds) and still
// small against a 15 s scrape interval, so it rarely widens a reach.
const MatchMargin = time.Second

// Source is one scrape interval (Start, End] seen as the origin of first
// tokens, for one TTFT threshold.
type Source struct {
	// Start and End are the scrape times that bound the interval. A zero
	// Start marks the pseudo-source "everything before the first interval
	// kept": its first tokens are unknown.
	Start, End time.Time
	// FirstTokens is the TTFT count of the interval.
	FirstTokens float64
	// Bad and Good are the most TTFT-bad and the most TTFT-good first tokens
	// the interval can hold: FirstTokens minus the good lower bound, and the
	// good upper bound (+Inf for the pseudo-source).
	Bad, Good float64
	// GoodEst is the estimated TTFT-good first tokens of the interval.
	GoodEst float64
	// InFlightEnd is running + waiting at End, an upper bound on the requests
	// in flight there; +Inf when unknown.
	InFlightEnd float64
	// InFlightGood and InFlightBad, when HasSplit, are upper bounds on the
	// TTFT-good and the TTFT-bad requests past their first token still in
	// flight at End (see InFlightSplit).
	InFlightGood, InFlightBad float64
	HasSplit                  bool
}

// inFlight is the bound on the requests of one TTFT kind (good or bad)
// past their first token in flight at End.
func (s Source) inFlight(good bool) float64 {
	r := s.InFlightEnd
	if math.IsNaN(r) {
		r = math.Inf(1)
	}
	if s.HasSplit {
		if good {
			r = math.Min(r, s.InFlightGood)
		} else {
			r = math.Min(r, s.InFlightBad)
		}
	}
	return math.Max(r, 0)
}

// capacity is the most first tokens of one TTFT kind the source holds.
func (s Source) capacity(good bool) float64 {
	if good {
		return math.Max(s.Good, 0)
	}
	return math.Max(s.Bad, 0)
}

// InFlightSplit carries the bounds on the TTFT-good and TTFT-bad requests
// past their first token in flight from the previous scrape (prevGood,
// prevBad) over the interval src, whose finishers number n with finGood
// bounding the TTFT-good among them, to the interval's end, where at most
// queueHi requests past their first token are in flight.
//
// Proof: with QG_k the TTFT-good requests past their first token in flight
// at s_k, QG_k = QG_{k−1} + (TTFT-good first tokens of k) − (TTFT-good
// finishers of k) − (TTFT-good requests that left unfinished in k) <=
// QG_{k−1} + src.Good − finGood.Lower, and QG_k <= Q_k <= queueHi; likewise
// for the bad ones with src.Bad and at least n − finGood.Upper TTFT-bad
// finishers. Both are at least 0.
func InFlightSplit(prevGood, prevBad float64, src Source, finGood Bounded, n, queueHi float64) (good, bad float64) {
	if math.IsNaN(queueHi) {
		queueHi = math.Inf(1)
	}
	good = math.Min(queueHi, prevGood+src.capacity(true)-math.Max(finGood.Lower, 0))
	bad = math.Min(queueHi, prevBad+src.capacity(false)-math.Max(n-finGood.Upper, 0))
	return math.Max(good, 0), math.Max(bad, 0)
}

// Finishers is one scrape interval (Start, End] seen as where requests
// finished.
type Finishers struct {
	Start, End time.Time
	// N is the number of requests that finished (the e2e count) when
	// Known; an unknown count is 0 here, and is no count at all.
	N     float64
	Known bool
	// Lag is the histogram, over the same N requests, of the time from the
	// first token to the finish: vLLM's decode-time histogram. When only the
	// e2e histogram is known, LagUpperOnly is true and each bucket's upper
	// edge only bounds the lag from above (its lower edge says nothing).
	// An invalid Lag means nothing is known of the lag.
	Lag          Histogram
	LagUpperOnly bool
}

// lagBucket is one bucket of the lag histogram with the sources it reaches.
type lagBucket struct {
	count       float64
	first, last int // reachable sources, inclusive
}

// reach returns, for each non-empty lag bucket, the contiguous range of
// sources whose interval can hold the first token of a request that finished
// in fin with a lag in that bucket.
//
// A request finishing at f in (fin.Start, fin.End] with lag d in (lo, hi]
// had its first token at t with |t − (f − d)| <= MatchMargin, so t lies in
// (fin.Start − hi − m, fin.End − lo + m). Source i, the interval
// (Start_i, End_i], can hold t only if Start_i < fin.End − lo + m and
// End_i > fin.Start − hi − m; the test below uses <= and >=, which only adds
// sources. The sources are consecutive in time, so the reachable ones form a
// range. Since t <= f, no source after fin's interval is ever listed (the
// caller passes none).
func reach(sources []Source, fin Finishers) []lagBucket {
	lo, hi, counts := lagEdges(fin)
	m := MatchMargin.Seconds()
	var out []lagBucket
	for b := range counts {
		if counts[b] <= 0 {
			continue
		}
		from := secondsBefore(fin.Start, fin.End) - hi[b] - m // earliest first token, relative to fin.End
		to := -lo[b] + m                                      // latest
		lb := lagBucket{count: counts[b], first: -1, last: -1}
		for i, s := range sources {
			start := math.Inf(-1)
			if !s.Start.IsZero() {
				start = secondsBefore(s.Start, fin.End)
			}
			end := secondsBefore(s.End, fin.End)
			if start <= to && end >= from {
				if lb.first < 0 {
					lb.first = i
				}
				lb.last = i
			}
		}
		if lb.first < 0 {
			// No source can hold these first tokens: the data contradict each
			// other (or the sources kept start too late). Let them reach every
			// source so that no bound is made tighter than the truth allows.
			lb.first, lb.last = 0, len(sources)-1
		}
		out = append(out, lb)
	}
	return out
}

// secondsBefore is t − ref in seconds (negative when t is before ref).
func secondsBefore(t, ref time.Time) float64 {
	return t.Sub(ref).Seconds()
}

// lagEdges returns the lower and upper edge and the count of every bucket of
// fin's lag histogram: one bucket (0, +Inf] holding all N when the lag is
// unknown, lower edges 0 when only upper bounds are known.
func lagEdges(fin Finishers) (lo, hi, counts []float64) {
	b, ok := prepare(fin.Lag)
	if !ok || b.n <= 0 || math.Abs(b.n-fin.N) > 1e-9*math.Max(1, fin.N) {
		return []float64{0}, []float64{math.Inf(1)}, []float64{fin.N}
	}
	lo = make([]float64, len(b.count))
	for i := range lo {
		if !fin.LagUpperOnly {
			lo[i] = math.Max(0, b.lower[i])
		}
	}
	return lo, b.upper, b.count
}

// inFlightCaps returns, for each source i, the least bound on the requests
// of one TTFT kind in flight at any scrape from End_i to the scrape before
// fin (the Ends of sources i..L−1, L being the last source, fin's own
// interval): a request whose first token came in source i and that finished
// in fin was past its first token and in flight at each of those scrapes.
// The last source gets +Inf. This rests on vLLM's frontend updating the
// running and waiting gauges from the same output batch whose finished
// requests it records in the finish histograms: at a scrape, a request whose
// finish is not yet recorded is still in the gauges (the simulator behaves
// so; a multi-process frontend that lags between the two would need slack).
func inFlightCaps(sources []Source, good bool) []float64 {
	caps := make([]float64, len(sources))
	run := math.Inf(1)
	for i := len(sources) - 1; i >= 0; i-- {
		if i < len(sources)-1 {
			run = math.Min(run, sources[i].inFlight(good))
		}
		caps[i] = run
	}
	return caps
}

// mostFrom is the most of fin's N requests whose first tokens can come from a
// kind of first token (TTFT-good or TTFT-bad) that source i holds at most
// capacity(good) of: the optimum of
// a transportation problem from the sources to fin's lag buckets, each bucket
// able to draw only from its reachable range.
//
// It solves a relaxation exactly, so the result is at least the true
// optimum. The constraints kept: source i gives at most min(capacity,
// caps[i]) (caps from inFlightCaps: the requests from i that finish in fin are
// in flight at every scrape between), a bucket takes at most its count and
// only from its range, and all sources before fin's own give together at
// most the bound on that kind in flight at fin's start scrape (so the total is at most
// that plus what fin's own interval can give). Without the last one this
// is a bipartite b-matching in a convex graph (each bucket's neighbours are
// consecutive), which the greedy below solves exactly (Glover's rule: give
// each source, in time order, to the open bucket whose range ends first; an
// exchange argument shows some optimum agrees with each choice); the last
// constraint then caps the total, and since every feasible solution obeys
// both, the minimum of the two optima bounds it.
func mostFrom(sources []Source, buckets []lagBucket, good bool) float64 {
	caps := inFlightCaps(sources, good)
	order := slices.Clone(buckets)
	slices.SortStableFunc(order, func(a, b lagBucket) int { return a.last - b.last })
	left := make([]float64, len(order))
	for b := range order {
		left[b] = order[b].count
	}
	total := 0.0
	for i, s := range sources {
		supply := math.Min(s.capacity(good), caps[i])
		for b := range order {
			if supply <= 0 {
				break
			}
			if order[b].first > i || order[b].last < i || left[b] <= 0 {
				continue
			}
			take := math.Min(supply, left[b])
			left[b] -= take
			supply -= take
			total += take
		}
	}
	if n := len(sources); n >= 2 {
		if r := sources[n-2].inFlight(good); !math.IsInf(r, 1) {
			// The own interval gives at most its capacity and what the
			// buckets reaching it ask for.
			own := 0.0
			for _, b := range buckets {
				if b.last == n-1 {
					own += b.count
				}
			}
			own = math.Min(own, sources[n-1].capacity(good))
			total = math.Min(total, r+own)
		}
	}
	return total
}

// FinishersTTFTGood bounds how many of the N requests that finished in fin
// met the TTFT threshold that the sources describe. sources are the
// consecutive intervals that can hold their first tokens, oldest first, the
// last being fin's own interval; the first may be the pseudo-source (zero
// Start) standing for everything older.
//
// Proof. Every one of the N requests had its first token in a reachable
// source (see reach). Let badMax be the most TTFT-bad first tokens the N
// requests can draw (mostFrom with each source's Bad) and goodMax the most
// TTFT-good ones (with Good). The true count of TTFT-bad among the N is a
// feasible value of the first problem, so it is <= badMax, and the TTFT-good
// count is >= N − badMax; likewise it is <= goodMax. So the TTFT-good count
// lies in [max(0, N − badMax), min(N, goodMax)].
//
// The estimate spreads each lag bucket's requests over the time its first
// tokens can span, (fin.Start − hi, fin.End − lo), in proportion to each
// source's first tokens in that span (uniform within an interval), and
// gives them that source's estimated good share; it is clamped into the
// bounds.
func FinishersTTFTGood(sources []Source, fin Finishers) Bounded {
	if fin.N <= 0 || len(sources) == 0 {
		return Exact(0)
	}
	buckets := reach(sources, fin)
	badMax := mostFrom(sources, buckets, false)
	goodMax := mostFrom(sources, buckets, true)
	res := Bounded{
		Lower: math.Max(0, fin.N-badMax),
		Upper: math.Min(fin.N, goodMax),
	}
	if res.Lower > res.Upper { // only with inconsistent inputs
		res.Lower, res.Upper = 0, fin.N
	}
	res.Estimate = clampInto(estimateGood(sources, fin), res)
	return res
}

// estimateGood is the estimate of FinishersTTFTGood before clamping.
func estimateGood(sources []Source, fin Finishers) float64 {
	lo, hi, counts := lagEdges(fin)
	overall := shareOf(sources)
	good := 0.0
	for b, c := range counts {
		if c <= 0 {
			continue
		}
		from := fin.Start.Add(-seconds2dur(hi[b]))
		to := fin.End.Add(-seconds2dur(lo[b]))
		w, wg := 0.0, 0.0
		for _, s := range sources {
			if s.Start.IsZero() || !(s.FirstTokens > 0) {
				continue
			}
			span := s.End.Sub(s.Start).Seconds()
			ov := overlap(s.Start, s.End, from, to)
			if span <= 0 || ov <= 0 {
				continue
			}
			f := s.FirstTokens * ov / span
			w += f
			wg += f * math.Min(math.Max(s.GoodEst/s.FirstTokens, 0), 1)
		}
		share := overall
		if w > 0 {
			share = wg / w
		}
		good += c * share
	}
	return good
}

// shareOf is the estimated good share of all first tokens of the sources, 1
// when they hold none.
func shareOf(sources []Source) float64 {
	f, g := 0.0, 0.0
	for _, s := range sources {
		if s.FirstTokens > 0 {
			f += s.FirstTokens
			g += math.Max(s.GoodEst, 0)
		}
	}
	if f <= 0 {
		return 1
	}
	return math.Min(g/f, 1)
}

// seconds2dur converts seconds to a Duration, saturating (infinite lags
// reach back as far as a Duration can).
func seconds2dur(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}

// overlap is the length in seconds of (a0, a1] ∩ (b0, b1].
func overlap(a0, a1, b0, b1 time.Time) float64 {
	start, end := a0, a1
	if b0.After(start) {
		start = b0
	}
	if b1.Before(end) {
		end = b1
	}
	return math.Max(0, end.Sub(start).Seconds())
}

// TTFTSource builds the source facts of one interval for a TTFT threshold
// from the interval's TTFT histogram increase; inFlightEnd is running +
// waiting at its end (+Inf when unknown).
func TTFTSource(start, end time.Time, ttft Histogram, threshold, inFlightEnd float64, e Estimator) Source {
	s := Source{Start: start, End: end, InFlightEnd: inFlightEnd, InFlightGood: math.Inf(1), InFlightBad: math.Inf(1)}
	b, ok := prepare(ttft)
	if !ok {
		// No TTFT histogram: its first tokens are unknown.
		s.Bad, s.Good = math.Inf(1), math.Inf(1)
		return s
	}
	g := e.GoodCount(threshold, ttft)
	s.FirstTokens = b.n
	s.Bad = math.Max(0, b.n-g.Lower)
	s.Good = math.Max(0, g.Upper)
	s.GoodEst = g.Estimate
	return s
}

// InFlightQueue bounds Q, the requests past their first token still in
// flight at one scrape, from the bound at the previous scrape: Q_k = Q_{k−1}
// + F_k − N_k − A_k with A_k >= 0 (a request that got its first token in the
// interval or was in flight at its start either finished, left unfinished or
// is still in flight), so Q_k <= Q_{k−1},hi + F_k − N_k; and Q_k <= R_k,
// running + waiting. After a restart prevHi is 0 (a new process starts
// empty). The lower bound is 0 here; later finishers raise it (see
// SurelyBefore).
func InFlightQueue(prevHi, firstTokens, finished, inFlight float64) float64 {
	hi := math.Max(0, prevHi+firstTokens-finished)
	if !math.IsNaN(inFlight) && inFlight >= 0 {
		hi = math.Min(hi, inFlight)
	}
	return hi
}

// SurelyBefore returns, per bucket of fin's lag histogram, the count of
// requests whose first token certainly came at or before a scrape at time
// at (with at <= fin.Start): those with a lag above fin.End − at + margin.
// A request of fin finished after fin.Start >= at and had its first token
// at t <= f − lo + m <= fin.End − lo + m; when that is <= at the request
// was past its first token and in flight at at, so these counts raise the
// lower bound of Q at that scrape. The result is the total.
func SurelyBefore(fin Finishers, at time.Time) float64 {
	if fin.LagUpperOnly || at.After(fin.Start) {
		return 0
	}
	lo, _, counts := lagEdges(fin)
	m := MatchMargin.Seconds()
	need := fin.End.Sub(at).Seconds() + m
	n := 0.0
	for b, c := range counts {
		if lo[b] >= need {
			n += c
		}
	}
	return n
}

// Abandoned bounds the requests that got a first token and left without a
// finish observation over a window (I, J], from the conservation
// Q_I + ΔF = ΔN + A + Q_J: every request past its first token at s_I or
// with a first token in the window either finished in it, left unfinished
// in it, or is still in flight at s_J. With Q_I in qStart and Q_J in qEnd,
// A = Q_I − Q_J + ΔF − ΔN lies in [qStart.lo − qEnd.hi + ΔF − ΔN, qStart.hi
// − qEnd.lo + ΔF − ΔN], intersected with [0, +Inf). Across a restart the
// requests in flight are lost: they leave without finishing, which the
// identity already counts. The estimate uses the estimates of Q.
func Abandoned(qStart, qEnd Bounded, firstTokens, finished float64) Bounded {
	d := firstTokens - finished
	res := Bounded{
		Lower: math.Max(0, qStart.Lower-qEnd.Upper+d),
		Upper: math.Max(0, qStart.Upper-qEnd.Lower+d),
	}
	res.Estimate = clampInto(qStart.Estimate-qEnd.Estimate+d, res)
	return res
}

// Population says whether requests abandoned after their first token count
// in the population of "all" (as not served well) or are left out.
type Population int

// The populations.
const (
	// AbandonedBad counts every abandoned request as a request that did not
	// meet the SLO: the user gave up on it.
	AbandonedBad Population = iota
	// AbandonedExcluded judges the finished requests only.
	AbandonedExcluded
)

// The populations of requests turned away at admission: a user turned away
// was not served within any objective (RejectedBad, the default), or the SLO
// judges only the requests the server took (RejectedExcluded).
const (
	RejectedBad      = AbandonedBad
	RejectedExcluded = AbandonedExcluded
)

// Unserved is the requests beside the finished ones that s's population of
// "all" holds, none of them good: the abandoned (a bound) under
// AbandonedBad, plus the rejected under RejectedBad. The rejected count is
// the increase of the server's own counter over the same scrapes, exact, so
// it adds to every side of the bound alike.
func Unserved(s SLO, abandoned Bounded, rejected float64) Bounded {
	u := Exact(0)
	if s.Abandoned == AbandonedBad {
		u = abandoned
	}
	if s.Rejected == RejectedBad && rejected > 0 {
		u = Bounded{Lower: u.Lower + rejected, Estimate: u.Estimate + rejected, Upper: u.Upper + rejected}
	}
	return u
}

// AttainmentOver is the share of good requests in a population of n
// finished requests plus, with AbandonedBad, the abandoned ones (never
// good). Since good/(n + A) falls as A grows, the share lies in
// [good.lo/(n + A.hi), good.hi/(n + A.lo)] (the lower bound 0 when A is
// unbounded, as without running and waiting gauges). ok is false when the
// population may be empty.
func AttainmentOver(good Bounded, n float64, abandoned Bounded, p Population) (Bounded, bool) {
	if p == AbandonedExcluded {
		abandoned = Exact(0)
	}
	lo, hi, est := n+abandoned.Upper, n+abandoned.Lower, n+abandoned.Estimate
	if !(hi > 0) || math.IsNaN(lo) || math.IsInf(est, 0) {
		return Bounded{}, false
	}
	res := Bounded{
		Lower: math.Min(1, math.Max(0, good.Lower/lo)), // 0 when A is unbounded
		Upper: math.Min(1, math.Max(0, good.Upper/hi)),
	}
	res.Lower = math.Min(res.Lower, res.Upper)
	res.Estimate = clampInto(good.Estimate/math.Max(est, 1e-300), res)
	return res, true
}

// IntervalResult is one SLO judged over the requests that finished in one
// scrape interval.
type IntervalResult struct {
	// Good is the number of them that met every per-request objective.
	Good Bounded
	// Tokens is the generation tokens of those good requests; HasTokens is
	// false when the generation-token histogram is absent or empty.
	Tokens    Bounded
	HasTokens bool
	// Unknown lists the objectives whose histogram the interval lacks: "all"
	// cannot be judged, and Good is meaningless.
	Unknown []Metric
	// TTFTGood bounds the TTFT-good among the finishers ([0, N] when the SLO
	// has no TTFT objective or its histogram is absent).
	TTFTGood Bounded
	// FinishGood bounds the finishers meeting every finish-observed
	// objective (all N when the SLO has none).
	FinishGood Bounded
}

// TTFTThreshold is the strictest TTFT threshold of an SLO (meeting it meets
// them all); ok is false when the SLO has no TTFT objective.
func TTFTThreshold(s SLO) (float64, bool) {
	th, ok := math.Inf(1), false
	for _, o := range s.Objectives {
		if o.Metric == TTFT {
			th, ok = math.Min(th, o.Threshold), true
		}
	}
	return th, ok
}

// EvaluateInterval judges one SLO over the fin.N requests that finished in
// one interval. sources are the intervals that can hold their first tokens
// for the SLO's TTFT threshold (see FinishersTTFTGood); latency holds the
// interval's histogram increases and tokens its generation-token one.
//
// Each finish-observed objective's good count is over the same requests
// (carried by CarryGood when its count differs from N). The TTFT-good count
// among them comes from FinishersTTFTGood. JointGood then bounds the requests
// meeting them all (Fréchet: at least Σ good.lo − (m−1)·N, at most the least
// good.hi), which is a bound on this interval alone. ITL objectives are over
// token gaps and take no part. An objective whose histogram is absent makes
// the result Unknown: nothing says the requests met it. The goodput tokens
// are bounded by GoodputTokens; their estimate is the tokens times the
// product of the objectives' good shares of the tokens (a TPOT objective's
// from tpotTokenShare, the others' their good share of the requests).
func EvaluateInterval(s SLO, sources []Source, fin Finishers, latency map[Metric]Histogram, tokens Histogram, e Estimator) IntervalResult {
	res := IntervalResult{TTFTGood: Bounded{Upper: math.Max(fin.N, 0)}}
	var goods []Bounded
	var judgedBy []Objective // the objective of each of goods
	hasTTFT := false
	for _, o := range s.Objectives {
		h, present := latency[o.Metric]
		n, valid := observations(h)
		if !present || !valid {
			res.Unknown = append(res.Unknown, o.Metric)
			continue
		}
		switch o.Metric {
		case ITL:
		case TTFT:
			hasTTFT = true
			res.TTFTGood = FinishersTTFTGood(sources, fin)
		default:
			g := e.GoodCount(o.Threshold, h)
			goods = append(goods, CarryGood(g, n, fin.N, math.Max(0, n-fin.N), math.Max(0, fin.N-n)))
			judgedBy = append(judgedBy, o)
		}
	}
	if len(res.Unknown) > 0 {
		return res
	}
	res.FinishGood = JointGood(goods, fin.N)
	if hasTTFT {
		goods = append(goods, res.TTFTGood)
	}
	res.Good = JointGood(goods, fin.N)
	if len(goods) > 1 && fin.N > 0 {
		// Within one interval the time-dependence of the objectives is
		// already in each count (a burst makes the interval's TTFT share
		// low), so the estimate takes the rest as independent: the product
		// of the shares. Measured against the simulator's truth it errs
		// less than the midpoint with the comonotone minimum that
		// JointGood uses over whole windows.
		share := 1.0
		for _, g := range goods {
			share *= math.Min(math.Max(g.Estimate/fin.N, 0), 1)
		}
		res.Good.Estimate = clampInto(share*fin.N, res.Good)
	}
	if fin.N <= 0 {
		res.Good = Exact(0)
		res.Tokens, res.HasTokens = Exact(0), true
		return res
	}
	res.Tokens, res.HasTokens = GoodputTokens(res.Good, tokens)
	if res.HasTokens {
		// Bad requests need not be of average length: a TPOT objective's
		// share of the tokens comes from the TPOT and decode-time sums
		// (see tpotTokenShare); the other shares are taken as they are.
		total := math.Max(tokens.Sum, 0)
		share := 1.0
		for k, o := range judgedBy {
			if o.Metric == TPOT {
				share *= tpotTokenShare(o.Threshold, latency[TPOT], latency[Decode], goods[k].Estimate, fin.N, total)
				continue
			}
			share *= math.Min(math.Max(goods[k].Estimate/fin.N, 0), 1)
		}
		if hasTTFT {
			share *= math.Min(math.Max(res.TTFTGood.Estimate/fin.N, 0), 1)
		}
		res.Tokens.Estimate = clampInto(total*share, res.Tokens)
	}
	return res
}

// WindowTotals are the sums over a window's intervals that tighten the sum
// of their per-interval joint bounds (see TightenWindow).
type WindowTotals struct {
	// N is the finished requests and FinishGood the bounds on those meeting
	// every finish-observed objective, summed over the judged intervals.
	N          float64
	FinishGood Bounded
	// TTFTGood is the sum of the per-interval bounds on the TTFT-good
	// finishers.
	TTFTGood Bounded
	// BadIn and GoodIn are the most TTFT-bad and TTFT-good first tokens of
	// all the window's intervals (sums of Source.Bad and Source.Good).
	BadIn, GoodIn float64
	// BadAtStart and GoodAtStart bound the TTFT-bad and TTFT-good requests
	// past their first token in flight at the window's start.
	BadAtStart, GoodAtStart float64
}

// TightenWindow intersects sum, the sum over a window's intervals of their
// joint bounds, with bounds from the window's totals.
//
// Proof. Every TTFT-bad request that finished in the window had its first
// token in the window or was past it and in flight at the window's start,
// so the TTFT-bad finishers are at most BadAtStart + BadIn and the TTFT-good
// ones at least N − BadAtStart − BadIn; likewise they are at most
// GoodAtStart + GoodIn. Each interval's TTFT-good count lies in its bounds,
// so their sum lies in TTFTGood; intersecting gives window bounds [gLo,
// gHi]. Fréchet over the window's finishers then bounds those meeting TTFT
// and every finish-observed objective: at least FinishGood.Lower + gLo − N,
// at most min(FinishGood.Upper, gHi). Both hold alone, as does sum, so the
// intersection holds. The estimate of sum is clamped into the result.
func TightenWindow(sum Bounded, t WindowTotals) Bounded {
	gLo := math.Max(t.TTFTGood.Lower, t.N-t.BadAtStart-t.BadIn)
	gHi := math.Min(t.TTFTGood.Upper, t.GoodAtStart+t.GoodIn)
	res := Bounded{
		Lower: math.Max(sum.Lower, t.FinishGood.Lower+gLo-t.N),
		Upper: math.Min(sum.Upper, math.Min(t.FinishGood.Upper, gHi)),
	}
	if !(res.Lower <= res.Upper) { // only with inconsistent inputs
		return sum
	}
	res.Estimate = clampInto(sum.Estimate, res)
	return res
}
