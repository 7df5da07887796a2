package fleetday

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// TickRecord is the fleet at one tick: what the autoscaler read and did,
// and the replica signal where the signal is ours.
type TickRecord struct {
	At time.Duration
	// Spec is the Deployment's replicas after the tick's decision, Ready
	// those behind the router, Pods every replica costing (loading, ready
	// or draining).
	Spec, Ready, Pods int
	// Value and Target are the metric the autoscaler read (OK false when
	// it had none).
	Value, Target float64
	OK            bool
	// Need is the replica signal computed at the tick (Signal Ours only).
	Need capacity.Need
	// Waiting is the replicas' waiting requests; Arrivals the requests
	// that arrived since the last tick.
	Waiting  int
	Arrivals float64
	// Intervals are the prediction intervals of the ready replicas'
	// bounded capacity answers (replica signal only).
	Intervals []capacity.Range
}

// Run plays day under cfg with sig driving the autoscaler, and returns its
// score and, per tick, what the fleet did.
func Run(cfg Config, d Day, sig Signal) (Score, []TickRecord, error) {
	if d.Initial < 1 || d.Length <= 0 || cfg.Tick <= 0 {
		return Score{}, nil, fmt.Errorf("day %q: %d initial replicas, length %v, tick %v: want positive", d.Name, d.Initial, d.Length, cfg.Tick)
	}
	cfg.HPA.Sync = cfg.Tick
	f := &fleet{cfg: cfg, day: d, sig: sig, rng: rand.New(rand.NewPCG(d.Seed, 7)), hpa: autoscaler{cfg: cfg.HPA}}
	f.stats = newStats(d.Length)
	for range d.Initial {
		p := f.newPod(0)
		p.state, p.since = ready, 0
	}
	f.spec = d.Initial
	arr := newArrivals(d)
	reqRNG := rand.New(rand.NewPCG(d.Seed, 11))
	tick, next := cfg.Tick.Seconds(), arr.next()
	end := d.Length.Seconds()
	failures, base := failureTimes(d), DemoMix()
	for at := tick; at <= end+1e-9; at += tick {
		n := 0.0
		for next <= at {
			f.advance(next)
			f.route(newRequest(d.mix(next, base), next, reqRNG))
			n++
			next = arr.next()
		}
		f.arrivals = append(f.arrivals, n)
		f.advance(at)
		f.tick(at, &failures)
	}
	f.drain()
	return f.stats.score(d, sig, f), f.trace, nil
}

// seconds is a time of the day as a duration.
func seconds(at float64) time.Duration { return time.Duration(at * float64(time.Second)) }

// forgetIntervals drops the intervals older than the model's trend span.
func (f *fleet) forgetIntervals() {
	cut := 0
	from := Start.Add(seconds(f.now) - max(f.cfg.ModelTrendSpan, f.cfg.ModelLoadSpan))
	for cut < len(f.intervals) && !f.intervals[cut].End.After(from) {
		cut++
	}
	if cut > 0 {
		f.intervals = append(f.intervals[:0], f.intervals[cut:]...)
	}
}

func failureTimes(d Day) []float64 {
	out := make([]float64, len(d.Failures))
	for i, x := range d.Failures {
		out[i] = x.Seconds()
	}
	return out
}

// tick is everything that happens at a scrape: replicas become ready or
// fail, are scraped and learnt from, the signal is sampled and the
// autoscaler decides on the metric of the previous tick.
func (f *fleet) tick(at float64, failures *[]float64) {
	f.stats.cost(f.costing(), f.cfg.Tick.Seconds())
	for _, p := range f.pods {
		if p.state == loading && p.readyAt <= at {
			p.state, p.since, p.scraped = ready, at, false
			p.eng = newEngine(f.cfg.Engine, f.day.Seed<<20|uint64(p.id)<<8|uint64(f.nextID), p)
		}
	}
	for len(*failures) > 0 && (*failures)[0] <= at {
		*failures = (*failures)[1:]
		f.fail(at)
	}
	for _, p := range f.pods {
		if p.state == ready {
			f.scrape(p, at)
		}
	}
	f.forgetIntervals()
	f.sig.sample(f)
	cur := f.pending
	f.pending = f.metric()
	n := f.hpa.decide(at, f.spec, cur.value, cur.target, cur.ok)
	f.scale(n)
	f.record(at, cur)
	f.pods = slicesDeleteGone(f.pods)
}

// fail kills the vLLM of the oldest ready replica: its requests are lost
// and it loads the model again for Startup.
func (f *fleet) fail(at float64) {
	for _, p := range f.pods {
		if p.state == ready {
			p.eng.crash(at)
			p.state, p.readyAt = loading, at+f.cfg.Startup.Seconds()
			return
		}
	}
}

