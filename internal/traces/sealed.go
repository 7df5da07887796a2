package traces

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Sealed scrape intervals. Once the ledger has read a scrape interval's
// spans (Interval), its records never change: a span arriving later is a
// duplicate or a new record beside them. So the interval's records are
// sealed: turned, per adapter, into one sorted column per latency, and the
// per-SLO counts the exact evaluation adds (the requests meeting each
// objective, "all", their tokens), taken once from the rows while they are
// still rows. A window of sealed intervals is then evaluated without
// reading a request: its counts are sums of the intervals' counts, and
// each quantile is a selection across the intervals' sorted columns
// (selectRank), a few binary searches per interval instead of a pass over
// every value. The rows are dropped, so a sealed request costs its seven
// latencies and its key (for duplicates), 72 bytes, instead of the
// 80-byte record.
//
// A sealed block's counts are for the SLO list it was sealed under
// (sloKey); a window holding a block sealed under another list (after a
// reload that changed an objective) or cutting across a block (a window
// whose edges are not scrapes) cannot be evaluated from the columns and is
// not covered, with its spans counted from the keys.

// columnMetrics are the metrics of a sealed block's columns, in the order
// of slo.Measured's fields (slo.EvaluateMeasured's order).
var columnMetrics = [...]slo.Metric{slo.TTFT, slo.TPOT, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference}

// sealed is one sealed scrape interval (start, end] of a series.
type sealed struct {
	start, end int64
	// keys are its records' end times and request-id hashes, sorted: what
	// finds a duplicate and counts the records of a window cutting across
	// the block.
	keys    []recKey
	reasons []reasonCount
	sloKey  string
	pops    []sealedPop // per adapter with records, by adapter index
}

type reasonCount struct {
	reason uint8
	n      int
}

// sealedPop is one adapter's records of a sealed interval.
type sealedPop struct {
	adapter uint16
	n       int
	// cols holds each metric's finite values, sorted ascending.
	cols   [len(columnMetrics)][]float64
	counts []sloCounts
}

// sloCounts is one SLO's counts over some requests, as
// slo.EvaluateMeasured counts them: the good requests of each objective
// key (sorted keys), of "all", and their tokens. judged is false for an
// SLO without a per-request objective (it counts nothing).
type sloCounts struct {
	keys        []string
	goods       []slo.Bounded
	all, tokens slo.Bounded
	judged      bool
}

// sloKeyOf names an SLO list by what a sealed block's counts depend on:
// the SLOs' names and objectives (a new goal or population policy keeps
// them; the goal is applied when a window's results are built).
func sloKeyOf(slos []slo.SLO) string {
	var b strings.Builder
	for _, s := range slos {
		fmt.Fprintf(&b, "%s %v\n", s.Name, s.Objectives)
	}
	return b.String()
}

// countsOf counts reqs (at least one) per SLO as slo.EvaluateMeasured
// does (over one second, so that its goodput is the count itself: x / 1
// is x exactly).
func countsOf(reqs []slo.Measured, slos []slo.SLO) []sloCounts {
	out := make([]sloCounts, len(slos))
	rep := slo.EvaluateMeasured(reqs, 1, slos, nil)
	for i, r := range rep.SLOs {
		all, ok := r.GoodRequests[slo.AllKey]
		if !ok {
			continue
		}
		c := sloCounts{all: all, tokens: r.GoodputTokensPerSecond, judged: true}
		for _, key := range slices.Sorted(maps.Keys(r.GoodRequests)) {
			if key != slo.AllKey {
				c.keys, c.goods = append(c.keys, key), append(c.goods, r.GoodRequests[key])
			}
		}
		out[i] = c
	}
	return out
}

// add sums o into c (the same SLO, so the same keys).
func (c *sloCounts) add(o sloCounts) {
	if !o.judged {
		return
	}
	if !c.judged {
		*c = sloCounts{keys: o.keys, goods: slices.Clone(o.goods), all: o.all, tokens: o.tokens, judged: true}
		return
	}
	for k := range c.goods {
		c.goods[k] = sum(c.goods[k], o.goods[k])
	}
	c.all, c.tokens = sum(c.all, o.all), sum(c.tokens, o.tokens)
}

func sum(a, b slo.Bounded) slo.Bounded {
	return slo.Bounded{Estimate: a.Estimate + b.Estimate, Lower: a.Lower + b.Lower, Upper: a.Upper + b.Upper}
}

