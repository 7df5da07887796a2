package fleetday

import (
	"math/rand/v2"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Start is the virtual time a day starts at (for the learners' windows).
var Start = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// SLO is the SLO every fleet keeps: TTFT ≤ 500 ms and TPOT ≤ 50 ms for 95%
// of the requests (test/capacitydays' interactive SLO).
var SLO = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}},
	Goal:       0.95,
	Period:     30 * 24 * time.Hour,
}

// Config is a fleet: its replicas' engine, how long a replica takes to
// serve, how often it is scraped and scaled, and its autoscaler.
type Config struct {
	Engine sim.EngineParams
	// Startup is the time from a replica's creation (or its vLLM's
	// restart) to its first request: scheduling, image and model load.
	Startup time.Duration
	// Tick is the scrape interval, which the signals are computed at and
	// the autoscaler syncs at (HPA.Sync is taken to equal it). The
	// autoscaler reads the metric computed one tick earlier: the
	// Prometheus scrape and rule evaluation it goes through.
	Tick time.Duration
	HPA  HPA
	// Capacity configures every replica's learner; Policy the replica
	// signal, and ModelLoadSpan and ModelTrendSpan the spans of the
	// model's load it is given (pooledLoad): at a fleet's
	// thousands of requests a minute, two minutes of arrivals read the
	// rate to a few percent, and a shorter span lags a ramp less.
	Capacity                      capacity.Config
	Policy                        capacity.ReplicaPolicy
	ModelLoadSpan, ModelTrendSpan time.Duration
}

// DefaultConfig is the demo engine (internal/sim's one-engine server), a
// 3-minute startup (llm-d measured 100 s to 2 min 15 s for a pod's
// warm-up), 15-second ticks, DefaultHPA and the capacity defaults.
func DefaultConfig() Config {
	return Config{
		Engine: sim.DemoEngine, Startup: 3 * time.Minute, Tick: 15 * time.Second, HPA: DefaultHPA(),
		Capacity: capacity.DefaultConfig(SLO.Goal), Policy: capacity.DefaultReplicaPolicy(),
		ModelLoadSpan: 2 * time.Minute, ModelTrendSpan: 10 * time.Minute,
	}
}

type podState int

const (
	loading  podState = iota // created or restarted, the model loading
	ready                    // behind the router
	draining                 // removed by a scale-down, finishing its requests
	gone
)

// pod is one replica: its engine, its state, what its scrapes saw and its
// capacity learner (the daemon's, one per target: a new pod starts
// learning from nothing).
type pod struct {
	f       *fleet
	id      int
	eng     *engine
	state   podState
	readyAt float64
	since   float64 // became ready (the youngest are removed first)

	// scraped is false until the first scrape since the pod became ready;
	// last holds that scrape's gauges and c the counts since.
	scraped bool
	last    gauges
	c       counts

	learner *capacity.Learner
	est     capacity.Estimate
	fitted  bool
	fitAt   float64
	nWin    int
	newest  time.Time
}

type gauges struct{ waiting, running float64 }

// counts are what a scrape interval's increases show.
type counts struct {
	firstTokens, finished, good, promptTok, outputTok float64
	ttftSum, tpotSum, tpotN                           float64
	generated                                         float64 // the engine's counter at the last scrape
}

func (p *pod) firstToken(r *request, at float64) {
	p.c.firstTokens++
	p.c.ttftSum += at - r.arrival
	p.f.ttft.add(at, at-r.arrival)
}

func (p *pod) finished(r *request, at float64) {
	tpot := r.tpot(at)
	good := r.first-r.arrival <= SLO.Objectives[0].Threshold+1e-9 && tpot <= SLO.Objectives[1].Threshold+1e-9
	p.c.finished++
	p.c.promptTok += float64(r.prompt)
	p.c.outputTok += float64(r.output)
	p.c.tpotSum += tpot
	p.c.tpotN++
	if good {
		p.c.good++
	}
	p.f.tpot.add(at, tpot)
	p.f.stats.end(at, good, float64(r.output))
}

