package slo

import "math"

// inFlight bounds the requests in flight at a scrape by vLLM's running plus
// waiting gauges (a preempted request waits again, so it is counted too).
// ok is false when either gauge is unknown.
func inFlight(running, waiting Gauge) (start, end float64, ok bool) {
	if !running.Known || !waiting.Known {
		return 0, 0, false
	}
	start = math.Max(0, running.AtStart) + math.Max(0, waiting.AtStart)
	end = math.Max(0, running.AtEnd) + math.Max(0, waiting.AtEnd)
	if math.IsNaN(start) || math.IsNaN(end) {
		return 0, 0, false
	}
	return start, end, true
}

// CarryGood moves a good count measured over one population A (nA requests)
// onto another population B (nB requests), given upper bounds on |A\B|
// (leftA) and |B\A| (joinB).
//
// Proof sketch: good(B) = good(A∩B) + good(B\A), and good(A) − |A\B| <=
// good(A∩B) <= good(A), so good(A) − |A\B| <= good(B) <= good(A) + |B\A|.
// Since |A\B| − |B\A| = nA − nB, each bound also limits the other: |A\B| <=
// |B\A|max + nA − nB and |B\A| <= |A\B|max + nB − nA. The result is
// intersected with [0, nB]. The estimate scales A's ratio onto B
// (good(A)/nA·nB), clamped into the bounds; with nA = 0 it is the midpoint.
//
// For TTFT, A is the requests whose first token came in the window and B the
// requests that finished in it: a request of A\B is still in flight at the
// window's end, and one of B\A was in flight at its start, so the in-flight
// gauges at the edge scrapes bound them (see Evaluate).
func CarryGood(goodA Bounded, nA, nB, leftA, joinB float64) Bounded {
	leftA = math.Min(math.Min(leftA, joinB+nA-nB), nA)
	joinB = math.Min(math.Min(joinB, leftA+nB-nA), nB)
	leftA, joinB = math.Max(leftA, 0), math.Max(joinB, 0)
	res := Bounded{
		Lower: math.Max(0, goodA.Lower-leftA),
		Upper: math.Min(nB, goodA.Upper+joinB),
	}
	if res.Lower > res.Upper { // only with inconsistent inputs
		res.Lower = res.Upper
	}
	if nA > 0 {
		res.Estimate = goodA.Estimate / nA * nB
	} else {
		res.Estimate = (res.Lower + res.Upper) / 2
	}
	res.Estimate = clampInto(res.Estimate, res)
	return res
}

// JointGood bounds the number of requests, among n, that meet every one of
// several objectives whose good counts over the same n requests are goods.
//
// Bounds (Fréchet): at most min_i good_i,hi requests can meet them all, and at
// least n − Σ_i (n − good_i,lo) do, since each objective rules out at most
// n − good_i,lo requests; lower = max(0, Σ good_i,lo − (m−1)·n).
//
// Estimate: violations of latency objectives come together (a busy batch
// slows TTFT and TPOT at once), so the objectives are positively dependent
// and the truth lies between the independent product Π r_i and the
// comonotone min r_i of the ratios r_i = good_i/n; the estimate is their
// midpoint, clamped into the bounds. With no objective every request is good.
func JointGood(goods []Bounded, n float64) Bounded {
	if len(goods) == 0 || n <= 0 {
		return Exact(math.Max(n, 0))
	}
	sumLo, hi := 0.0, n
	prod, minR := 1.0, 1.0
	for _, g := range goods {
		sumLo += g.Lower
		hi = math.Min(hi, g.Upper)
		r := math.Min(math.Max(g.Estimate/n, 0), 1)
		prod *= r
		minR = math.Min(minR, r)
	}
	res := Bounded{
		Lower: math.Max(0, sumLo-float64(len(goods)-1)*n),
		Upper: math.Max(0, hi),
	}
	res.Lower = math.Min(res.Lower, res.Upper)
	if len(goods) == 1 {
		res = goods[0]
	} else {
		res.Estimate = (prod + minR) / 2 * n
	}
	res.Estimate = clampInto(res.Estimate, res)
	return res
}

// GoodputTokens bounds the generation tokens of the good requests among the
// finished ones, given the joint good count and the per-request
// generation-tokens histogram of the same finished requests.
//
// The tokens of all finished requests are exact: total = tokens.Sum. With k
// bad requests, k in [n − joint.Upper, n − joint.Lower], the bad ones hold at
// most most(k), the tokens of the k largest requests counted at the upper
// edges of the top buckets (total when the +Inf bucket is reached, and never
// more than total − least(n−k)), and at least least(k), the k smallest at the
// lower edges of the bottom buckets (and at least total − most(n−k)). So the
// good tokens lie in [total − most(k_hi), total − least(k_lo)] ∩ [0, total].
// The estimate assumes bad requests are of average length: total·joint/n.
// ok is false when the histogram is invalid or empty.
func GoodputTokens(joint Bounded, tokens Histogram) (Bounded, bool) {
	var scratch [4 * scratchEdges]float64 // the buckets, on the stack
	b, ok := prepareIn(tokens, scratch[:])
	if !ok || b.n <= 0 || math.IsNaN(b.sum) {
		return Bounded{}, false
	}
	total := math.Max(b.sum, 0)
	n := b.n
	var res Bounded
	res.Lower, res.Upper = b.goodTokens(joint.Lower, joint.Upper, total)
	res.Estimate = clampInto(total*math.Min(math.Max(joint.Estimate/n, 0), 1), res)
	return res, true
}