// result is the SLO's result over n requests in a window of seconds, as
// slo.EvaluateMeasured builds it from the same counts. The counts are whole
// numbers, so their sums over intervals equal the counts over the window's
// requests, bit for bit.
func (c sloCounts) result(s slo.SLO, n, seconds float64) slo.SLOResult {
	res := slo.SLOResult{Name: s.Name, Requests: n, Objectives: map[string]slo.Bounded{}, GoodRequests: map[string]slo.Bounded{}}
	if !c.judged {
		return res
	}
	for k, key := range c.keys {
		res.GoodRequests[key] = c.goods[k]
		res.Objectives[key] = slo.Divide(c.goods[k], n)
	}
	res.GoodRequests[slo.AllKey] = c.all
	res.Objectives[slo.AllKey] = slo.Divide(c.all, n)
	res.GoodputRequestsPerSecond = slo.Divide(c.all, seconds)
	res.GoodputTokensPerSecond = slo.Divide(c.tokens, seconds)
	res.HasGoodputTokens = true
	res.BurnRate, res.HasBurnRate = slo.BurnRate(res.Objectives[slo.AllKey], s.Goal)
	return res
}

// sortedColumns is each metric's finite values of reqs, sorted (finite as
// slo.EvaluateMeasured takes them: NaN and ±Inf give NaN in v − v).
func sortedColumns(reqs []slo.Measured) [len(columnMetrics)][]float64 {
	values := func(r *slo.Measured) [len(columnMetrics)]float64 {
		return [...]float64{r.TTFT, r.TPOT, r.E2E, r.Queue, r.Prefill, r.Decode, r.Inference}
	}
	var n [len(columnMetrics)]int
	for i := range reqs {
		for k, v := range values(&reqs[i]) {
			if v-v == 0 {
				n[k]++
			}
		}
	}
	var cols [len(columnMetrics)][]float64
	for k := range cols {
		if n[k] > 0 {
			cols[k] = make([]float64, 0, n[k]) // kept as long as the block: sized exactly
		}
	}
	for i := range reqs {
		for k, v := range values(&reqs[i]) {
			if v-v == 0 {
				cols[k] = append(cols[k], v)
			}
		}
	}
	for k := range cols {
		slices.Sort(cols[k])
	}
	return cols
}

// seal turns the series' records of (from, to] into a sealed block judged
// by slos, unless the series already holds a block meeting that span (the
// records then stay rows). The caller has merged the tail.
func (s *Store) seal(ser *series, from, to int64, slos []slo.SLO) {
	i := sort.Search(len(ser.sealed), func(i int) bool { return ser.sealed[i].end > from })
	if i < len(ser.sealed) && ser.sealed[i].start < to {
		return
	}
	lo := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > from })
	hi := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > to })
	if hi <= lo {
		return
	}
	b := sealed{start: from, end: to, keys: make([]recKey, 0, hi-lo), sloKey: sloKeyOf(slos)}
	var reasons [math.MaxUint8 + 1]int
	perAdapter := make([][]slo.Measured, len(ser.adapters))
	for j := lo; j < hi; j++ {
		r := &ser.recs[j]
		b.keys = append(b.keys, recKey{r.end, r.id})
		reasons[r.reason]++
		perAdapter[r.adapter] = append(perAdapter[r.adapter], r.measured())
	}
	slices.SortFunc(b.keys, compareKeys)
	for r, n := range reasons {
		if n > 0 {
			b.reasons = append(b.reasons, reasonCount{uint8(r), n})
		}
	}
	for a, reqs := range perAdapter {
		if len(reqs) > 0 {
			b.pops = append(b.pops, sealedPop{adapter: uint16(a), n: len(reqs), cols: sortedColumns(reqs), counts: countsOf(reqs, slos)})
		}
	}
	ser.sealed = slices.Insert(ser.sealed, i, b)
	ser.nSealed += hi - lo
	ser.recs = append(ser.recs[:lo], ser.recs[hi:]...)
	if cap(ser.recs) > 2*len(ser.recs)+64 {
		ser.recs, ser.front = slices.Clone(ser.recs), 0
	}
}

