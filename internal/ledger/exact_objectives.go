package ledger

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Exact per-objective counts. What exact.go does for "all" it does here for
// each per-request objective alone (TTFT ≤ 0.5 s, TPOT ≤ 50 ms, ...): in
// exact mode every counted interval's bound on the finishers meeting each
// objective goes into running sums, and a covered interval's span count of
// them into running sums beside the bounds it replaces, so that a window's
// finishers meeting the objective are
//
//	good ∈ [Σ_all lo − Σ_covered lo + Σ_covered g, Σ_all hi − Σ_covered hi + Σ_covered g]
//
// that is Σ_uncovered [lo, hi] + Σ_covered g. Each interval's bound holds
// its own finishers meeting the objective: a finish-observed objective's is
// the interval histogram's good count at the threshold carried onto the
// finishers (slo.Estimator.GoodCount, slo.CarryGood), TTFT's the ledger's bound on
// the TTFT-good finishers (slo.FinishersTTFTGood, which EvaluateInterval
// computes for the SLO's strictest TTFT threshold; another TTFT threshold
// of the same SLO gets the trivial [0, N]). A covered interval's count is
// exactly its finishers meeting the objective, so the sum holds the
// window's. It describes the finishers the running sums counted, so a
// window is answered only when those are all of the window's judged
// finishers (the sums began before its start: exact mode was on and the
// state kept them).
//
// The sums cost nothing without spans: they live in the checkpoint's
// moreSums, allocated once spans are expected, one flat slice of S + 8K
// numbers for S SLOs with K per-request objectives in all (objLayout).

// PerRequest lists s's per-request objectives (every one but ITL, which is
// judged over token gaps) in s's order: the order of SpanCounts.Objectives
// and of Objectives' answer.
func PerRequest(s slo.SLO) []slo.Objective {
	var out []slo.Objective
	for _, o := range s.Objectives {
		if o.Metric != slo.ITL {
			out = append(out, o)
		}
	}
	return out
}

// objLayout places one SLO's numbers in a checkpoint's flat objective
// sums: [0, slos) the finishers summed per SLO; then three numbers per
// objective (lower, upper, estimate of the judged intervals' bounds); then
// five per objective over the covered intervals (the spans' lower and
// upper count, and the histograms' lower, upper and estimate they
// replace). The spans' estimate is their upper count (slo.EvaluateMeasured
// counts a request it cannot judge as good), so it is not kept.
type objLayout struct {
	slos, total int // SLOs, per-request objectives of all of them
	first, n    int // the SLO's first objective, and its objectives
}

func layoutOf(slos []slo.SLO, i int) objLayout {
	o := objLayout{slos: len(slos)}
	for j, s := range slos {
		k := len(PerRequest(s))
		if j == i {
			o.first, o.n = o.total, k
		}
		o.total += k
	}
	return o
}

func (o objLayout) size() int           { return o.slos + 8*o.total }
func (o objLayout) judged(k int) int    { return o.slos + 3*(o.first+k) }
func (o objLayout) covered(k int) int   { return o.slos + 3*o.total + 5*(o.first+k) }
func (o objLayout) coveredBase() int    { return o.slos + 3*o.total }
func (o objLayout) coveredLen() int     { return 5 * o.total }
func (o objLayout) coveredOf(k int) int { return 5 * (o.first + k) }

// objectiveSums returns the checkpoint's flat objective sums, allocating
// them (zero) at the layout's size when absent or of another size.
func (c *checkpoint) objectiveSums(o objLayout) []float64 {
	if c.more == nil {
		c.more = &moreSums{}
	}
	if len(c.more.objective) != o.size() {
		c.more.objective = make([]float64, o.size())
	}
	return c.more.objective
}

// objectiveView is the checkpoint's flat objective sums, nil when absent or
// of another layout (all zero).
func (c *checkpoint) objectiveView(o objLayout) []float64 {
	if c.more == nil || len(c.more.objective) != o.size() {
		return nil
	}
	return c.more.objective
}

// at reads v[k], 0 when v is nil.
func at(v []float64, k int) float64 {
	if v == nil {
		return 0
	}
	return v[k]
}

// addJudgedObjectives adds to the checkpoint's objective sums SLO i's
// per-interval bound on the finishers meeting each per-request objective,
// in exact mode only. judge calls it for every counted interval whose
// objectives it judged, where it adds the interval to the SLO's sums.
func (l *Ledger) addJudgedObjectives(cp *checkpoint, i int, w slo.Window, fin slo.Finishers, res slo.IntervalResult) {
	if !l.spans {
		return
	}
	o := layoutOf(l.slos, i)
	if o.n == 0 {
		return
	}
	v := cp.objectiveSums(o)
	v[i] += fin.N
	for k, obj := range PerRequest(l.slos[i]) {
		g := objectiveGood(l.slos[i], obj, w, fin, res)
		j := o.judged(k)
		v[j] += g.Lower
		v[j+1] += g.Upper
		v[j+2] += g.Estimate
	}
}

// objectiveGood bounds the interval's finishers meeting one objective of
// s (see the top of this file). Every objective's histogram is there and
// valid: judge only calls for intervals without an unknown objective.
func objectiveGood(s slo.SLO, o slo.Objective, w slo.Window, fin slo.Finishers, res slo.IntervalResult) slo.Bounded {
	if o.Metric == slo.TTFT {
		if th, _ := slo.TTFTThreshold(s); th == o.Threshold {
			return res.TTFTGood
		}
		return slo.Bounded{Upper: math.Max(fin.N, 0), Estimate: math.Max(fin.N, 0) / 2}
	}
	h := w.Latency[o.Metric]
	n := h.Total()
	g := slo.DefaultEstimator.GoodCount(o.Threshold, h)
	return slo.CarryGood(g, n, fin.N, math.Max(0, n-fin.N), math.Max(0, fin.N-n))
}

