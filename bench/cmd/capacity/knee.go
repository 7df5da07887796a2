package main

import (
	"math"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// kneeSynth is the synthetic server of bench.Synth driven through its
// knee, for the cost of bounded answers: from start on, every counter and
// histogram grows at the synth's rates times a load factor that swings
// sinusoidally between kneeLow and kneeHigh of the synth's own rate every
// kneePeriod, and above kneeAt a share of the first tokens that met the
// TTFT objective is moved past its threshold, growing with the excess, so
// that attainment falls below the goal there as a server's does past its
// knee, and the waiting queue grows. Before start it is bench.Synth
// unchanged (what the 30-day fill ingests). Snapshots must be asked for at
// times that never go back once past start.
type kneeSynth struct {
	base        *bench.Synth
	start       time.Time
	at          time.Time // the last time the cumulative values were advanced to
	cum         *scrape.ModelSample
	slope       *scrape.ModelSample // the synth's increase per second
	model       string
	ttftBad     int // index of the first TTFT bucket above the threshold
	ttftOver    float64
	lastWaiting float64
}

// The load swing: 0.55 to 1.15 of the synth's rate every six hours (four
// crossings of the knee a day), the knee at 1.0, and past it 30% more bad
// first tokens per unit of excess load on top of the synth's own.
const (
	kneeLow, kneeHigh = 0.55, 1.15
	kneePeriod        = 6 * time.Hour
	kneeAt            = 1.0
	kneeBadSlope      = 0.3
)

// newKneeSynth measures the synth's rates over an hour from start and
// returns the generator; ttftThreshold is the SLO's TTFT objective.
func newKneeSynth(s *bench.Synth, start time.Time, ttftThreshold float64) *kneeSynth {
	a, b := s.Snapshot(start), s.Snapshot(start.Add(time.Hour))
	k := &kneeSynth{base: s, start: start, at: start}
	for m, ms := range a.Models {
		k.model, k.cum = m, ms
		mb := b.Models[m]
		k.slope = &scrape.ModelSample{Histograms: map[scrape.Family]slo.Histogram{}, Counters: map[scrape.Family]float64{}}
		for f, h := range ms.Histograms {
			hb := mb.Histograms[f]
			d := slo.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts)), Sum: (hb.Sum - h.Sum) / 3600}
			for i := range h.Counts {
				d.Counts[i] = (hb.Counts[i] - h.Counts[i]) / 3600
			}
			k.slope.Histograms[f] = d
		}
		for f, v := range ms.Counters {
			k.slope.Counters[f] = (mb.Counters[f] - v) / 3600
		}
	}
	edges := k.cum.Histograms[scrape.TTFT].Edges
	k.ttftBad = len(edges) - 1
	for i, e := range edges {
		if e > ttftThreshold {
			k.ttftBad, k.ttftOver = i, e
			break
		}
	}
	return k
}

// factor is the load at t relative to the synth's rate.
func factor(t, start time.Time) float64 {
	phase := 2 * math.Pi * t.Sub(start).Seconds() / kneePeriod.Seconds()
	return (kneeLow+kneeHigh)/2 + (kneeHigh-kneeLow)/2*math.Sin(phase)
}

// Snapshot returns the server's state at t.
func (k *kneeSynth) Snapshot(t time.Time) *scrape.Snapshot {
	if !t.After(k.start) {
		return k.base.Snapshot(t)
	}
	if t.After(k.at) {
		k.advance(t)
	}
	ms := &scrape.ModelSample{
		Histograms: make(map[scrape.Family]slo.Histogram, len(k.cum.Histograms)),
		Counters:   make(map[scrape.Family]float64, len(k.cum.Counters)),
		Gauges:     map[scrape.Family]float64{},
		Created:    k.cum.Created,
	}
	for f, h := range k.cum.Histograms {
		out := slo.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts)), Sum: h.Sum}
		for i, c := range h.Counts {
			out.Counts[i] = math.Floor(c)
		}
		ms.Histograms[f] = out
	}
	for f, v := range k.cum.Counters {
		ms.Counters[f] = math.Floor(v)
	}
	r := factor(t, k.start)
	ms.Gauges[scrape.Running] = math.Round(20 * min(r, kneeAt))
	ms.Gauges[scrape.Waiting] = k.lastWaiting
	ms.Gauges[scrape.KVCacheUsage] = 0.5 * min(r, kneeAt)
	return &scrape.Snapshot{Time: t, Models: map[string]*scrape.ModelSample{k.model: ms}}
}

// advance grows the cumulative values from k.at to t in steps of at most
// a scrape interval, each at the load of its middle.
func (k *kneeSynth) advance(t time.Time) {
	for k.at.Before(t) {
		next := min(t.Sub(k.at), bench.Interval)
		mid := k.at.Add(next / 2)
		r := factor(mid, k.start)
		dt := next.Seconds() * r
		for f, h := range k.cum.Histograms {
			d := k.slope.Histograms[f]
			bad := 0.0
			if f == scrape.TTFT && r > kneeAt {
				bad = min(1, kneeBadSlope*(r-kneeAt))
			}
			for i := range h.Counts {
				inc := d.Counts[i] * dt
				if i < k.ttftBad {
					inc *= 1 - bad
				}
				h.Counts[i] += inc
			}
			h.Sum += d.Sum*dt + bad*d.Counts[max(0, k.ttftBad-1)]*dt*k.ttftOver
			k.cum.Histograms[f] = h
		}
		for f := range k.cum.Counters {
			k.cum.Counters[f] += k.slope.Counters[f] * dt
		}
		k.at = k.at.Add(next)
	}
	// The queue grows with the excess load: 60 requests per unit of it.
	k.lastWaiting = math.Round(60 * max(0, factor(t, k.start)-0.95))
}
