package reliability

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// hostilePlan sizes the mixed-fleet soak.
type hostilePlan struct {
	normal   int           // well-behaved targets
	duration time.Duration // simulated
	period   time.Duration // SLO period: the history tiers are full after it
	day      time.Duration // the heap is measured at the end of every "day"
	buckets  int           // buckets of the huge-histogram target
	models   int           // model_name values of the many-models target
	limit    int64         // history memory limit per target
}

func hostilePlanFor() hostilePlan {
	if *soakLong {
		return hostilePlan{normal: 20, duration: 7 * 24 * time.Hour, period: 24 * time.Hour, day: 24 * time.Hour, buckets: 50_000, models: 10_000, limit: 4 << 20}
	}
	return hostilePlan{normal: 4, duration: 24 * time.Hour, period: 4 * time.Hour, day: 4 * time.Hour, buckets: 2_000, models: 300, limit: 512 << 10}
}

// hostileSource is a target that produces one snapshot per scrape.
type hostileSource interface {
	snapshot(now time.Time) *scrape.Snapshot
}

// resetter restarts before every scrape: counts from zero, a new _created.
type resetter struct{ s *synthTarget }

func (r resetter) snapshot(now time.Time) *scrape.Snapshot {
	r.s.reset()
	r.s.created = float64(now.Unix())
	r.s.advance(30)
	return r.s.snapshot(now)
}

// relayouter changes its TTFT bucket layout at every scrape: every other
// scrape one interior edge is missing (its counts merged upwards).
type relayouter struct {
	s *synthTarget
	n int
}

func (r *relayouter) snapshot(now time.Time) *scrape.Snapshot {
	r.s.advance(30)
	snap := r.s.snapshot(now)
	r.n++
	if r.n%2 == 0 {
		m := snap.Models[victimModel]
		h := m.Histograms[scrape.TTFT]
		const drop = 3
		h.Edges = append(h.Edges[:drop:drop], h.Edges[drop+1:]...)
		h.Counts = append(h.Counts[:drop:drop], h.Counts[drop+1:]...)
		m.Histograms[scrape.TTFT] = h
	}
	return snap
}

// hugeHistogram serves a TTFT histogram of many buckets.
type hugeHistogram struct {
	rng    *rand.Rand
	edges  []float64
	counts []float64 // per bucket, not cumulative
	sum    float64
	reqs   float64
}

func newHugeHistogram(buckets int) *hugeHistogram {
	h := &hugeHistogram{rng: rand.New(rand.NewPCG(5, 5)), counts: make([]float64, buckets+1)}
	for i := range buckets {
		h.edges = append(h.edges, float64(i+1)*1e-4)
	}
	h.edges = append(h.edges, math.Inf(1))
	return h
}

func (h *hugeHistogram) snapshot(now time.Time) *scrape.Snapshot {
	for range 30 {
		v := h.rng.Float64() * float64(len(h.edges)) * 1e-4
		i := min(int(v/1e-4), len(h.counts)-1)
		h.counts[i]++
		h.sum += v
		h.reqs++
	}
	cum := make([]float64, len(h.counts))
	total := 0.0
	for i, c := range h.counts {
		total += c
		cum[i] = total
	}
	return &scrape.Snapshot{Time: now, Models: map[string]*scrape.ModelSample{victimModel: {
		Histograms: map[scrape.Family]slo.Histogram{scrape.TTFT: {Edges: append([]float64(nil), h.edges...), Counts: cum, Sum: h.sum}},
		Counters:   map[scrape.Family]float64{scrape.RequestSuccess: h.reqs},
	}}, Found: map[scrape.Family]string{scrape.TTFT: "vllm:time_to_first_token_seconds"}}
}

// manyModels serves thousands of model_name values (idle ones: their
// samples never change, so the same sample is served at every scrape).
type manyModels struct {
	samples map[string]*scrape.ModelSample
}

func newManyModels(n int) *manyModels {
	m := &manyModels{samples: map[string]*scrape.ModelSample{}}
	edges := []float64{0.1, 0.5, 1, math.Inf(1)}
	for i := range n {
		m.samples[fmt.Sprintf("model-%05d", i)] = &scrape.ModelSample{
			Histograms: map[scrape.Family]slo.Histogram{scrape.TTFT: {Edges: edges, Counts: []float64{1, 2, 3, 3}, Sum: 1.5}},
			Counters:   map[scrape.Family]float64{scrape.RequestSuccess: 3},
		}
	}
	return m
}

func (m *manyModels) snapshot(now time.Time) *scrape.Snapshot {
	models := make(map[string]*scrape.ModelSample, len(m.samples))
	for k, v := range m.samples {
		models[k] = v
	}
	return &scrape.Snapshot{Time: now, Models: models, Found: map[scrape.Family]string{scrape.TTFT: "vllm:time_to_first_token_seconds"}}
}

