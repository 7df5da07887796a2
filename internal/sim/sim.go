package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Sim is a simulated vLLM server on a virtual clock. All methods are safe for
// concurrent use.
type Sim struct {
	mu      sync.Mutex
	cfg     Config
	now     int64 // ns since cfg.Start
	created int64 // ns since cfg.Start of the latest (re)start
	buckets Buckets
	models  []*model
	reqs    []*request // in creation order per model; see Truth for the order
	// restarts counts Restart calls, for the python/process families.
	restarts int
	// events are the crashes and recoveries of cfg.Restarts in time order;
	// nextEvent is the first not yet applied; down is true during an outage.
	events    []lifeEvent
	nextEvent int
	down      bool
}

// model is one served model: its arrival process and engines.
type model struct {
	idx     int
	cfg     ModelConfig
	rng     *rand.Rand
	clients *rand.Rand // the clients' cancellation plans, one draw set per arrival
	arr     *arrivals
	next    int64 // time of the next arrival
	seq     int64
	rr      int
	layout  layout
	engines []*engine
	// rejected counts the arrivals turned away by MaxNumQueuedReqs.
	rejected uint64
}

// New validates the config and returns a sim at cfg.Start with no request yet.
func New(cfg Config) (*Sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	s := &Sim{cfg: cfg, buckets: cfg.Buckets, events: lifeEvents(cfg.Restarts)}
	for i, mc := range cfg.Models {
		m := &model{
			idx:     i,
			cfg:     mc,
			rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(i)*2+1)),
			clients: rand.New(rand.NewPCG(cfg.Seed^0x5851f42d4c957f2d, uint64(i)*2+2)),
			arr:     newArrivals(mc.Workload),
		}
		m.layout = cfg.Buckets.resolve(mc.MaxModelLen)
		for j := range mc.Engines {
			e := &engine{
				m:       m,
				idx:     j,
				rng:     rand.New(rand.NewPCG(cfg.Seed^0x9e3779b97f4a7c15, uint64(i)<<20|uint64(j))),
				stepEnd: never,
				met:     newEngineMetrics(m.layout),
			}
			m.engines = append(m.engines, e)
		}
		m.next = m.arr.next(m.rng)
		s.models = append(s.models, m)
	}
	return s, nil
}

// AdvanceTo runs the simulation up to and including virtual time t. Times at
// or before Now are ignored: the virtual clock never goes back.
func (s *Sim) AdvanceTo(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(t)
}

func (s *Sim) advance(t time.Time) {
	tn := int64(t.Sub(s.cfg.Start))
	if tn <= s.now {
		return
	}
	for s.nextEvent < len(s.events) && s.events[s.nextEvent].at <= tn {
		ev := s.events[s.nextEvent]
		s.runTo(ev.at)
		s.apply(ev)
		s.nextEvent++
	}
	s.runTo(tn)
	if s.cfg.DiscardTruth {
		s.reqs = slices.DeleteFunc(s.reqs, (*request).done)
	}
}

// runTo runs arrivals and engines up to and including tn (ns since Start).
// While the server is down, arrivals are refused at the door: they never
// reach vLLM and leave no truth.
func (s *Sim) runTo(tn int64) {
	for _, m := range s.models {
		for m.next <= tn {
			if !s.down {
				s.arrive(m, m.next)
			}
			m.next = m.arr.next(m.rng)
		}
		for _, e := range m.engines {
			e.advance(tn, s)
		}
	}
	s.now = max(s.now, tn)
}

// arrive creates a request arriving at t and queues it at an engine.
func (s *Sim) arrive(m *model, t int64) {
	w := m.cfg.Workload
	prompt := min(m.arr.prompt(t).Sample(m.rng), m.cfg.MaxModelLen-1)
	output := min(w.Output.Sample(m.rng), m.cfg.MaxModelLen-prompt)
	reason := "length"
	if m.rng.Float64() < w.StopProbability {
		reason = "stop"
	}
	e := m.rr % len(m.engines)
	m.rr++
	if m.cfg.Assign == Random {
		e = m.rng.IntN(len(m.engines))
	}
	r := &request{
		id: m.seq, model: m.idx, engine: e,
		arrival: t, scheduled: -1, firstToken: -1, finish: -1,
		prompt: prompt, output: output, reason: reason,
		plan: clientPlan{patience: never}, cancelAt: never,
	}
	if w.Cancel.enabled() {
		r.plan = w.Cancel.drawPlan(m.clients)
	}
	r.undeferred = -1
	if w.Defer.Share > 0 && m.clients.Float64() < w.Defer.Share {
		r.deferred, r.readyAt = true, t+int64(w.Defer.Delay)
	}
	m.seq++
	s.reqs = append(s.reqs, r)
	if m.cfg.MaxNumQueuedReqs > 0 && m.unfinishedBefore(t, s) >= m.cfg.MaxNumQueuedReqs {
		r.rejected, r.finish = true, t
		m.rejected++
		s.done(r)
		return
	}
	m.engines[e].enqueue(r)
}

// unfinishedBefore is the model's requests waiting or running on any engine
// just before t: what vLLM's front end compares with --max-num-queued-reqs
// when a request arrives at t. runTo queues a period's arrivals before it
// advances the engines, so the engines are first brought to t − 1 ns (a step
// starting at t itself still admits the arrival, as without a limit).
func (m *model) unfinishedBefore(t int64, s *Sim) int {
	n := 0
	for _, e := range m.engines {
		e.advance(t-1, s)
		n += e.numQueued() + len(e.running)
	}
	return n
}

// done hands a finished or lost request to the OnDone hook.
func (s *Sim) done(r *request) {
	if s.cfg.OnDone != nil {
		s.cfg.OnDone(s.export(r))
	}
}

// restartNow loses every in-flight request and starts every counter and
// histogram again from zero, at the current virtual time.
func (s *Sim) restartNow() {
	s.created = s.now
	s.restarts++
	for _, m := range s.models {
		m.layout = s.buckets.resolve(m.cfg.MaxModelLen)
		for _, e := range m.engines {
			e.abortAll(s.now, s)
			e.met = newEngineMetrics(m.layout)
		}
	}
}
