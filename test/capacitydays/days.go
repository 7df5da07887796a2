// Package days is the capacity estimate's truth harness: simulated vLLM
// servers whose true knee a constant-rate sweep measures from the
// simulator's per-request truth, and simulated production days (rates that
// vary over hours, bursts, a mix that shifts, cancellations) scraped every
// 15 s into the real pipeline, whose per-interval ledger feeds the online
// estimate. The estimate never sees the truth: only what vLLM's /metrics
// shows.
//
// It is test and measurement code: nothing in the daemon imports it.
package days

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// Start is the virtual time every simulated run starts at.
var Start = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// SLO is the interactive SLO the harness judges: TTFT ≤ 500 ms and TPOT ≤
// 50 ms for 95% of the requests.
var SLO = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}},
	Goal:       0.95,
	Period:     24 * time.Hour,
}

// meets says whether a finished request met SLO's objectives.
func meets(r sim.Request) bool {
	return r.Finished() && r.TTFT() <= 0.5+1e-9 && r.TPOT() <= 0.05+1e-9
}

// Server is a simulated vLLM server and its clients' request mix: the
// demo's model and engine cost, with its engine count, assignment, prompt
// lengths and cancellations changed.
type Server struct {
	Name    string
	Engines int
	Assign  sim.Assignment
	// Prompt replaces the demo's prompt lengths when non-nil.
	Prompt *sim.LengthDist
	Cancel sim.Cancellation
}

// LongPrompts is the demo mix with every prompt about 1.5 times as long.
var LongPrompts = sim.LengthDist{Mixture: []sim.Component{
	{Weight: 0.8, Dist: sim.LengthDist{Median: 600, Sigma: 0.8, Min: 12, Max: 6000}},
	{Weight: 0.2, Dist: sim.LengthDist{Median: 3750, Sigma: 0.5, Min: 750, Max: 15000}},
}}

// The servers of the truth suite.
var (
	OneEngine   = Server{Name: "one engine", Engines: 1}
	LongPrompt  = Server{Name: "one engine, long prompts", Engines: 1, Prompt: &LongPrompts}
	TwoEngines  = Server{Name: "two engines", Engines: 2, Assign: sim.Random}
	Cancelling  = Server{Name: "one engine, 15% cancelled", Engines: 1, Cancel: sim.Cancel15}
	ServersUsed = []Server{OneEngine, LongPrompt, TwoEngines, Cancelling}
)

// config is the server's simulator config running phases once.
func (s Server) config(seed uint64, phases []sim.Phase) sim.Config {
	cfg := sim.DemoConfig(seed, Start)
	cfg.DiscardTokenTimes = true
	m := &cfg.Models[0]
	m.Engines, m.Assign = s.Engines, s.Assign
	if s.Prompt != nil {
		m.Workload.Prompt = *s.Prompt
	}
	m.Workload.Cancel = s.Cancel
	m.Workload.Phases, m.Workload.Repeat = phases, false
	return cfg
}

// Sweep is the constant-rate measurement of a server: the true attainment
// of SLO at each rate, and the knee.
type Sweep struct {
	Rates, Attainment []float64
	// Knee is the highest rate whose true attainment is at least the goal,
	// interpolated linearly between the two rates around the crossing of a
	// monotone (isotonic) fit of the measured points.
	Knee float64
}

// sweepRun is how long each constant rate runs: a warm-up that is not
// judged, then the requests that arrive in the measured span are judged
// (those still unfinished at the end of the drain count as bad).
const (
	sweepWarm    = 3 * time.Minute
	sweepMeasure = 30 * time.Minute
	sweepDrain   = 20 * time.Minute
)

// TrueKnee sweeps rates from lo to hi in steps of step (req/s), each over
// seeds, and returns the measured curve and its knee.
func TrueKnee(s Server, lo, hi, step float64, seeds []uint64) (Sweep, error) {
	var sw Sweep
	for r := lo; r <= hi+1e-9; r += step {
		var good, n float64
		for _, seed := range seeds {
			g, m, err := constantRate(s, r, seed)
			if err != nil {
				return Sweep{}, err
			}
			good, n = good+g, n+m
		}
		sw.Rates = append(sw.Rates, r)
		sw.Attainment = append(sw.Attainment, good/n)
	}
	sw.Knee = simtruth.Knee(sw.Rates, sw.Attainment, SLO.Goal)
	return sw, nil
}

// constantRate runs s at rate and counts the judged requests and the good ones.
func constantRate(s Server, rate float64, seed uint64) (good, n float64, err error) {
	cfg := s.config(seed, []sim.Phase{{Duration: sweepWarm + sweepMeasure, Kind: sim.Poisson, Rate: rate}})
	sm, err := sim.New(cfg)
	if err != nil {
		return 0, 0, fmt.Errorf("server %q at %g req/s: %w", s.Name, rate, err)
	}
	sm.AdvanceTo(Start.Add(sweepWarm + sweepMeasure + sweepDrain))
	from := Start.Add(sweepWarm)
	for _, r := range sm.Truth() {
		// Cancelled requests are left out: the estimate judges the
		// finished requests (see capacity's package doc).
		if r.Arrival.Before(from) || r.Cancelled {
			continue
		}
		n++
		if meets(r) {
			good++
		}
	}
	return good, n, nil
}

