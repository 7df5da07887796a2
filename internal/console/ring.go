package console

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Ring keeps the daemon's evaluations for the charts, so that a chart
// draws the numbers the daemon already computed instead of evaluating
// every point of its range again (pipeline.Pipeline.EvaluateModelAt, one
// budget window, the burn-rate windows and the drawn window per point).
//
// It holds, per target and model, the chart's part of each evaluation
// (ringPoint: the budgets, the burn rates' bounds and every window's
// drawn results, without the windows' histograms; about 3.4 kB for one
// SLO, two windows and three quantiles) in tiers: tier k keeps the latest
// perTier evaluations at least interval·2^k apart, so tier k spans
// perTier·interval·2^k and a range R drawn with perTier/2 points or fewer
// finds in the finest tier that reaches back R a point in every grid cell
// of R/(perTier/2). tiers is the fewest for the deepest tier to span the
// history's retention (11 for 30 days of 15 s evaluations). perTier is
// RingPoints while the models fit the budget (RingBudget points in all),
// fewer for a fleet whose models do not (at least two, the newest): the
// ring's memory is bounded by the budget, and a chart of a large fleet's
// model evaluates the points its shallower tiers do not reach. The newest
// evaluation of each model is also kept whole, for the newest window's
// histograms.
//
// Every point is of the spec the ring was last given (Add's spec): a
// reload that changes the SLOs, windows, quantiles or alerts empties it,
// so that a chart never mixes evaluations of two configurations. It is
// safe for concurrent use.
type Ring struct {
	interval time.Duration
	perTier  int
	tiers    int

	mu     sync.Mutex
	spec   string
	models map[modelKey]*modelRing
	adds   int64
}

// modelKey names a target's model.
type modelKey struct{ target, model string }

// modelRing is one model's tiers and its newest evaluation, whole.
type modelRing struct {
	tiers  []tier
	newest pipeline.ModelReport
	at     time.Time
}

// tier is a ring buffer of points, oldest first from head.
type tier struct {
	points []ringPoint
	head   int
}

// ringPoint is what a chart draws of one evaluation of a model: the
// scrape it read (evaluatedAt) and the model's report without the
// windows' histograms.
type ringPoint struct {
	at time.Time
	mr pipeline.ModelReport
}

// RingPoints is the points per tier a ring keeps of each model: twice the
// points a chart draws by default, so that a range drawn with
// DefaultPoints finds a point in every grid cell.
const RingPoints = 2 * DefaultPoints

// RingBudget bounds the points a ring keeps, all models together: about
// 70 MB at 3.4 kB a point. Eight models of 30-day SLOs fit it whole.
const RingBudget = 20000

// NewRing returns a ring for evaluations every interval, with tiers deep
// enough to span retention.
func NewRing(interval, retention time.Duration) *Ring {
	if interval <= 0 {
		interval = 15 * time.Second
	}
	tiers := 1
	for span := time.Duration(RingPoints) * interval; span < retention && tiers < 40; span *= 2 {
		tiers++
	}
	return &Ring{interval: interval, perTier: RingPoints, tiers: tiers, models: map[modelKey]*modelRing{}}
}

// SpecKey is the part of a spec a chart depends on, as Ring.Add and a
// chart compare it.
func SpecKey(spec pipeline.Spec) string {
	b, _ := json.Marshal(fmt.Sprint(spec.SLOs, spec.Windows, spec.Quantiles, spec.Alerts))
	return string(b)
}

