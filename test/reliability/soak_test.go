package reliability

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// soakLong selects the long soak: 200 targets, 7 simulated days.
var soakLong = flag.Bool("soak.long", false, "run the long soak (200 targets × 7 simulated days; minutes)")

// soakPlan sizes a soak run.
type soakPlan struct {
	targets  int
	duration time.Duration
	interval time.Duration
	// period is the SLO period: the history tiers are full once it has passed.
	period time.Duration
	// measureAt is when the first heap measurement is taken (tiers full).
	measureAt time.Duration
	// perScrape is the mean number of requests a target finishes per scrape.
	perScrape float64
	// evalEvery is how often the whole pipeline is evaluated.
	evalEvery time.Duration
}

func soakPlanFor() soakPlan {
	if *soakLong {
		return soakPlan{targets: 200, duration: 7 * 24 * time.Hour, interval: time.Minute, period: 24 * time.Hour,
			measureAt: 25 * time.Hour, perScrape: 30, evalEvery: time.Hour}
	}
	return soakPlan{targets: 20, duration: 24 * time.Hour, interval: time.Minute, period: 4 * time.Hour,
		measureAt: 6 * time.Hour, perScrape: 30, evalEvery: time.Hour}
}

// synthTarget generates a vLLM's cumulative histograms directly (no HTTP,
// no event simulation): every request starts and finishes between two
// scrapes, so the in-flight gauges are 0 at every scrape and the truth of a
// window is the difference of cumulative truths. It restarts (counts from
// zero, a new _created), overloads (slow TTFT for an hour) and fails scrapes.
type synthTarget struct {
	name                     string
	rng                      *rand.Rand
	ttft, tpot, e2e          slo.Histogram // cumulative (non-cumulative counts per bucket until snapshot)
	reqs, genTokens          float64
	created                  float64
	overloaded               bool
	truthTotal, truthTTFT    float64 // cumulative over the whole run, never reset
	truthTPOT, truthAll      float64
	checked                  bool
	truthAt                  map[int64][4]float64 // scrape time → cumulative truths (checked targets only)
	firstIngest, lastIngest  int64
	lastFailed               bool
	firstTruth, lastTruthTTF float64
}

func newSynth(name string, seed uint64, start time.Time, checked bool) *synthTarget {
	s := &synthTarget{name: name, rng: rand.New(rand.NewPCG(seed, 99)), checked: checked, created: float64(start.Unix())}
	s.reset()
	if checked {
		s.truthAt = map[int64][4]float64{}
	}
	return s
}

func emptyHist(edges []float64) slo.Histogram {
	e := append(edges, math.Inf(1))
	return slo.Histogram{Edges: e, Counts: make([]float64, len(e))}
}

// reset is a vLLM restart: every count from zero.
func (s *synthTarget) reset() {
	s.ttft = emptyHist(sim.DefaultTTFTBuckets())
	s.tpot = emptyHist(sim.DefaultITLBuckets())
	s.e2e = emptyHist(sim.DefaultRequestLatencyBuckets())
	s.reqs, s.genTokens = 0, 0
}

// observe adds v to the cumulative histogram h (every bucket with le >= v).
func observe(h *slo.Histogram, v float64) {
	i := sort.SearchFloat64s(h.Edges, v) // first edge >= v
	for ; i < len(h.Counts); i++ {
		h.Counts[i]++
	}
	h.Sum += v
}

// advance generates the requests of one interval.
func (s *synthTarget) advance(perScrape float64) {
	n := int(perScrape*0.5 + s.rng.Float64()*perScrape)
	ttftMedian := 0.15
	if s.overloaded {
		ttftMedian = 0.9
	}
	for range n {
		ttft := ttftMedian * math.Exp(0.6*s.rng.NormFloat64())
		tpot := 0.03 * math.Exp(0.3*s.rng.NormFloat64())
		gen := 1 + s.rng.IntN(400)
		observe(&s.ttft, ttft)
		observe(&s.tpot, tpot)
		observe(&s.e2e, ttft+tpot*float64(gen-1))
		s.reqs++
		s.genTokens += float64(gen)
		s.truthTotal++
		okT, okP := ttft <= 0.5, tpot <= 0.05
		if okT {
			s.truthTTFT++
		}
		if okP {
			s.truthTPOT++
		}
		if okT && okP {
			s.truthAll++
		}
	}
}

