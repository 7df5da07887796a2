package fleetday

import (
	"math/rand/v2"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// Sweep is the constant-rate measurement of one replica: the true
// attainment at each rate and the knee, the highest rate whose attainment
// is at least the goal (linear between the rates around the crossing of
// the measured curve made non-increasing by pooling adjacent violators).
type Sweep struct {
	Rates, Attainment []float64
	Knee              float64
}

// sweepWarm, sweepMeasure: each rate runs a warm-up that is not judged,
// then the requests arriving in the measured span are judged after they
// all end (test/capacitydays' sweep).
const (
	sweepWarm    = 3 * time.Minute
	sweepMeasure = 30 * time.Minute
)

// TrueKnee measures one replica of engine p under mix m at each rate,
// pooled over seeds.
func TrueKnee(p sim.EngineParams, m Mix, rates []float64, seeds []uint64) Sweep {
	var sw Sweep
	for _, r := range rates {
		var good, n float64
		for _, s := range seeds {
			g, k := constantRate(p, m, r, s)
			good, n = good+g, n+k
		}
		sw.Rates = append(sw.Rates, r)
		sw.Attainment = append(sw.Attainment, good/n)
	}
	sw.Knee = simtruth.Knee(sw.Rates, sw.Attainment, SLO.Goal)
	return sw
}

// Fixed is the signal of a fleet that never scales: it has no metric.
type Fixed struct{}

func (Fixed) Name() string                           { return "fixed" }
func (Fixed) Threshold() float64                     { return 0 }
func (Fixed) usesLearners() bool                     { return false }
func (Fixed) sample(*fleet)                          {}
func (Fixed) metric(*fleet) (float64, float64, bool) { return 0, 0, false }

// FleetKnee measures n replicas behind the router at each per-replica
// rate, pooled over seeds, under mix: the fleet's knee per replica. The
// router's balancing (each arrival to the replica with the fewest
// outstanding requests) smooths what each replica sees, so a replica of a
// fleet keeps the SLO at a higher rate than one alone (TrueKnee). The
// requests that end in the measured span are judged.
func FleetKnee(cfg Config, m Mix, n int, rates []float64, seeds []uint64) Sweep {
	var sw Sweep
	warm := int(sweepWarm.Minutes())
	for _, r := range rates {
		var good, all float64
		for _, s := range seeds {
			d := Day{Name: "sweep", Seed: s, Length: sweepWarm + sweepMeasure, Initial: n, Rate: []Point{{0, r * float64(n)}},
				Shifts: []Shift{{At: 0, Mix: m}}}
			c := cfg
			c.HPA.Min, c.HPA.Max = n, n
			sc, _, err := Run(c, d, Fixed{})
			if err != nil {
				continue
			}
			for _, x := range sc.Minutes[warm:] {
				good, all = good+x.Good, all+x.N
			}
		}
		sw.Rates = append(sw.Rates, r)
		sw.Attainment = append(sw.Attainment, good/all)
	}
	sw.Knee = simtruth.Knee(sw.Rates, sw.Attainment, SLO.Goal)
	return sw
}

// judge counts the good requests among those that arrived from a time on.
type judge struct {
	from    float64
	good, n float64
}

func (j *judge) firstToken(*request, float64) {}
func (j *judge) lost(*request, float64)       {}
func (j *judge) finished(r *request, at float64) {
	if r.arrival < j.from {
		return
	}
	j.n++
	if r.first-r.arrival <= SLO.Objectives[0].Threshold+1e-9 && r.tpot(at) <= SLO.Objectives[1].Threshold+1e-9 {
		j.good++
	}
}

// constantRate runs one replica at rate and judges the measured span.
func constantRate(p sim.EngineParams, m Mix, rate float64, seed uint64) (good, n float64) {
	j := &judge{from: sweepWarm.Seconds()}
	e := newEngine(p, seed, j)
	rng := rand.New(rand.NewPCG(seed, 13))
	end := (sweepWarm + sweepMeasure).Seconds()
	for t := rng.ExpFloat64() / rate; t < end; t += rng.ExpFloat64() / rate {
		e.advance(t)
		e.push(newRequest(m, t, rng))
	}
	for t := end; !e.idle() && t < end+7200; t += 10 {
		e.advance(t)
	}
	return j.good, j.n
}