// goodTokens bounds, as GoodputTokens proves, the tokens of the good
// requests among b's n when they number between gLo and gHi and all n hold
// total tokens.
func (b buckets) goodTokens(gLo, gHi, total float64) (lo, hi float64) {
	n := b.n
	kHi := math.Min(math.Max(n-gLo, 0), n)
	kLo := math.Min(math.Max(n-gHi, 0), n)
	most := func(k float64) float64 {
		v := math.Min(b.most(k, total), total-b.least(n-k))
		return math.Max(v, 0)
	}
	least := func(k float64) float64 {
		v := math.Max(b.least(k), total-b.most(n-k, total))
		return math.Min(v, total)
	}
	lo = math.Max(0, total-most(kHi))
	hi = math.Min(total, total-least(kLo))
	return math.Min(lo, hi), hi
}

// least is the smallest possible sum of k observations: the k lowest
// observations at the lower edges of their buckets (never below 0).
func (b buckets) least(k float64) float64 {
	s := 0.0
	for i := 0; i < len(b.count) && k > 0; i++ {
		take := math.Min(b.count[i], k)
		if take <= 0 {
			continue
		}
		s += take * math.Max(b.lower[i], 0)
		k -= take
	}
	return s
}

// most is the largest possible sum of k observations: the k highest at the
// upper edges of their buckets; any taken from the +Inf bucket make it cap.
func (b buckets) most(k, capAt float64) float64 {
	s := 0.0
	for i := len(b.count) - 1; i >= 0 && k > 0; i-- {
		take := math.Min(b.count[i], k)
		if take <= 0 {
			continue
		}
		if math.IsInf(b.upper[i], 1) {
			return capAt
		}
		s += take * b.upper[i]
		k -= take
	}
	return math.Min(s, capAt)
}

// tpotTokenShare estimates the share of n finished requests' generation
// tokens (total) held by those meeting a TPOT objective of threshold th,
// good of them by estimate, from the interval's TPOT and decode-time
// histograms of the same requests.
//
// A request's TPOT is its decode time over its tokens after the first, so
// the decode-time sum D is Σ (k_i − 1)·TPOT_i, and the TPOT sum S and the
// tokens after the first, A = total − n, are known too. Split the requests
// into the good (TPOT <= th, mean TPOT t_g) and the bad (mean t_b) and take
// length and TPOT as unrelated within each class: their tokens after the
// first, X and Y, then satisfy X + Y = A and t_g·X + t_b·Y = D, which fixes
// Y = (D − t_g·A)/(t_b − t_g) (kept in [0, A]). When slow requests are the
// short ones (a long request's TPOT averages over more of the batch's ups
// and downs), Y is below the bad requests' share of A, and the good ones
// hold more than their share of the tokens. The good class is the buckets
// at or below th, t_g their middles weighted by their counts; t_b is the
// rest of S over the bad requests. The good requests hold good + X tokens
// (when the estimate good differs from the good class's count, the class's
// tokens scale down with it, or the extra good ones, from a bucket that
// straddles th, take the bad class's mean). The count share good/n is
// returned when the histograms do not describe the same n requests or the
// classes cannot be told apart. Only an estimate: the bounds of the goodput
// tokens (GoodputTokens) do not depend on it.
func tpotTokenShare(th float64, tpot, decode Histogram, good, n, total float64) float64 {
	countShare := math.Min(math.Max(good/n, 0), 1)
	tb, ok1 := prepare(tpot)
	db, ok2 := prepare(decode)
	same := func(m float64) bool { return math.Abs(m-n) <= 1e-9*math.Max(1, n) }
	if !ok1 || !ok2 || !same(tb.n) || !same(db.n) || math.IsNaN(tb.sum) || math.IsNaN(db.sum) || !(total > n) {
		return countShare
	}
	nGood, sGood := 0.0, 0.0
	for i, c := range tb.count {
		if c <= 0 || tb.upper[i] > th {
			continue
		}
		nGood += c
		sGood += c * (math.Max(tb.lower[i], 0) + tb.upper[i]) / 2
	}
	nBad := n - nGood
	if !(nGood > 0) || !(nBad > 0) {
		return countShare
	}
	tg, tBad := sGood/nGood, (tb.sum-sGood)/nBad
	if !(tBad > tg) {
		return countShare
	}
	a := total - n
	y := math.Min(math.Max((db.sum-tg*a)/(tBad-tg), 0), a)
	goodTokens := good + (a-y)*math.Max(good, 0)/nGood // fewer good than the good buckets hold
	if extra := good - nGood; extra > 0 {
		// Good ones in a bucket that straddles th: of the bad class's length.
		goodTokens = good + (a - y) + extra*y/nBad
	}
	return math.Min(math.Max(goodTokens/total, 0), 1)
}