// costing counts the replicas that hold a GPU: loading, ready or draining.
func (f *fleet) costing() int {
	n := 0
	for _, p := range f.pods {
		if p.state != gone {
			n++
		}
	}
	return n
}

// record keeps the tick's trace and retires drained replicas.
func (f *fleet) record(at float64, m metric) {
	waiting := 0
	for _, p := range f.pods {
		if p.state == draining && p.eng.idle() {
			p.state = gone
		}
		if p.state == ready {
			waiting += p.eng.waitingNow()
		}
	}
	rec := TickRecord{At: seconds(at), Spec: f.spec, Ready: f.readyPods(), Pods: f.costing(),
		Value: m.value, Target: m.target, OK: m.ok, Waiting: waiting}
	if len(f.arrivals) > 0 {
		rec.Arrivals = f.arrivals[len(f.arrivals)-1]
	}
	if o, ok := f.sig.(*ours); ok {
		rec.Need = o.need
		for _, p := range f.pods {
			if p.state == ready && p.fitted && p.est.Kind == capacity.Bounded {
				rec.Intervals = append(rec.Intervals, p.est.Requests)
			}
		}
	}
	f.trace = append(f.trace, rec)
}

func slicesDeleteGone(ps []*pod) []*pod {
	out := ps[:0]
	for _, p := range ps {
		if p.state != gone {
			out = append(out, p)
		}
	}
	clear(ps[len(out):])
	return out
}

// drain runs the replicas past the day's end until every request ended
// (at most an hour), so that each is judged.
func (f *fleet) drain() {
	end := f.now
	for t := end; t < end+3600; t += 10 {
		f.advance(t)
		busy := false
		for _, p := range f.pods {
			if (p.state == ready || p.state == draining) && !p.eng.idle() {
				busy = true
			}
		}
		if !busy {
			return
		}
	}
}

// scrape closes p's scrape interval at at and hands it to its learner.
func (f *fleet) scrape(p *pod, at float64) {
	g := gauges{waiting: float64(p.eng.waitingNow()), running: float64(p.eng.running)}
	gen := p.eng.generated
	if p.scraped && p.learner != nil {
		start := Start.Add(seconds(at - f.cfg.Tick.Seconds()))
		iv := capacity.Interval{
			Start: start, End: start.Add(f.cfg.Tick),
			FirstTokens:  p.c.firstTokens,
			WaitingStart: p.last.waiting, WaitingEnd: g.waiting, RunningStart: p.last.running, RunningEnd: g.running,
			InFlightMean: (p.last.waiting + p.last.running + g.waiting + g.running) / 2,
			Finished:     p.c.finished, GoodKnown: true,
			GeneratedTokens: gen - p.c.generated,
			PromptTokens:    p.c.promptTok, OutputTokens: p.c.outputTok, Mixed: true,
			TTFT: capacity.Mean{Sum: p.c.ttftSum, Count: p.c.firstTokens},
			TPOT: capacity.Mean{Sum: p.c.tpotSum, Count: p.c.tpotN},
		}
		iv.Good.Estimate, iv.Good.Lower, iv.Good.Upper = p.c.good, p.c.good, p.c.good
		p.learner.Add(iv)
		f.intervals = append(f.intervals, iv)
		p.update(at, f.cfg.Capacity)
	}
	p.scraped, p.last = true, g
	p.c = counts{generated: gen}
}

// update refits or refreshes p's estimate when its learner closed a
// window, as capacity/online does at each evaluation: a bounded estimate
// fitted less than RefitEvery ago is refreshed (load, trend, headroom),
// any other fitted afresh.
func (p *pod) update(at float64, cfg capacity.Config) {
	ws := p.learner.Windows()
	newest := time.Time{}
	if len(ws) > 0 {
		newest = ws[len(ws)-1].End
	}
	if p.fitted && len(ws) == p.nWin && newest.Equal(p.newest) {
		return
	}
	now := Start.Add(seconds(at))
	if p.fitted && p.est.Kind == capacity.Bounded && at-p.fitAt < cfg.RefitEvery.Seconds() {
		p.est = p.learner.Refresh(p.est, now)
	} else {
		p.est, p.fitted, p.fitAt = p.learner.Estimate(now), true, at
	}
	p.nWin, p.newest = len(ws), newest
}

// estimates are the fitted estimates of the ready replicas: what one
// exporter scraping every replica of the model publishes.
func (f *fleet) estimates() []capacity.Estimate {
	var es []capacity.Estimate
	for _, p := range f.pods {
		if p.state == ready && p.fitted {
			es = append(es, p.est)
		}
	}
	return es
}

// metric is the signal's metric now, or none.
func (f *fleet) metric() metric {
	v, t, ok := f.sig.metric(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		ok = false
	}
	return metric{value: v, target: t, ok: ok}
}
