package fleetday

import (
	"math"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// Signal is what drives the autoscaler: a metric and its AverageValue
// target, read every tick (desired = ⌈metric / target⌉, see HPA).
type Signal interface {
	// Name names the signal; Threshold is its tunable threshold.
	Name() string
	Threshold() float64
	// sample is called at every tick, after the scrapes.
	sample(f *fleet)
	// metric is the metric and its target now; ok is false when the
	// signal has no value (the autoscaler then holds).
	metric(f *fleet) (value, target float64, ok bool)
	// usesLearners says whether the replicas need capacity learners.
	usesLearners() bool
}

// Kind is a family of signals, one per threshold, and the thresholds its
// grid search tries.
type Kind struct {
	Name string
	New  func(threshold float64) Signal
	Grid []float64
}

// Kinds are the five signals compared: the replica signal and the four its
// peers scale on.
func Kinds() []Kind {
	return []Kind{
		{Name: "ours: capacity.Replicas", New: func(t float64) Signal { return &ours{t: t, pooled: true} }, Grid: []float64{0.8, 0.9, 1.0, 1.1, 1.2, 1.3}},
		{Name: "ours, SumLoad (as exported)", New: func(t float64) Signal { return &ours{t: t} }, Grid: []float64{0.8, 0.9, 1.0, 1.1, 1.2, 1.3}},
		{Name: "(a) llm-d SLO ratio", New: func(t float64) Signal { return &sloRatio{up: t, down: t * 0.40 / 0.55} }, Grid: []float64{0.4, 0.55, 0.7, 0.85, 1.0, 1.15}},
		{Name: "(b) WVA-style queue model", New: func(t float64) Signal { return &queueModel{u: t} }, Grid: []float64{0.5, 0.6, 0.65, 0.7, 0.75, 0.8}},
		{Name: "(c) waiting per replica", New: func(t float64) Signal { return &waiting{t: t} }, Grid: []float64{0.1, 0.25, 0.5, 1, 2, 4}},
		{Name: "(d) KV-cache usage", New: func(t float64) Signal { return &kvCache{u: t} }, Grid: []float64{0.2, 0.25, 0.3, 0.35, 0.4, 0.5}},
	}
}

// ours is the replica signal: capacity.Replicas over the ready replicas'
// capacity estimates (their learners fed each replica's scrape
// intervals), AverageValue target t: the KEDA threshold on
// vllm_slo_capacity_replicas. The model's load is pooled from every
// replica's intervals (pooledLoad over Config.ModelLoadSpan and
// ModelTrendSpan), or, as the exporter computes it, the sum of the ready
// replicas' own (capacity.SumLoad, over the learners' LoadSpan and
// TrendSpan).
type ours struct {
	t      float64
	pooled bool
	need   capacity.Need
}

func (o *ours) Name() string {
	if o.pooled {
		return "ours"
	}
	return "ours-sumload"
}
func (o *ours) Threshold() float64 { return o.t }
func (o *ours) usesLearners() bool { return true }
func (o *ours) sample(*fleet)      {}
func (o *ours) metric(f *fleet) (float64, float64, bool) {
	es := f.estimates()
	c := f.cfg.Capacity
	load := capacity.SumLoad(es, c.LoadSpan)
	if o.pooled {
		load = pooledLoad(f.intervals, Start.Add(seconds(f.now)), f.cfg.ModelLoadSpan, f.cfg.ModelTrendSpan, c.Window)
	}
	o.need = capacity.Replicas(es, load, f.cfg.Policy)
	return o.need.Replicas, o.t, !math.IsNaN(o.need.Replicas)
}

// sloRatio is llm-d's SLO-aware signal: s = max(P90 TTFT / TTFT SLO, P90
// TPOT / TPOT SLO) over the last minute's requests (0 without traffic),
// clamped at 2 and averaged over 45 s (the last three ticks), turned into
// a replica count by its KEDA formula with the hysteresis band
// [down, up]: above up, n + ⌈n·(s·c/up − 1)⌉ with the in-flight credit c =
// ready/provisioned; below down, n − ⌊n·(1 − s/down)⌋; else n; passed
// through an AverageValue target of 1. The quantiles are exact, where
// llm-d's recording rules interpolate its histograms' buckets.
type sloRatio struct {
	up, down float64
	s        []float64
}

func (a *sloRatio) Name() string       { return "slo-ratio" }
func (a *sloRatio) Threshold() float64 { return a.up }
func (a *sloRatio) usesLearners() bool { return false }

func (a *sloRatio) sample(f *fleet) {
	from := f.now - 60
	raw := math.Max(p90(f.ttft.since(from))/SLO.Objectives[0].Threshold, p90(f.tpot.since(from))/SLO.Objectives[1].Threshold)
	a.s = append(a.s, math.Min(raw, 2))
	if len(a.s) > 3 {
		a.s = a.s[1:]
	}
}

func (a *sloRatio) metric(f *fleet) (float64, float64, bool) {
	s := 0.0
	for _, x := range a.s {
		s += x / float64(len(a.s))
	}
	n, r := float64(f.spec), float64(f.readyPods())
	c := 1.0
	if r > 0 && r < n {
		c = r / n
	}
	switch {
	case s > a.up:
		return n + math.Ceil(n*(s*c/a.up-1)), 1, true
	case s < a.down:
		return n - math.Floor(n*(1-s/a.down)), 1, true
	}
	return n, 1, true
}

// p90 is the 0.9 quantile (nearest rank) of xs, 0 when empty (no traffic).
func p90(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Ceil(0.9*float64(len(s))))-1]
}