// intervalObjectives is SLO i's per-objective bounds of the interval that
// closed at cp after prev (three numbers per objective), nil unless the
// interval went into the objective sums.
func (l *Ledger) intervalObjectives(i int, prev, cp *checkpoint) []float64 {
	o := layoutOf(l.slos, i)
	a, b := prev.objectiveView(o), cp.objectiveView(o)
	if o.n == 0 || b == nil || b[i]-at(a, i) != cp.sum(i).finished-prev.sum(i).finished {
		return nil
	}
	out := make([]float64, 3*o.n)
	for k := range out {
		j := o.judged(0) + k
		out[k] = b[j] - at(a, j)
	}
	return out
}

// objectiveDelta is what a covered interval adds to the checkpoints'
// covered objective sums (five numbers per objective, flat over every
// SLO's; nil when nothing); consistent is false when a span count falls
// outside the interval's proved bound on the same requests (then the
// interval is not covered at all, as in exactDelta).
func (l *Ledger) objectiveDelta(p pending, counts [][]slo.Bounded) (d []float64, consistent bool) {
	for i, ps := range p.slos {
		o := layoutOf(l.slos, i)
		if !ps.known || len(ps.obj) != 3*o.n || o.n == 0 || i >= len(counts) || len(counts[i]) != o.n {
			continue
		}
		for k, g := range counts[i] {
			lo, hi, est := ps.obj[3*k], ps.obj[3*k+1], ps.obj[3*k+2]
			if !finiteBound(g) || !overlaps(g, lo, hi) {
				return nil, false
			}
			if d == nil {
				d = make([]float64, o.coveredLen())
			}
			j := o.coveredOf(k)
			d[j], d[j+1], d[j+2], d[j+3], d[j+4] = g.Lower, g.Upper, lo, hi, est
		}
	}
	return d, true
}

// addCoveredObjectives adds d (objectiveDelta) to the checkpoint's covered
// objective sums.
func (c *checkpoint) addCoveredObjectives(slos []slo.SLO, d []float64) {
	if d == nil {
		return
	}
	o := layoutOf(slos, 0)
	v := c.objectiveSums(o)
	base := o.coveredBase()
	for k, x := range d {
		v[base+k] += x
	}
}

// settledObjectives is, per SLO, the settled interval's estimate of the
// finishers meeting each objective: the spans' counts when covered, the
// histograms' per-interval estimates otherwise.
func settledObjectives(p pending, counts [][]slo.Bounded, covered bool) [][]float64 {
	out := make([][]float64, len(p.slos))
	for i, ps := range p.slos {
		n := len(ps.obj) / 3
		switch {
		case !ps.known || n == 0:
		case covered && i < len(counts) && len(counts[i]) == n:
			out[i] = make([]float64, n)
			for k, g := range counts[i] {
				out[i][k] = g.Estimate
			}
		default:
			out[i] = make([]float64, n)
			for k := range n {
				out[i][k] = math.Max(0, ps.obj[3*k+2])
			}
		}
	}
	return out
}

// Objectives bounds, for SLO i, the finishers of the window (start, end]
// (as Window spans it) meeting each per-request objective, in PerRequest
// order, by the per-interval sums with the covered intervals' bounds
// replaced by the spans' counts (see the top of this file): exact when the
// spans covered every interval: what slo.Joint.Objectives carries into
// the evaluation. finished is the window's judged finishers, the
// population of the counts. ok is false when no interval of the
// window was covered, an interval could not be judged, or the objective
// sums do not count every judged finisher of the window.
func (l *Ledger) Objectives(i int, start, end time.Time) (goods []slo.ObjectiveGood, finished float64, ok bool) {
	i0, i1, ok := l.edges(start, end)
	if !ok {
		return nil, 0, false
	}
	p0, p1 := &l.points[i0], &l.points[i1]
	a, b := p0.sum(i), p1.sum(i)
	o := layoutOf(l.slos, i)
	v0, v1 := p0.objectiveView(o), p1.objectiveView(o)
	finished = b.finished - a.finished
	if o.n == 0 || v1 == nil || !(p1.exactSum(i).n-p0.exactSum(i).n > 0) || b.unknown != a.unknown || v1[i]-at(v0, i) != finished {
		return nil, 0, false
	}
	d := func(j int) float64 { return v1[j] - at(v0, j) }
	for k, obj := range PerRequest(l.slos[i]) {
		j, c := o.judged(k), o.covered(k)
		g := slo.Bounded{
			Lower:    d(j) - d(c+2) + d(c),
			Upper:    d(j+1) - d(c+3) + d(c+1),
			Estimate: d(j+2) - d(c+4) + d(c+1),
		}.NonNegative()
		g.Upper = math.Min(g.Upper, finished)
		g = g.NonNegative().WholeCounts()
		goods = append(goods, slo.ObjectiveGood{Objective: obj, Good: g})
	}
	return goods, finished, true
}

// cloneObjective copies flat sums for a state file (nil stays nil).
func cloneObjective(v []float64) []float64 { return slices.Clone(v) }

// restoreObjective puts a checkpoint's restored objective sums back; it
// refuses sums of another layout or that are not finite numbers.
func restoreObjective(p *checkpoint, v []float64, slos []slo.SLO) error {
	if len(v) == 0 {
		return nil
	}
	if o := layoutOf(slos, 0); len(v) != o.size() || !allFinite(v) {
		return fmt.Errorf("checkpoint at %d: %d objective sums for %d, or not finite", p.t, len(v), o.size())
	}
	p.objectiveSums(layoutOf(slos, 0))
	copy(p.more.objective, v)
	return nil
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