// TestSoakHostileFleet runs a mixed fleet through the pipeline on a virtual
// clock for simulated days: well-behaved targets beside one that restarts
// at every scrape, one whose bucket layout changes at every scrape, one with
// a huge histogram and one with thousands of models; every 6 hours a reload
// adds or removes 10 targets, and once a day the daemon "restarts" (state
// marshalled, a new pipeline restored from it). Every evaluation checks each
// target's history against its memory limit (never above), and the heap
// measured at the end of each day after the first stays within 25% (plus
// 4 MiB of allocator noise) of the first day's; no goroutine is left. The
// CI form is short; -soak.long runs 7 days with 50,000 buckets and 10,000
// models.
func TestSoakHostileFleet(t *testing.T) {
	plan := hostilePlanFor()
	const interval = time.Minute
	goroutines := runtime.NumGoroutine()
	start := rigStart
	spec := testSpec()
	spec.Windows = []time.Duration{5 * time.Minute, time.Hour}
	spec.SLOs[0].Period = plan.period
	spec.Retention = history.NewRetention(time.Hour, plan.period)
	spec.MaxModels = 50
	spec.HistoryLimit = plan.limit
	spec.HistoryTotalLimit = 256 << 20

	sources := map[string]hostileSource{}
	var names []string
	add := func(name string, src hostileSource) {
		sources[name] = src
		names = append(names, name)
		ts := targetSpec(t, name, "http://127.0.0.1:1/"+name)
		ts.Interval = interval
		spec.Targets = append(spec.Targets, ts)
	}
	for i := range plan.normal {
		s := newSynth(fmt.Sprintf("n%03d", i), uint64(i+1), start, false)
		add(s.name, normalSource{s})
	}
	add("resets", resetter{newSynth("resets", 101, start, false)})
	add("layouts", &relayouter{s: newSynth("layouts", 102, start, false)})
	add("buckets", newHugeHistogram(plan.buckets))
	add("models", newManyModels(plan.models))
	withExtra := spec
	withExtra.Targets = append([]pipeline.TargetSpec(nil), spec.Targets...)
	for i := range 10 {
		ts := targetSpec(t, fmt.Sprintf("extra%02d", i), fmt.Sprintf("http://127.0.0.1:1/extra%02d", i))
		ts.Interval = interval
		withExtra.Targets = append(withExtra.Targets, ts)
	}

	pipe := pipeline.New(spec)
	current := spec
	var heapFirstDay uint64
	var heapDays []string
	reloads, restarts, evaluations := 0, 0, 0
	for now := start.Add(interval); !now.After(start.Add(plan.duration)); now = now.Add(interval) {
		at := now.Sub(start)
		for _, name := range names {
			if err := pipe.Ingest(name, sources[name].snapshot(now), 10*time.Millisecond); err != nil {
				t.Fatalf("%s at %v: %v", name, at, err)
			}
		}
		if at%(6*time.Hour) == 0 {
			current = map[bool]pipeline.Spec{true: withExtra, false: spec}[reloads%2 == 0]
			if err := pipe.Reconfigure(current); err != nil {
				t.Fatalf("reload at %v: %v", at, err)
			}
			reloads++
		}
		if at%plan.day == plan.day/2 {
			state, err := pipe.MarshalState()
			if err != nil {
				t.Fatalf("save at %v: %v", at, err)
			}
			pipe = pipeline.New(current)
			if n, err := pipe.UnmarshalState(state); err != nil || n == 0 {
				t.Fatalf("restore at %v: %d targets, %v", at, n, err)
			}
			restarts++
		}
		if at%time.Hour == 0 {
			checkHistoryLimits(t, pipe.Evaluate(now), at)
			evaluations++
		}
		if at%plan.day == 0 {
			heap := heapNow()
			if heapFirstDay == 0 {
				heapFirstDay = heap
			}
			heapDays = append(heapDays, fmt.Sprintf("%v: %.1f MiB", at, float64(heap)/(1<<20)))
			if limit := heapFirstDay + heapFirstDay/4 + 4<<20; heap > limit {
				t.Errorf("heap %d MiB at %v, %d MiB after the first day: not flat", heap>>20, at, heapFirstDay>>20)
			}
		}
	}
	t.Logf("hostile soak: %d normal targets + resets/layouts/%d buckets/%d models, %v every %v: %d reloads, %d restarts, %d evaluations; heap by day: %v",
		plan.normal, plan.buckets, plan.models, plan.duration, interval, reloads, restarts, evaluations, heapDays)
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("goroutines grew from %d to %d", goroutines, g)
	}
	for _, tr := range pipe.Evaluate(start.Add(plan.duration)).Targets {
		if _, hostile := map[string]bool{"resets": true, "layouts": true, "buckets": true, "models": true}[tr.Name]; hostile {
			if tr.Name == "buckets" && tr.History.DroppedPoints == 0 {
				t.Errorf("the huge histogram never reached its history limit: the soak does not exercise it")
			}
			t.Logf("%s: history %.2f MiB of %.2f MiB, %d points dropped for the limit, %v models dropped",
				tr.Name, float64(tr.History.Bytes)/(1<<20), float64(tr.History.Limit)/(1<<20), tr.History.DroppedPoints, tr.ModelsDropped)
		}
	}
}

// normalSource is a well-behaved synthetic target.
type normalSource struct{ s *synthTarget }

func (n normalSource) snapshot(now time.Time) *scrape.Snapshot {
	n.s.advance(30)
	return n.s.snapshot(now)
}

// checkHistoryLimits fails the test when a target's history holds more than
// its limit.
func checkHistoryLimits(t *testing.T, rep *pipeline.Report, at time.Duration) {
	t.Helper()
	for _, tr := range rep.Targets {
		u := tr.History
		if u.Limit <= 0 {
			t.Fatalf("%s at %v: no history limit", tr.Name, at)
		}
		if u.Bytes > u.Limit {
			t.Errorf("%s at %v: history holds %d bytes, over its limit of %d", tr.Name, at, u.Bytes, u.Limit)
		}
	}
}