func (p *pod) lost(r *request, at float64) { p.f.stats.end(at, false, 0) }

// fleet is a day in progress.
type fleet struct {
	cfg    Config
	day    Day
	sig    Signal
	rng    *rand.Rand
	now    float64
	pods   []*pod // every pod not gone, in creation order
	nextID int
	spec   int // the Deployment's replicas
	hpa    autoscaler
	rr     int
	// pending is the metric computed at the last tick, which the
	// autoscaler reads at this one.
	pending metric
	// ttft and tpot are the last minute's observations (signal a);
	// arrivals counts each tick's arrivals.
	ttft, tpot recent
	arrivals   []float64
	// intervals are every replica's scrape intervals of the last
	// ModelTrendSpan, those of replicas since removed included.
	intervals []capacity.Interval
	stats     stats
	trace     []TickRecord
}

type metric struct {
	value, target float64
	ok            bool
}

// recent is a time-ordered series of observations kept for the last
// recentSpan seconds.
type recent struct {
	at, v []float64
	head  int
}

const recentSpan = 60

func (r *recent) add(at, v float64) {
	r.at, r.v = append(r.at, at), append(r.v, v)
	for r.head < len(r.at) && r.at[r.head] <= at-recentSpan {
		r.head++
	}
	if r.head > 1024 && r.head*2 > len(r.at) {
		n := copy(r.at, r.at[r.head:])
		copy(r.v, r.v[r.head:])
		r.at, r.v, r.head = r.at[:n], r.v[:n], 0
	}
}

// since returns the values observed after from (within the kept span).
func (r *recent) since(from float64) []float64 {
	i := r.head
	for i < len(r.at) && r.at[i] <= from {
		i++
	}
	return r.v[i:]
}

// newPod creates a replica that serves once loaded.
func (f *fleet) newPod(readyAt float64) *pod {
	p := &pod{f: f, id: f.nextID, state: loading, readyAt: readyAt}
	f.nextID++
	p.eng = newEngine(f.cfg.Engine, f.day.Seed<<20|uint64(p.id), p)
	if f.sig.usesLearners() {
		p.learner = capacity.NewLearner(f.cfg.Capacity)
	}
	f.pods = append(f.pods, p)
	return p
}

// route sends r to the ready replica with the fewest outstanding requests
// (waiting + running), ties broken round-robin; with none ready it is
// lost (the gateway answers 503).
func (f *fleet) route(r *request) {
	var best *pod
	n := len(f.pods)
	for k := range n {
		p := f.pods[(f.rr+k)%n]
		if p.state == ready && (best == nil || p.eng.outstanding() < best.eng.outstanding()) {
			best = p
		}
	}
	f.rr++
	if best == nil {
		f.stats.end(r.arrival, false, 0)
		return
	}
	best.eng.push(r)
}

// advance runs every replica's engine to t.
func (f *fleet) advance(t float64) {
	for _, p := range f.pods {
		if p.state == ready || p.state == draining {
			p.eng.advance(t)
		}
	}
	f.now = t
}

// readyPods counts the replicas behind the router.
func (f *fleet) readyPods() int {
	n := 0
	for _, p := range f.pods {
		if p.state == ready {
			n++
		}
	}
	return n
}

// scale brings the Deployment to n replicas: new ones load for Startup;
// removed ones are, as a ReplicaSet picks them, the loading ones first,
// then the ready ones that became ready last, each finishing its requests.
func (f *fleet) scale(n int) {
	for f.spec < n {
		f.newPod(f.now + f.cfg.Startup.Seconds())
		f.spec++
	}
	for f.spec > n {
		var victim *pod
		for _, p := range f.pods {
			if p.state == loading && (victim == nil || victim.state != loading || p.id > victim.id) {
				victim = p
			}
			if p.state == ready && (victim == nil || (victim.state == ready && p.since > victim.since)) {
				victim = p
			}
		}
		if victim.state == loading {
			victim.state = gone
		} else {
			victim.state = draining
		}
		f.spec--
	}
}