func compareKeys(a, b recKey) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// sealedHolds reports whether a sealed block holds the request (end, id).
func (ser *series) sealedHolds(k recKey) bool {
	i := sort.Search(len(ser.sealed), func(i int) bool { return ser.sealed[i].end >= k.end })
	if i == len(ser.sealed) || ser.sealed[i].start >= k.end {
		return false
	}
	_, found := slices.BinarySearchFunc(ser.sealed[i].keys, k, compareKeys)
	return found
}

// sealedBytes is the size of the sealed blocks' arrays.
func (ser *series) sealedBytes() int {
	n := cap(ser.sealed) * int(unsafe.Sizeof(sealed{}))
	for i := range ser.sealed {
		b := &ser.sealed[i]
		n += cap(b.keys)*int(unsafe.Sizeof(recKey{})) + cap(b.reasons)*int(unsafe.Sizeof(reasonCount{})) + cap(b.pops)*int(unsafe.Sizeof(sealedPop{}))
		for _, p := range b.pops {
			for _, c := range p.cols {
				n += 8 * cap(c)
			}
		}
	}
	return n
}

// expireSealed drops the sealed blocks whose records all ended before
// cutoff and returns how many records they held. A block with a record at
// or after cutoff is kept whole: windows start at scrapes, never inside a
// block, so its older records are never read, and they cost one scrape
// interval of memory at most.
func (ser *series) expireSealed(cutoff int64) int {
	k := 0
	dropped := 0
	for k < len(ser.sealed) && ser.sealed[k].keys[len(ser.sealed[k].keys)-1].end < cutoff {
		dropped += len(ser.sealed[k].keys)
		k++
	}
	if k > 0 {
		ser.sealed = slices.Delete(ser.sealed, 0, k)
		ser.nSealed -= dropped
	}
	return dropped
}

// population is the requests of one window and adapter (or all of them):
// the sealed blocks' columns and counts, and the rows not sealed.
type population struct {
	n      int
	runs   [len(columnMetrics)][][]float64
	counts []sloCounts
	rows   []slo.Measured
	sealed bool
}

func (p *population) addSealed(sp *sealedPop, slos int) {
	if p.counts == nil {
		p.counts = make([]sloCounts, slos)
	}
	p.n += sp.n
	p.sealed = true
	for k, c := range sp.cols {
		if len(c) > 0 {
			p.runs[k] = append(p.runs[k], c)
		}
	}
	for i := range p.counts {
		p.counts[i].add(sp.counts[i])
	}
}

// report evaluates the population exactly: what slo.EvaluateMeasured gives
// for the same requests, bit for bit (TestSealedEqualsRows). Without a
// sealed block it is that call.
func (p *population) report(seconds float64, slos []slo.SLO, quantiles []float64) slo.MeasuredReport {
	if !p.sealed {
		return slo.EvaluateMeasured(p.rows, seconds, slos, quantiles)
	}
	if len(p.rows) > 0 {
		cols := sortedColumns(p.rows)
		for k, c := range cols {
			if len(c) > 0 {
				p.runs[k] = append(p.runs[k], c)
			}
		}
		rc := countsOf(p.rows, slos)
		for i := range p.counts {
			p.counts[i].add(rc[i])
		}
	}
	n := p.n + len(p.rows)
	rep := slo.MeasuredReport{Requests: n, Counts: map[slo.Metric]int{}, Quantiles: map[slo.Metric][]slo.Quantile{}}
	for k, m := range columnMetrics {
		total := 0
		for _, r := range p.runs[k] {
			total += len(r)
		}
		if total == 0 {
			continue
		}
		rep.Counts[m] = total
		for _, q := range quantiles {
			if q >= 0 && q <= 1 {
				v := selectRank(p.runs[k], nearestRank(q, total)-1)
				rep.Quantiles[m] = append(rep.Quantiles[m], slo.Quantile{Q: q, Bounded: slo.Exact(v)})
			}
		}
	}
	if n == 0 || !(seconds > 0) {
		return rep
	}
	for i, s := range slos {
		rep.SLOs = append(rep.SLOs, p.counts[i].result(s, float64(n), seconds))
	}
	return rep
}

// nearestRank is the 1-based nearest rank of quantile q among n values,
// as slo.ExactQuantile takes it: ⌈q·n·(1 − 1e-9)⌉ within [1, n].
func nearestRank(q float64, n int) int {
	r := math.Ceil(q * float64(n) * (1 - 1e-9))
	return int(math.Min(math.Max(r, 1), float64(n)))
}

