package slo

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// synthReq is one request of the synthetic timeline of TestLedgerBoundsHoldTruth.
type synthReq struct {
	arrival, first, end time.Time // end: finish, or when the client left
	finished            bool
	ttft                float64
}

var (
	ledgerTTFTEdges   = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, inf}
	ledgerDecodeEdges = []float64{0.3, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 60, inf}
)

// countInto adds v to the cumulative counts of a histogram with edges.
func countInto(counts []float64, edges []float64, v float64) {
	for i, e := range edges {
		if v <= e {
			for k := i; k < len(counts); k++ {
				counts[k]++
			}
			return
		}
	}
}

// synthTimeline draws requests whose TTFT and decode time swing with bursts,
// a share of them abandoned after the first token, and returns them with the
// scrape times.
func synthTimeline(rng *rand.Rand, t0 time.Time, scrapes int, step time.Duration) []synthReq {
	var reqs []synthReq
	horizon := t0.Add(time.Duration(scrapes) * step)
	for at := t0; at.Before(horizon); {
		burst := (at.Sub(t0)/(2*time.Minute))%2 == 1
		rate := 3.0
		if burst {
			rate = 12
		}
		at = at.Add(time.Duration(rng.ExpFloat64() / rate * 1e9))
		ttft := 0.05 + rng.ExpFloat64()*0.2
		decode := rng.ExpFloat64() * 6
		if burst {
			ttft += rng.Float64() * 4
			decode *= 2
		}
		r := synthReq{arrival: at, ttft: ttft}
		r.first = at.Add(time.Duration(ttft * 1e9))
		r.end = r.first.Add(time.Duration(decode * 1e9))
		r.finished = rng.Float64() > 0.1+math.Min(ttft/10, 0.3)
		if !r.finished {
			r.end = r.first.Add(time.Duration(rng.Float64() * decode * 1e9))
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func inSpan(x, from, to time.Time) bool { return x.After(from) && !x.After(to) }

// TestLedgerBoundsHoldTruth runs the ledger's math on synthetic timelines
// with bursts and abandoned streams, interval by interval as the pipeline
// does: every finish interval's TTFT-good count, the carried in-flight
// bounds and every window's abandoned count must hold the truth exactly.
func TestLedgerBoundsHoldTruth(t *testing.T) {
	const threshold = 0.5
	step := 15 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		scrapes := 60
		reqs := synthTimeline(rng, t0, scrapes, step)
		at := func(k int) time.Time { return t0.Add(time.Duration(k) * step) }
		inFlight := func(s time.Time) float64 {
			n := 0.0
			for _, r := range reqs {
				if !r.arrival.After(s) && r.end.After(s) {
					n++
				}
			}
			return n
		}
		pastFirst := func(s time.Time) float64 {
			n := 0.0
			for _, r := range reqs {
				if !r.first.After(s) && r.end.After(s) {
					n++
				}
			}
			return n
		}
		var sources []Source
		qHi := []float64{inFlight(at(0))}
		prevGood, prevBad := qHi[0], qHi[0]
		firstTokens, finished := []float64{0}, []float64{0}
		for k := 1; k <= scrapes; k++ {
			from, to := at(k-1), at(k)
			ttft := Histogram{Edges: ledgerTTFTEdges, Counts: make([]float64, len(ledgerTTFTEdges))}
			lag := Histogram{Edges: ledgerDecodeEdges, Counts: make([]float64, len(ledgerDecodeEdges))}
			n, good := 0.0, 0.0
			for _, r := range reqs {
				if inSpan(r.first, from, to) {
					countInto(ttft.Counts, ledgerTTFTEdges, r.ttft)
				}
				if r.finished && inSpan(r.end, from, to) {
					n++
					countInto(lag.Counts, ledgerDecodeEdges, r.end.Sub(r.first).Seconds())
					if r.ttft <= threshold {
						good++
					}
				}
			}
			src := TTFTSource(from, to, ttft, threshold, inFlight(to), DefaultEstimator)
			sources = append(sources, src)
			fin := Finishers{Start: from, End: to, N: n, Lag: lag}
			// Everything before the first scrape: unknown first tokens,
			// bounded by the requests in flight there.
			list := append([]Source{{End: at(0), Bad: inf, Good: inf, InFlightEnd: inFlight(at(0))}}, sources...)
			g := FinishersTTFTGood(list, fin)
			checkBounded(t, "ttft good", g)
			if good < g.Lower || good > g.Upper {
				t.Fatalf("seed %d interval %d: %v TTFT-good finishers outside [%v, %v]", seed, k, good, g.Lower, g.Upper)
			}
			if k > 1 {
				p := sources[len(sources)-2]
				prevGood, prevBad = p.InFlightGood, p.InFlightBad
			}
			qk := InFlightQueue(qHi[k-1], ttft.Total(), n, inFlight(to))
			sources[len(sources)-1].InFlightGood, sources[len(sources)-1].InFlightBad = InFlightSplit(prevGood, prevBad, src, g, n, qk)
			sources[len(sources)-1].HasSplit = true
			goodIn, badIn := 0.0, 0.0
			for _, r := range reqs {
				if !r.first.After(to) && r.end.After(to) {
					if r.ttft <= threshold {
						goodIn++
					} else {
						badIn++
					}
				}
			}
			if q := pastFirst(to); q > qk || goodIn > sources[k-1].InFlightGood || badIn > sources[k-1].InFlightBad {
				t.Fatalf("seed %d scrape %d: in flight past first token %v (good %v, bad %v) above bounds %v (%v, %v)",
					seed, k, q, goodIn, badIn, qk, sources[k-1].InFlightGood, sources[k-1].InFlightBad)
			}
			qHi = append(qHi, qk)
			firstTokens = append(firstTokens, firstTokens[k-1]+ttft.Total())
			finished = append(finished, finished[k-1]+n)
		}
		// Abandoned over every window (I, J], the in-flight lower bounds at
		// 0 (the live edge): the truth must lie inside.
		for i := 0; i < scrapes; i += 7 {
			for j := i + 1; j <= scrapes; j += 5 {
				a := Abandoned(Bounded{Upper: qHi[i]}, Bounded{Upper: qHi[j]}, firstTokens[j]-firstTokens[i], finished[j]-finished[i])
				truth := 0.0
				for _, r := range reqs {
					if !r.finished && inSpan(r.end, at(i), at(j)) {
						truth++
					}
				}
				if truth < a.Lower || truth > a.Upper {
					t.Fatalf("seed %d window (%d, %d]: %v abandoned outside [%v, %v]", seed, i, j, truth, a.Lower, a.Upper)
				}
			}
		}
	}
}

// TestMostFromIsTheRelaxationOptimum compares the greedy with an exhaustive
// search over integer assignments on small random instances: it must reach
// the optimum of the relaxation (so it bounds the true optimum from above),
// never less.
func TestMostFromIsTheRelaxationOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := 0; trial < 300; trial++ {
		nSrc := 1 + rng.IntN(3)
		sources := make([]Source, nSrc)
		for i := range sources {
			sources[i] = Source{Good: float64(rng.IntN(4)), Bad: float64(rng.IntN(4)), InFlightEnd: float64(rng.IntN(5))}
		}
		var buckets []lagBucket
		for b := 0; b < 1+rng.IntN(3); b++ {
			first := rng.IntN(nSrc)
			buckets = append(buckets, lagBucket{count: float64(1 + rng.IntN(3)), first: first, last: first + rng.IntN(nSrc-first)})
		}
		got := mostFrom(sources, buckets, true)
		want := bruteMost(sources, buckets)
		if got < want || got > want {
			t.Fatalf("trial %d: greedy %v, exhaustive optimum %v (sources %+v, buckets %+v)", trial, got, want, sources, buckets)
		}
	}
}

// bruteMost is the optimum of mostFrom's relaxation (kind good) by
// exhaustive search: per-source supply min(Good, in-flight cap), bucket
// counts and ranges, and the total cap at the last source's start.
func bruteMost(sources []Source, buckets []lagBucket) float64 {
	caps := inFlightCaps(sources, true)
	supply := make([]float64, len(sources))
	for i, s := range sources {
		supply[i] = math.Min(s.Good, caps[i])
	}
	n := len(sources)
	own := 0.0
	for _, b := range buckets {
		if b.last == n-1 {
			own += b.count
		}
	}
	limit := inf
	if n >= 2 {
		limit = sources[n-2].InFlightEnd + math.Min(own, sources[n-1].Good)
	}
	best := 0.0
	var walk func(b int, left []float64, total float64)
	walk = func(b int, left []float64, total float64) {
		if b == len(buckets) {
			best = math.Max(best, math.Min(total, limit))
			return
		}
		var give func(i int, need float64, total float64)
		give = func(i int, need float64, total float64) {
			if i > buckets[b].last || need == 0 {
				walk(b+1, left, total)
				return
			}
			for x := 0.0; x <= math.Min(need, left[i]); x++ {
				left[i] -= x
				give(i+1, need-x, total+x)
				left[i] += x
			}
		}
		give(buckets[b].first, buckets[b].count, total)
	}
	walk(0, supply, 0)
	return best
}

// TestAttainmentOverAndAbandoned checks the population arithmetic: abandoned
// requests widen "all" downwards when bad, not at all when excluded, and an
// unbounded abandoned count leaves a lower bound of 0.
func TestAttainmentOverAndAbandoned(t *testing.T) {
	a := Abandoned(Bounded{Lower: 2, Upper: 5, Estimate: 3}, Bounded{Lower: 0, Upper: 4, Estimate: 3}, 100, 95)
	if a.Lower != 3 || a.Upper != 10 || a.Estimate != 5 {
		t.Errorf("abandoned %+v, want [3, 10] estimate 5", a)
	}
	good := Bounded{Lower: 80, Upper: 90, Estimate: 85}
	bad, ok := AttainmentOver(good, 95, a, AbandonedBad)
	if !ok || bad.Lower != 80.0/105 || bad.Upper != 90.0/98 {
		t.Errorf("bad population: %+v, want [80/105, 90/98]", bad)
	}
	excl, ok := AttainmentOver(good, 95, a, AbandonedExcluded)
	if !ok || excl.Lower != 80.0/95 || excl.Upper != 90.0/95 {
		t.Errorf("excluded population: %+v, want [80/95, 90/95]", excl)
	}
	open, ok := AttainmentOver(good, 95, Bounded{Upper: inf, Estimate: 2}, AbandonedBad)
	if !ok || open.Lower != 0 || open.Upper != 90.0/95 {
		t.Errorf("unbounded abandoned: %+v, want [0, 90/95]", open)
	}
	if _, ok := AttainmentOver(Exact(0), 0, Exact(0), AbandonedBad); ok {
		t.Error("an empty population has an attainment")
	}
}
