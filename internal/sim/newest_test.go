package sim_test

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// newestConfig is cancelConfig (bursts, clients that cancel streams and
// leave the queue) on engines that preempt with a KV cache too small for
// their bursts, with a fifth of the requests deferred for 300 ms, served in
// the newest style.
func newestConfig(seed uint64) sim.Config {
	c := cancelConfig(seed)
	c.Models[0].Engine.Preempt = true
	c.Models[0].Engine.KVCapacityTokens = 6000
	c.Models[0].Workload.Defer = sim.Deferral{Share: 0.2, Delay: 300 * time.Millisecond}
	c.Style = sim.Style{Newest: true}
	return c
}

// TestNewestFamilies checks, at uneven stops, the newest families against
// the truth exactly: waiting by reason (deferred, and capacity the rest of
// the waiting requests, preempted ones among them) summing to
// num_requests_waiting, num_preemptions_total counting every preemption
// when it happens (of requests that finish later, are cancelled or still
// run), and request_num_preemptions observing at each finish that
// request's own count. Every other family still equals the truth
// (checkTruth) with preemptions and deferrals. The run must preempt some
// request more than once and defer some while others wait for capacity.
func TestNewestFamilies(t *testing.T) {
	s := mustNew(t, newestConfig(5))
	sawDeferred, sawCapacity := false, false
	for _, d := range []time.Duration{
		7 * time.Second, 13*time.Second + 7, 19 * time.Second, 31*time.Second + 333, 41 * time.Second, 60 * time.Second,
	} {
		s.Advance(d)
		checkTruth(t, s)
		body, ct := s.ExpositionStyle(sim.Style{Format: sim.SingleProcess, Newest: true})
		p := parse(t, body, ct)
		tr := s.Truth()
		from, now := s.Created(), s.Now()
		for _, e := range engines(s, tr) {
			eng, mine := e.label, e.truth
			fl := simtruth.InFlightAt(mine, now)
			capacity := p.must(t, "vllm:num_requests_waiting_by_reason", "engine", eng, "model_name", "m", "reason", "capacity")
			deferred := p.must(t, "vllm:num_requests_waiting_by_reason", "engine", eng, "model_name", "m", "reason", "deferred")
			waiting := p.must(t, "vllm:num_requests_waiting", "engine", eng, "model_name", "m")
			if deferred != float64(fl.Deferred) || capacity != float64(fl.Waiting-fl.Deferred) || capacity+deferred != waiting {
				t.Errorf("at %v engine %s: capacity %v deferred %v waiting %v, truth %+v", now.Sub(t0), eng, capacity, deferred, waiting, fl)
			}
			sawDeferred = sawDeferred || deferred > 0
			sawCapacity = sawCapacity || capacity > 0
			events := 0
			for _, r := range mine {
				for _, sp := range r.Preemptions {
					if !sp.From.After(now) {
						events++
					}
				}
			}
			if got := p.must(t, "vllm:num_preemptions_total", "engine", eng, "model_name", "m"); got != float64(events) {
				t.Errorf("at %v engine %s: num_preemptions_total %v, truth %d", now.Sub(t0), eng, got, events)
			}
			finished := simtruth.FinishedIn(mine, from, now)
			vals := make([]float64, len(finished))
			sum := 0.0
			for i, r := range finished {
				vals[i] = float64(len(r.Preemptions))
				sum += vals[i]
			}
			checkHist(t, p, "vllm:request_num_preemptions", "m", eng, []float64{1, 2, 3, 4, 5, 10, 20}, vals, sum)
		}
	}
	byCount := map[int]int{}
	deferredFinished := 0
	for _, r := range s.Truth() {
		if r.Finished() {
			byCount[min(len(r.Preemptions), 2)]++
			if r.Deferred {
				deferredFinished++
			}
		}
	}
	if byCount[1] == 0 || byCount[2] == 0 || !sawDeferred || !sawCapacity || deferredFinished == 0 {
		t.Fatalf("finished by preemptions (0, 1, 2+) %v, deferred seen %v, capacity seen %v, deferred finished %d: the run shows too little",
			byCount, sawDeferred, sawCapacity, deferredFinished)
	}
	t.Logf("finished requests by preemptions (0, 1, 2+): %v; deferred and finished: %d", byCount, deferredFinished)
}

// TestNewestFamiliesOnlyInNewestStyle: the default style has none of them,
// whatever the engine does (older servers), and a deferred request waits at
// least its delay before it is scheduled.
func TestNewestFamiliesOnlyInNewestStyle(t *testing.T) {
	cfg := newestConfig(9)
	cfg.Style = sim.Style{}
	s := mustNew(t, cfg)
	s.Advance(time.Minute)
	body, ct := s.Exposition()
	p := parse(t, body, ct)
	for _, name := range []string{"vllm:num_preemptions", "vllm:request_num_preemptions", "vllm:num_requests_waiting_by_reason"} {
		if _, ok := p.types[name]; ok {
			t.Errorf("%s exposed in the default style", name)
		}
	}
	for _, r := range s.Truth() {
		if r.Deferred && !r.Scheduled.IsZero() && r.Scheduled.Sub(r.Arrival) < 300*time.Millisecond {
			t.Errorf("request %d deferred but scheduled %v after its arrival", r.ID, r.Scheduled.Sub(r.Arrival))
		}
	}
}