// selectRank returns the k-th smallest value (0-based) of the union of
// runs, each sorted ascending: the value a sort of their union puts at k.
//
// It keeps, in each run, the open range [lo, hi) of the positions not yet
// decided: every value before lo is at most a probe with at most k values
// at or below it, every value from hi on is above a probe with more than
// k. A probe (see probe) is a value of the open ranges near where the
// k-th lies in proportion to them, ranked by a binary search per run
// within its open range; it closes one side of every range. A probe with
// more than k values at or below it and at most k below it is the answer
// (the common case with ties). Once at most maxGather values are open (or
// after maxProbes probes, or a probe that closed nothing), the answer is
// the (k − Σ lo)-th smallest of the open values, put in place by
// slices.Sort. Each step keeps the invariant, so the result is the sort's
// whatever the probes; they only decide how fast the open values shrink:
// a few probes on runs of one distribution, at worst every value
// gathered, a sort of the window, as without runs.
func selectRank(runs [][]float64, k int) float64 {
	const maxGather, maxProbes = 64, 16
	open := make([]int, 2*len(runs))
	gap := 0
	for i, r := range runs {
		open[2*i+1] = len(r)
		gap += len(r)
	}
	nLo := 0 // values before the open ranges
	pos := make([]int, len(runs))
	for probes := 0; gap > maxGather && probes < maxProbes; probes++ {
		v, ok := probe(runs, open, k-nLo, gap)
		if !ok {
			break
		}
		n := nLo
		for i, r := range runs {
			lo := open[2*i]
			pos[i] = lo + upper(r[lo:open[2*i+1]], v)
			n += pos[i] - lo
		}
		side := 0 // at most k: the values up to pos are below the answer
		if n > k {
			side = 1
			if belowIn(runs, open, v)+nLo <= k {
				return v // at most k below it, more than k at or below it
			}
		} else {
			nLo = n
		}
		was := gap
		gap = 0
		for i := range runs {
			open[2*i+side] = pos[i]
			gap += open[2*i+1] - open[2*i]
		}
		if gap == was {
			break // the probe closed nothing: the open values are ties
		}
	}
	between := make([]float64, 0, gap)
	for i, r := range runs {
		between = append(between, r[open[2*i]:open[2*i+1]]...)
	}
	slices.Sort(between)
	return between[k-nLo]
}

// belowIn counts the values of the open ranges strictly below v.
func belowIn(runs [][]float64, open []int, v float64) int {
	n := 0
	for i, r := range runs {
		n += lower(r[open[2*i]:open[2*i+1]], v)
	}
	return n
}

// probe is the next value selectRank ranks: of each open range's value at
// the k-th's share of the gap open values (k counted from the ranges'
// start), the one nearest their mean weighted by the ranges' lengths (a
// value of the runs, so that a run of ties is hit, not straddled); ok is
// false when the mean is not a finite number.
func probe(runs [][]float64, open []int, k, gap int) (float64, bool) {
	mean := 0.0
	for i, r := range runs {
		lo, hi := open[2*i], open[2*i+1]
		if hi > lo {
			mean += float64(hi-lo) / float64(gap) * r[lo+min(hi-lo-1, k*(hi-lo)/gap)]
		}
	}
	if mean-mean != 0 {
		return 0, false
	}
	best, dist := 0.0, math.Inf(1)
	for i, r := range runs {
		lo, hi := open[2*i], open[2*i+1]
		if hi > lo {
			if v := r[lo+min(hi-lo-1, k*(hi-lo)/gap)]; math.Abs(v-mean) < dist {
				best, dist = v, math.Abs(v-mean)
			}
		}
	}
	return best, true
}

