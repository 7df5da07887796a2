package pipeline

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Serving a simulated server live to a pipeline on a virtual clock, as the
// daemon sees one: scrapes liveInterval apart ±20%, and every finished
// request's span arriving up to liveSpanDelay after it finished, between
// two scrapes.
const (
	liveInterval  = time.Second
	liveSpanDelay = 3 * time.Second
)

// lateSpan is a span and when it reaches the receiver.
type lateSpan struct {
	span traces.Span
	at   time.Time
}

// liveServe is one such server, its span store and the pipeline it feeds,
// judged under the four populations (populations). Its random draws come
// from one seeded stream, in the order the test makes them.
type liveServe struct {
	sim      *sim.Sim
	p        *Pipeline
	spec     Spec
	slos     []slo.SLO
	rng      *rand.Rand
	store    *traces.Store
	clock    time.Time // the span store's now
	inFlight []lateSpan
}

// newLiveServe builds the preset's server, its first phase cut to
// firstPhase (so that the overload comes sooner), with windows of 1m and 2m.
func newLiveServe(t *testing.T, preset string, firstPhase time.Duration, seed1, seed2 uint64) *liveServe {
	t.Helper()
	cfg, err := sim.Preset(preset, 11, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Models[0].Workload.Phases[0].Duration = firstPhase
	cfg.DiscardTokenTimes = true
	l := &liveServe{rng: rand.New(rand.NewPCG(seed1, seed2)), clock: start}
	l.store = traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, MaxModels: 10, MaxAdapters: 10,
		Now: func() time.Time { return l.clock }})
	cfg.OnDone = func(r sim.Request) {
		if r.Finished() {
			l.inFlight = append(l.inFlight, lateSpan{spanOf(r), r.Finish.Add(time.Duration(l.rng.Float64() * float64(liveSpanDelay)))})
		}
	}
	if l.sim, err = sim.New(cfg); err != nil {
		t.Fatal(err)
	}
	l.slos = populations()
	l.spec = testSpec(t)
	l.spec.Targets[0].Interval = liveInterval
	l.spec.SLOs, l.spec.Windows, l.spec.Traces = l.slos, []time.Duration{time.Minute, 2 * time.Minute}, l.store
	l.spec.TraceDelay, l.spec.TraceLateness = liveSpanDelay, 2*time.Second
	l.p = New(l.spec)
	return l
}

// deliver hands the span store, at time at, the spans that arrived by then.
func (l *liveServe) deliver(at time.Time) {
	l.clock = at
	var kept []lateSpan
	for _, s := range l.inFlight {
		if s.at.After(at) {
			kept = append(kept, s)
			continue
		}
		l.store.Add([]traces.Span{s.span})
	}
	l.inFlight = kept
}

// nextScrape draws the scrape after the one at, delivers the spans that
// arrived at a random instant between the two, and returns its time.
func (l *liveServe) nextScrape(at time.Time) time.Time {
	next := at.Add(time.Duration(float64(liveInterval) * (0.8 + 0.4*l.rng.Float64())))
	l.deliver(at.Add(time.Duration(l.rng.Float64() * float64(next.Sub(at)))))
	l.clock = next
	return next
}
