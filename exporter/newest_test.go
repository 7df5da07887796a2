package exporter

import (
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestNewestSeriesHoldTruth serves the simulator's newest preset (overload
// against an admission limit on engines that preempt and defer requests,
// with clients that leave the queue) through scrape, the pipeline and the
// collector, and holds every window's series to the truth, no tolerance:
// the truth's share of the window's finished requests preempted at least
// once lies within vllm_slo_preempted_{lower,upper}_ratio (exact while no
// request was preempted more than five times; the run has both), and
// vllm_slo_waiting_requests_{mean,max}{reason} are the time-average and the
// largest of the truth's waiting requests by reason at the scrapes.
func TestNewestSeriesHoldTruth(t *testing.T) {
	cfg, err := sim.Preset("newest", 3, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiscardTokenTimes = true
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	windows := []time.Duration{time.Minute, 5 * time.Minute}
	p := pipeline.New(pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://x/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs:      []slo.SLO{{Name: "interactive", Goal: 0.99, Period: time.Hour, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}}},
		Windows:   windows,
		Quantiles: []float64{0.5},
		Retention: history.NewRetention(5*time.Minute, time.Hour),
	})
	samples := &reasonSamples{}
	checked, exact, preemptedSeen, deferredSeen := 0, 0, 0.0, 0.0
	for at := start.Add(15 * time.Second); !at.After(start.Add(18 * time.Minute)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		truth := s.Truth()
		samples.add(at, simtruth.InFlightAt(truth, at))
		if at.Sub(start)%time.Minute != 0 || at.Sub(start) < 6*time.Minute {
			continue
		}
		rep := p.Evaluate(at)
		mfs := gather(t, rep)
		for _, w := range rep.Targets[0].Models[0].Windows {
			win := FormatWindow(w.Window.Nominal)
			where := fmt.Sprintf("at %v window %s", at.Sub(start), win)
			finished := simtruth.FinishedIn(truth, w.Window.Start, w.Window.End)
			preempted := 0
			for _, r := range finished {
				if len(r.Preemptions) > 0 {
					preempted++
				}
			}
			n := float64(len(finished))
			share := float64(preempted) / n
			lo, hi := series(t, mfs, "vllm_slo_preempted_lower_ratio", win, ""), series(t, mfs, "vllm_slo_preempted_upper_ratio", win, "")
			if !w.HasPreempted || w.PreemptedOf != n || share < lo || share > hi {
				t.Errorf("%s: preempted share in [%v, %v] of %v finished, truth %v of %v", where, lo, hi, w.PreemptedOf, share, n)
			}
			if lo == hi {
				exact++
			}
			preemptedSeen += float64(preempted)
			for _, reason := range []string{"capacity", "deferred"} {
				mean, maxV := samples.over(w.Window.Start, w.Window.End, reason)
				gotMean, gotMax := series(t, mfs, "vllm_slo_waiting_requests_mean", win, reason), series(t, mfs, "vllm_slo_waiting_requests_max", win, reason)
				if gotMean != mean || gotMax != maxV {
					t.Errorf("%s: waiting %s mean %v max %v, truth at the scrapes %v and %v", where, reason, gotMean, gotMax, mean, maxV)
				}
				if reason == "deferred" {
					deferredSeen += maxV
				}
			}
			checked++
		}
	}
	if checked == 0 || preemptedSeen == 0 || deferredSeen == 0 || exact == 0 || exact == checked {
		t.Fatalf("%d windows checked, %v preempted, %v deferred, %d exact: the run shows too little (it needs exact and bracketed shares)", checked, preemptedSeen, deferredSeen, exact)
	}
	t.Logf("%d windows checked, %d with an exact preempted share; %v preempted finished requests summed over them", checked, exact, preemptedSeen)
}

// series is the value of the model's series name for window win (and
// reason, when not empty); it fails the test when absent.
func series(t *testing.T, mfs map[string]*dto.MetricFamily, name, win, reason string) float64 {
	t.Helper()
	for _, m := range mfs[name].GetMetric() {
		if label(m, "window") == win && label(m, "reason") == reason {
			return value(m)
		}
	}
	t.Fatalf("%s{window=%q,reason=%q} missing", name, win, reason)
	return 0
}

// reasonSamples are the truth's waiting requests by reason at each scrape,
// with their running integrals as the history keeps them (each sample held
// until the next scrape), so that a window's mean is computed by the same
// operations.
type reasonSamples struct {
	at                 []time.Time
	capacity, deferred []float64
	intC, intD, known  []float64
}

func (rs *reasonSamples) add(at time.Time, f simtruth.InFlight) {
	c, d := float64(f.Waiting-f.Deferred), float64(f.Deferred)
	ic, id, k := 0.0, 0.0, 0.0
	if n := len(rs.at); n > 0 {
		dt := float64(at.Sub(rs.at[n-1]).Nanoseconds()) / 1e9
		ic, id, k = rs.intC[n-1]+rs.capacity[n-1]*dt, rs.intD[n-1]+rs.deferred[n-1]*dt, rs.known[n-1]+dt
	}
	rs.at, rs.capacity, rs.deferred = append(rs.at, at), append(rs.capacity, c), append(rs.deferred, d)
	rs.intC, rs.intD, rs.known = append(rs.intC, ic), append(rs.intD, id), append(rs.known, k)
}

// over is the mean and the maximum of reason's samples over the window
// between the scrapes at from and to, both ends included in the maximum.
func (rs *reasonSamples) over(from, to time.Time, reason string) (mean, maxV float64) {
	vals, ints := rs.capacity, rs.intC
	if reason == "deferred" {
		vals, ints = rs.deferred, rs.intD
	}
	i0, i1 := -1, -1
	for i, at := range rs.at {
		if at.Equal(from) {
			i0 = i
		}
		if at.Equal(to) {
			i1 = i
		}
	}
	if i0 < 0 || i1 < 0 {
		return -1, -1
	}
	for i := i0; i <= i1; i++ {
		maxV = max(maxV, vals[i])
	}
	return min((ints[i1]-ints[i0])/(rs.known[i1]-rs.known[i0]), maxV), maxV
}