// upper is the number of values of sorted r at or below v.
func upper(r []float64, v float64) int {
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m] <= v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lower is the number of values of sorted r strictly below v.
func lower(r []float64, v float64) int {
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// EvaluateWindow reconciles the records of the window w of a target's model
// (and, when unnamed, of spans that named no model) with the histogram
// window w and its evaluation hist (see reconcile), and evaluates them
// exactly when they cover it. It reads them from the store: the sealed
// intervals from their columns and counts, the other records as rows. It
// gives what evaluating Select's selection of the same window as rows gives,
// bit for bit (TestSealedEqualsRows), unless the window holds a block it
// cannot read (sealed under other SLOs, or cut across by the window's
// edges): then its spans are counted and it is not covered.
//
// The store's lock is held while the window's requests are gathered: the
// sealed columns they point into never change (a sealed block is dropped,
// never written), so the evaluation runs without it.
func (s *Store) EvaluateWindow(target, model string, unnamed bool, w slo.Window, hist slo.WindowReport, slos []slo.SLO, quantiles []float64) Result {
	g, ok := s.gatherWindow(target, model, unnamed, w, slos)
	res, ready := reconcile(g.spans, g.reasons, w, hist)
	if !ok || !ready {
		return res
	}
	secs := w.Seconds()
	exact := g.all.report(secs, slos, quantiles)
	names := slices.Sorted(maps.Keys(g.adapters))
	return res.judged(exact, hist, slos, names, func(name string) (slo.MeasuredReport, float64) {
		p := g.adapters[name]
		n := p.n + len(p.rows)
		return p.report(secs, slos, quantiles), float64(n) / float64(g.spans)
	})
}

// gatherWindow gathers the window's requests of the target's model (and
// of the unnamed one) under the store's lock; ok as gather's.
func (s *Store) gatherWindow(target, model string, unnamed bool, w slo.Window, slos []slo.SLO) (g gathered, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.limits.Now().UnixNano())
	from, to := w.Start.UnixNano(), w.End.UnixNano()
	g = gathered{adapters: map[string]*population{}, reasons: map[string]int{}}
	ok = true
	key := sloKeyOf(slos)
	if ts, found := s.targets[target]; found {
		for _, name := range seriesNames(model, unnamed) {
			if ser, found := ts.models[name]; found {
				ser.merge()
				ok = s.gather(ser, from, to, key, len(slos), &g) && ok
			}
		}
	}
	return g, ok
}

func seriesNames(model string, unnamed bool) []string {
	if unnamed && model != "" {
		return []string{model, ""}
	}
	return []string{model}
}

// gathered is a window's requests, in all and per adapter name.
type gathered struct {
	spans    int
	all      population
	adapters map[string]*population
	reasons  map[string]int
}

func (g *gathered) adapter(name string) *population {
	p := g.adapters[name]
	if p == nil {
		p = &population{}
		g.adapters[name] = p
	}
	return p
}

// gather adds the series' requests of (from, to] to g; false when a block
// there cannot be read (see EvaluateWindow), its records then only
// counted.
func (s *Store) gather(ser *series, from, to int64, sloKey string, slos int, g *gathered) bool {
	ok := true
	for i := range ser.sealed {
		b := &ser.sealed[i]
		if b.end <= from || b.start >= to {
			continue
		}
		if b.start < from || b.end > to || b.sloKey != sloKey {
			lo, _ := slices.BinarySearchFunc(b.keys, recKey{end: from, id: math.MaxUint64}, compareKeys)
			hi, _ := slices.BinarySearchFunc(b.keys, recKey{end: to, id: math.MaxUint64}, compareKeys)
			g.spans += hi - lo
			ok = false
			continue
		}
		g.spans += len(b.keys)
		for _, r := range b.reasons {
			g.reasons[s.reasons[r.reason]] += r.n
		}
		for k := range b.pops {
			sp := &b.pops[k]
			g.all.addSealed(sp, slos)
			g.adapter(ser.adapters[sp.adapter]).addSealed(sp, slos)
		}
	}
	var sel Selection
	sel.Adapters, sel.FinishReasons = map[string][]slo.Measured{}, g.reasons
	s.selectFrom(ser, from, to, &sel)
	g.spans += len(sel.All)
	g.all.rows = append(g.all.rows, sel.All...)
	for name, rows := range sel.Adapters {
		p := g.adapter(name)
		p.rows = append(p.rows, rows...)
	}
	return ok
}

// sealInterval seals the records of (start, end] of the series of a
// target's model (and of the unnamed one) under slos.
func (s *Store) sealInterval(target, model string, unnamed bool, start, end time.Time, slos []slo.SLO) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.targets[target]
	if !ok {
		return
	}
	for _, name := range seriesNames(model, unnamed) {
		if ser, ok := ts.models[name]; ok {
			ser.merge()
			s.seal(ser, start.UnixNano(), end.UnixNano(), slos)
		}
	}
}