func (s *synthTarget) snapshot(now time.Time) *scrape.Snapshot {
	clone := func(h slo.Histogram) slo.Histogram {
		return slo.Histogram{Edges: append([]float64(nil), h.Edges...), Counts: append([]float64(nil), h.Counts...), Sum: h.Sum}
	}
	return &scrape.Snapshot{
		Time: now,
		Models: map[string]*scrape.ModelSample{victimModel: {
			Histograms: map[scrape.Family]slo.Histogram{scrape.TTFT: clone(s.ttft), scrape.TPOT: clone(s.tpot), scrape.E2E: clone(s.e2e)},
			Counters:   map[scrape.Family]float64{scrape.RequestSuccess: s.reqs, scrape.GenerationTokens: s.genTokens},
			Gauges:     map[scrape.Family]float64{scrape.Running: 0, scrape.Waiting: 0},
			Created:    s.created,
		}},
		Found: map[scrape.Family]string{scrape.TTFT: "vllm:time_to_first_token_seconds"},
	}
}

// TestSoak runs the pipeline over many synthetic targets for simulated days
// on a virtual clock, with restarts, overloads and failed scrapes. It checks
// that the heap is flat once the history tiers are full, that no goroutine
// is left behind, and, for a few targets, that the numbers equal the truth:
// the window request counts and the exact TTFT attainment, the joint (`all`)
// attainment bounds around the true value, and the good-request counters of
// the whole run. The CI form is short; -soak.long runs 200 targets × 7 days.
func TestSoak(t *testing.T) {
	plan := soakPlanFor()
	goroutines := runtime.NumGoroutine()
	start := rigStart
	spec := testSpec()
	spec.Windows = []time.Duration{5 * time.Minute, time.Hour}
	spec.SLOs[0].Period = plan.period
	spec.Retention = history.NewRetention(time.Hour, plan.period)
	targets := make([]*synthTarget, plan.targets)
	for i := range targets {
		name := fmt.Sprintf("t%03d", i)
		targets[i] = newSynth(name, uint64(i+1), start, i < 3)
		ts := targetSpec(t, name, "http://127.0.0.1:1/"+name)
		ts.Interval = plan.interval
		spec.Targets = append(spec.Targets, ts)
	}
	pipe := pipeline.New(spec)
	rng := rand.New(rand.NewPCG(1, 2))
	var heapMid, heapEnd uint64
	var heapDays []string
	restarts, faults, overloads := 0, 0, 0
	checks := 0
	for now := start.Add(plan.interval); !now.After(start.Add(plan.duration)); now = now.Add(plan.interval) {
		hourly := now.Sub(start)%time.Hour == 0
		for _, s := range targets {
			if hourly {
				s.overloaded = rng.Float64() < 0.05
				if s.overloaded {
					overloads++
				}
			}
			if !s.lastFailed && rng.Float64() < 1.0/2000 {
				// A restart between two scrapes: the requests of the interval
				// all come after it, and the previous scrape saw everything
				// before it (nothing is lost by construction; a restart after
				// a failed scrape would lose that interval's requests for real).
				s.reset()
				s.created = float64(now.Add(-plan.interval / 2).Unix())
				restarts++
			}
			s.advance(plan.perScrape)
			if rng.Float64() < 0.01 {
				pipe.RecordFailure(s.name, scrape.ReasonTimeout, fmt.Errorf("synthetic timeout"), now, time.Second)
				faults++
				s.lastFailed = true
				continue
			}
			s.lastFailed = false
			if err := pipe.Ingest(s.name, s.snapshot(now), 10*time.Millisecond); err != nil {
				t.Fatalf("%s at %v: %v", s.name, now, err)
			}
			if s.firstIngest == 0 {
				s.firstIngest, s.firstTruth = now.UnixNano(), s.truthTTFT
			}
			s.lastIngest, s.lastTruthTTF = now.UnixNano(), s.truthTTFT
			if s.checked {
				s.truthAt[now.UnixNano()] = [4]float64{s.truthTotal, s.truthTTFT, s.truthTPOT, s.truthAll}
			}
		}
		if now.Sub(start)%plan.evalEvery == 0 {
			rep := pipe.Evaluate(now)
			checks += checkSoakTruth(t, rep, targets)
		}
		if now.Sub(start) == plan.measureAt {
			heapMid = heapNow()
		}
		if at := now.Sub(start); at > plan.measureAt && at%(24*time.Hour) == 0 {
			heapDays = append(heapDays, fmt.Sprintf("%v: %.1f MiB", at, float64(heapNow())/(1<<20)))
		}
	}
	heapEnd = heapNow()
	if checks == 0 {
		t.Fatal("no truth check ran")
	}
	t.Logf("soak: %d targets × %v every %v: %d restarts, %d failed scrapes, %d overloaded hours, %d truth checks; heap %.1f MiB at %v, %.1f MiB at %v",
		plan.targets, plan.duration, plan.interval, restarts, faults, overloads, checks,
		float64(heapMid)/(1<<20), plan.measureAt, float64(heapEnd)/(1<<20), plan.duration)
	t.Logf("heap by day: %v", heapDays)
	if restarts == 0 || faults == 0 || overloads == 0 {
		t.Fatalf("the soak did not exercise restarts (%d), faults (%d) and overloads (%d)", restarts, faults, overloads)
	}
	// Flat: at most 25% (plus 4 MiB of allocator noise) above the heap once the tiers were full.
	if limit := heapMid + heapMid/4 + 4<<20; heapEnd > limit {
		t.Errorf("heap grew from %d to %d bytes after the history tiers were full", heapMid, heapEnd)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("goroutines grew from %d to %d", goroutines, g)
	}
	// The good-request counters of the whole run: TTFT's threshold (0.5 s) is a
	// bucket edge, so every interval's count is exact and so is their sum.
	rep := pipe.Evaluate(start.Add(plan.duration))
	for i, tr := range rep.Targets {
		s := targets[i]
		want := s.lastTruthTTF - s.firstTruth
		got := -1.0
		for _, m := range tr.Models {
			for _, g := range m.GoodRequests {
				if g.SLO == rigSLO && g.Objective == "ttft" {
					got = g.Value
				}
			}
		}
		if got != want {
			t.Errorf("%s: good_requests_total{ttft} = %v, want %v (truth since the first scrape)", s.name, got, want)
		}
	}
}