// queueModel is the workload-variant autoscaler's kind of signal: a
// queueing model fitted to the mean TTFT and TPOT (capacity.FitBaseline:
// an M/M/1 sojourn for TTFT, TPOT linear in load, the largest rate whose
// means meet the SLO's thresholds found by bisection) per replica, over
// the windows its learner keeps, each placed at its arrival rate (the rate
// the autoscaler reads, where the capacity's own load also counts the
// queue a window began with: in an overload that queue sends the fitted
// rate, and the metric, to nothing); the median over the ready replicas
// (the last one found while none fits). The metric is the arrival rate of
// the last minute over that rate, its target u (the share of the modelled
// rate a replica is loaded to).
type queueModel struct {
	u, mu float64
}

func (b *queueModel) Name() string       { return "queue-model" }
func (b *queueModel) Threshold() float64 { return b.u }
func (b *queueModel) usesLearners() bool { return true }

func (b *queueModel) sample(f *fleet) {
	var mus []float64
	for _, p := range f.pods {
		if p.state != ready || p.learner == nil {
			continue
		}
		ws := slices.Clone(p.learner.Windows())
		for i := range ws {
			ws[i].WaitingStart, ws[i].Recent = 0, ws[i].Arrivals/ws[i].Seconds()
		}
		if m := capacity.FitBaseline(ws, SLO).Requests; m > 0 && !math.IsInf(m, 0) {
			mus = append(mus, m)
		}
	}
	if len(mus) > 0 {
		slices.Sort(mus)
		b.mu = mus[len(mus)/2]
	}
}

func (b *queueModel) metric(f *fleet) (float64, float64, bool) {
	return f.rateLast(60) / b.mu, b.u, b.mu > 0
}

// rateLast is the arrival rate over the last secs seconds (whole ticks).
func (f *fleet) rateLast(secs float64) float64 {
	k := min(len(f.arrivals), int(math.Round(secs/f.cfg.Tick.Seconds())))
	if k == 0 {
		return 0
	}
	n := 0.0
	for _, x := range f.arrivals[len(f.arrivals)-k:] {
		n += x
	}
	return n / (float64(k) * f.cfg.Tick.Seconds())
}

// waiting is the common KEDA recipe: vllm:num_requests_waiting summed over
// the replicas, AverageValue target t per replica.
type waiting struct{ t float64 }

func (c *waiting) Name() string       { return "waiting" }
func (c *waiting) Threshold() float64 { return c.t }
func (c *waiting) usesLearners() bool { return false }
func (c *waiting) sample(*fleet)      {}
func (c *waiting) metric(f *fleet) (float64, float64, bool) {
	n := 0
	for _, p := range f.pods {
		if p.state == ready {
			n += p.eng.waitingNow()
		}
	}
	return float64(n), c.t, true
}

// kvCache is utilization: vllm:kv_cache_usage_perc summed over the
// replicas, AverageValue target u (a replica's share of KV cache in use).
type kvCache struct{ u float64 }

func (d *kvCache) Name() string       { return "kv-cache" }
func (d *kvCache) Threshold() float64 { return d.u }
func (d *kvCache) usesLearners() bool { return false }
func (d *kvCache) sample(*fleet)      {}
func (d *kvCache) metric(f *fleet) (float64, float64, bool) {
	s := 0.0
	for _, p := range f.pods {
		if p.state == ready {
			s += p.eng.kvUsage()
		}
	}
	return s, d.u, true
}