// Day is a simulated production day: a server under a rate profile, with
// an optional shift of the prompt mix at a share of the day.
type Day struct {
	Name   string
	Server Server
	// Length is the day's simulated length; Phases its rate profile.
	Length time.Duration
	Phases []sim.Phase
	// KneeServer is the server whose knee the day's end should be judged
	// against (the shifted mix's after a shift), Server when zero.
	KneeServer *Server
	// LowLoad marks a day whose load stays well below the knee: its honest
	// answer is one-sided.
	LowLoad bool
}

// Diurnal returns ramps that rise from base to peak (req/s) and fall back
// over length, in steps linear pieces of a raised cosine.
func Diurnal(base, peak float64, length time.Duration, steps int) []sim.Phase {
	at := func(k int) float64 {
		return base + (peak-base)*(1-math.Cos(2*math.Pi*float64(k)/float64(steps)))/2
	}
	ps := make([]sim.Phase, steps)
	for k := range steps {
		ps[k] = sim.Phase{Duration: length / time.Duration(steps), Kind: sim.Ramp, Rate: at(k), RateEnd: at(k + 1)}
	}
	return ps
}

// Result is one day replayed: what the online estimate published along the
// way and at the end.
type Result struct {
	Day  Day
	Seed uint64
	// Hourly holds the estimate after each hour of the day, the last at its end.
	Hourly    []capacity.Estimate
	Baselines []capacity.Baseline
	Final     capacity.Estimate
	Baseline  capacity.Baseline
	// Intervals counts the intervals the pipeline handed to the learners;
	// Fed holds what the learner of SLO was given from each (for replaying
	// the day into another learner).
	Intervals int
	Fed       []capacity.Interval
	// Windows are the learner's windows at the end, and TrueGood the good
	// finished requests in each by the simulator's truth (for diagnosis:
	// the estimate never reads it).
	Windows  []capacity.Window
	TrueGood []float64
}

// Run replays the day with seed: the simulator scraped every 15 s into a
// pipeline, which hands every interval it closes to the online learners
// (package capacity/online) the daemon runs, configured by cfg.
func Run(d Day, seed uint64, cfg capacity.Config) (Result, error) {
	sm, err := sim.New(d.Server.config(seed, d.Phases))
	if err != nil {
		return Result{}, fmt.Errorf("day %q: %w", d.Name, err)
	}
	learners := online.New(func(float64) capacity.Config { return cfg })
	spec := pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs:      []slo.SLO{SLO},
		Windows:   []time.Duration{time.Minute},
		Quantiles: []float64{0.5},
		MaxModels: 10,
		Retention: history.NewRetention(10*time.Minute, time.Hour),
		Intervals: &counted{learners: learners},
	}
	p := pipeline.New(spec)
	res := Result{Day: d, Seed: seed}
	inspect := func(f func(*capacity.Learner)) {
		learners.Inspect("gpu0", sim.DemoModel, SLO.Name, f)
	}
	step := 15 * time.Second
	for at := Start.Add(step); !at.After(Start.Add(d.Length)); at = at.Add(step) {
		sm.AdvanceTo(at)
		body, ct := sm.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			return Result{}, fmt.Errorf("day %q: parse at %v: %w", d.Name, at, err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			return Result{}, fmt.Errorf("day %q: ingest at %v: %w", d.Name, at, err)
		}
		if at.Sub(Start)%time.Hour == 0 {
			inspect(func(l *capacity.Learner) {
				res.Hourly = append(res.Hourly, l.Estimate(at))
				res.Baselines = append(res.Baselines, l.Baseline(SLO))
			})
		}
	}
	inspect(func(l *capacity.Learner) {
		res.Final = l.Estimate(Start.Add(d.Length))
		res.Baseline = l.Baseline(SLO)
		res.Windows = slices.Clone(l.Windows())
	})
	res.Intervals, res.Fed = spec.Intervals.(*counted).n, spec.Intervals.(*counted).fed
	res.TrueGood = trueGood(sm.Truth(), res.Windows)
	return res, nil
}

// counted is the learners, counting the intervals handed to them and
// keeping what the first SLO's learner learns from each (as
// online.Learners does, for the intervals the ledger judged for it).
type counted struct {
	learners *online.Learners
	n        int
	fed      []capacity.Interval
}

func (c *counted) ObserveIntervals(t pipeline.TargetSpec, slos []slo.SLO, ivs []pipeline.ClosedInterval) {
	c.n += len(ivs)
	for _, iv := range ivs {
		if len(iv.Good) > 0 && iv.Good[0].End.Equal(iv.Window.End) {
			c.fed = append(c.fed, online.Interval(iv, 0))
		}
	}
	c.learners.ObserveIntervals(t, slos, ivs)
}

// trueGood counts, per window, the finished requests that met SLO by the
// truth (windows in time order and disjoint).
func trueGood(truth sim.Truth, ws []capacity.Window) []float64 {
	out := make([]float64, len(ws))
	for _, r := range truth {
		if !meets(r) {
			continue
		}
		k := sort.Search(len(ws), func(k int) bool { return ws[k].End.After(r.Finish) || ws[k].End.Equal(r.Finish) })
		if k < len(ws) && r.Finish.After(ws[k].Start) {
			out[k]++
		}
	}
	return out
}