func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// checkSoakTruth compares the checked targets' windows with the truth and
// returns how many windows it checked.
func checkSoakTruth(t *testing.T, rep *pipeline.Report, targets []*synthTarget) int {
	t.Helper()
	n := 0
	for i, tr := range rep.Targets {
		s := targets[i]
		if !s.checked || len(tr.Models) == 0 {
			continue
		}
		for _, w := range tr.Models[0].Windows {
			a, okA := s.truthAt[w.Window.Start.UnixNano()]
			b, okB := s.truthAt[w.Window.End.UnixNano()]
			if !okA || !okB {
				t.Fatalf("%s: window %v..%v does not start and end at ingested scrapes", s.name, w.Window.Start, w.Window.End)
			}
			total := b[0] - a[0]
			if got := w.Requests[slo.E2E]; got != total {
				t.Fatalf("%s at %v, window %v: e2e requests %v, truth %v", s.name, rep.Time, w.Window.Nominal, got, total)
			}
			if total == 0 || len(w.SLOs) == 0 {
				continue
			}
			obj := w.SLOs[0].Objectives
			if got, want := obj["ttft"], (b[1]-a[1])/total; !got.IsExact() || math.Abs(got.Estimate-want) > 1e-12 {
				t.Fatalf("%s at %v, window %v: ttft attainment %+v, truth %v (exact at a bucket edge)", s.name, rep.Time, w.Window.Nominal, got, want)
			}
			all, want := obj[slo.AllKey], (b[3]-a[3])/total
			if want < all.Lower-1e-12 || want > all.Upper+1e-12 {
				t.Fatalf("%s at %v, window %v: joint attainment %+v does not hold the truth %v", s.name, rep.Time, w.Window.Nominal, all, want)
			}
			n++
		}
		for _, b := range tr.Models[0].Budgets {
			if !b.Known || !(b.Remaining.Lower <= b.Remaining.Estimate && b.Remaining.Estimate <= b.Remaining.Upper) {
				t.Fatalf("%s at %v: error budget %+v", s.name, rep.Time, b)
			}
		}
	}
	return n
}