// Add keeps the chart's part of every model of rep, evaluated under spec.
// Models rep no longer holds are forgotten; a spec whose SpecKey differs
// from the last one's empties the ring first.
func (r *Ring) Add(rep *pipeline.Report, spec pipeline.Spec) {
	if rep == nil {
		return
	}
	key := SpecKey(spec)
	drawn := map[slo.Metric]bool{}
	for _, s := range spec.SLOs {
		for _, m := range drawnMetrics(s) {
			drawn[m] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if key != r.spec {
		clear(r.models)
		r.spec = key
	}
	r.adds++
	models := 0
	for _, t := range rep.Targets {
		models += len(t.Models)
	}
	perTier := max(2, min(r.perTier, RingBudget/max(1, models*r.tiers)))
	held := map[modelKey]bool{}
	for _, t := range rep.Targets {
		for _, mr := range t.Models {
			k := modelKey{t.Name, mr.Name}
			held[k] = true
			at, ok := evaluatedAt(mr)
			if !ok {
				continue
			}
			m := r.models[k]
			if m == nil {
				m = &modelRing{tiers: make([]tier, r.tiers)}
				r.models[k] = m
			}
			r.push(m, ringPoint{at: at, mr: slim(mr, drawn)}, perTier)
			m.newest, m.at = mr, at
		}
	}
	for k := range r.models {
		if !held[k] {
			delete(r.models, k)
		}
	}
}

// push adds p to every tier whose newest point is at least the tier's
// spacing older (less half an interval, for a late evaluation), and to
// none when p is not newer than the finest tier's newest (an evaluation
// that read the same scrape); each tier keeps its newest perTier points.
func (r *Ring) push(m *modelRing, p ringPoint, perTier int) {
	for k := range m.tiers {
		t := &m.tiers[k]
		if last, ok := t.last(); ok {
			if !p.at.After(last.at) {
				return
			}
			if p.at.Sub(last.at) < r.interval<<k-r.interval/2 {
				continue
			}
		}
		t.push(p, perTier)
	}
}

func (t *tier) last() (ringPoint, bool) {
	if len(t.points) == 0 {
		return ringPoint{}, false
	}
	return t.points[(t.head+len(t.points)-1)%len(t.points)], true
}

// at returns the i-th point, oldest first.
func (t *tier) at(i int) ringPoint { return t.points[(t.head+i)%len(t.points)] }

// push adds p as the newest point and keeps the newest capacity points
// (a capacity smaller than before drops the oldest beyond it).
func (t *tier) push(p ringPoint, capacity int) {
	if n := len(t.points); n != capacity && t.head != 0 || n > capacity {
		ordered := make([]ringPoint, 0, min(n, capacity))
		for i := max(0, n-capacity); i < n; i++ {
			ordered = append(ordered, t.at(i))
		}
		t.points, t.head = ordered, 0
	}
	if len(t.points) < capacity {
		t.points = append(t.points, p)
		return
	}
	t.points[t.head] = p
	t.head = (t.head + 1) % capacity
}

// latestAtOrBefore is the newest point of t at or before end.
func (t *tier) latestAtOrBefore(end time.Time) (ringPoint, bool) {
	lo, hi := 0, len(t.points) // the first point after end is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		if t.at(mid).at.After(end) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == 0 {
		return ringPoint{}, false
	}
	return t.at(lo - 1), true
}

// point returns the evaluation a chart draws at grid end of a grid of
// cells step wide: the newest kept evaluation at or before end, when it is
// within the cell (end − step, end] and of the spec; false otherwise (the
// chart then evaluates that point). The newest evaluation comes whole.
func (r *Ring) point(spec, target, model string, end time.Time, step time.Duration) (pipeline.ModelReport, bool) {
	if r == nil {
		return pipeline.ModelReport{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.models[modelKey{target, model}]
	if spec != r.spec || m == nil {
		return pipeline.ModelReport{}, false
	}
	if !end.Before(m.at) && end.Sub(m.at) < step {
		return m.newest, true
	}
	for k := range m.tiers {
		t := &m.tiers[k]
		if len(t.points) == 0 || t.at(0).at.After(end) {
			continue
		}
		p, ok := t.latestAtOrBefore(end)
		if ok && end.Sub(p.at) < step {
			return p.mr, true
		}
		return pipeline.ModelReport{}, false
	}
	return pipeline.ModelReport{}, false
}

// Len is the number of evaluations the ring holds, every tier of every
// model counted.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.models {
		for _, t := range m.tiers {
			n += len(t.points)
		}
	}
	return n
}

// version counts the evaluations added: a chart drawn from the ring is
// new after each.
func (r *Ring) version() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adds
}

// slim is the chart's part of a model's report: the budgets, the burn
// rates' bounds and, of every window, what fill draws (the SLOs'
// attainments, goodput and abandoned requests, the quantiles of the drawn
// metrics, throughput, Little's law, the engine's aborts). It leaves out
// the windows' histograms and gauges (only the newest point's histograms
// are drawn, from the newest evaluation kept whole), the burn checks'
// evidence, the good-request counts, the exact-mode results and the
// running totals. The maps it keeps are the report's, which nothing writes
// once built.
func slim(mr pipeline.ModelReport, drawn map[slo.Metric]bool) pipeline.ModelReport {
	out := pipeline.ModelReport{Name: mr.Name, Budgets: mr.Budgets, Burns: make([]pipeline.BurnCheck, len(mr.Burns))}
	for i, c := range mr.Burns {
		out.Burns[i] = pipeline.BurnCheck{Alert: c.Alert, Long: c.Long, Short: c.Short, Known: c.Known}
	}
	out.Windows = make([]slo.WindowReport, len(mr.Windows))
	for i, w := range mr.Windows {
		s := slo.WindowReport{Window: slo.Window{Start: w.Window.Start, End: w.Window.End, Nominal: w.Window.Nominal,
			GenerationTokens: totalOnly(w.Window.GenerationTokens)},
			Aborted: w.Aborted, HasAborted: w.HasAborted, Concurrency: w.Concurrency,
			Quantiles: map[slo.Metric][]slo.Quantile{}, SLOs: make([]slo.SLOResult, len(w.SLOs))}
		for m, qs := range w.Quantiles {
			if drawn[m] {
				s.Quantiles[m] = qs
			}
		}
		for j, r := range w.SLOs {
			s.SLOs[j] = slo.SLOResult{Name: r.Name, Objectives: r.Objectives,
				GoodputTokensPerSecond: r.GoodputTokensPerSecond, HasGoodputTokens: r.HasGoodputTokens,
				Abandoned: r.Abandoned, HasAbandoned: r.HasAbandoned}
		}
		out.Windows[i] = s
	}
	return out
}

// totalOnly is a histogram with h's count and sum in one +Inf bucket (what
// the throughput chart reads of it), or an invalid one when h is.
func totalOnly(h slo.Histogram) slo.Histogram {
	if !h.Valid() {
		return slo.Histogram{}
	}
	return slo.Histogram{Edges: []float64{math.Inf(1)}, Counts: []float64{h.Total()}, Sum: h.Sum}
}
