package fleetday

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// TestAutoscalerStabilizationWindow: a metric that asks for 8 replicas of
// 4 scales up once the 30 s up-window holds only such asks (one tick's
// spike does nothing), by at most max(100%, 4 pods) per minute; when it
// falls to ask for 2, nothing is removed until the 180 s down-window holds
// no larger ask, then one pod per 120 s.
func TestAutoscalerStabilizationWindow(t *testing.T) {
	a := autoscaler{cfg: DefaultHPA()}
	n, at := 4, 0.0
	step := func(value float64) {
		at += 15
		n = a.decide(at, n, value, 1, true)
	}
	step(4)
	step(20) // a one-tick spike: the window's lowest ask is 4
	if n != 4 {
		t.Fatalf("a one-tick spike scaled to %d", n)
	}
	step(4)
	step(8) // the window (the last 30 s, its start excluded) still holds the ask for 4
	if n != 4 {
		t.Fatalf("scaled to %d before the up-window held only asks for 8", n)
	}
	step(8)
	if n != 8 {
		t.Fatalf("%d replicas, want 8 once the up-window held only asks for 8", n)
	}
	step(40) // the up-policies allow max(+100%, +4) per minute from the minute's start (4)
	step(40)
	step(40)
	if n != 8 {
		t.Fatalf("%d replicas within a minute of the last scale-up, want 8 (the minute began at 4)", n)
	}
	for n == 8 {
		step(40)
	}
	if n != 16 {
		t.Fatalf("%d replicas a minute on, want 16 (+100%%, at the maximum)", n)
	}
	downFrom := at
	for range 100 {
		step(2)
		if n < 16 {
			break
		}
	}
	if waited := at - downFrom; waited < 180 {
		t.Fatalf("scaled down %v s after the last ask for 16, inside the 180 s window", waited)
	}
	if n != 15 {
		t.Fatalf("scaled down to %d, want one pod at a time (15)", n)
	}
	first := at
	for n == 15 {
		step(2)
	}
	if gap := at - first; gap < 120 {
		t.Fatalf("second pod removed %v s after the first, want at least 120", gap)
	}
}

// TestAutoscalerTolerance: a metric within 10% of the target times the
// replicas changes nothing; a missing one changes nothing either.
func TestAutoscalerTolerance(t *testing.T) {
	a := autoscaler{cfg: DefaultHPA()}
	if got := a.raw(10, 10.9, 1, true); got != 10 {
		t.Fatalf("metric 10.9 for 10 replicas: %d, want 10 (within tolerance)", got)
	}
	if got := a.raw(10, 11.2, 1, true); got != 12 {
		t.Fatalf("metric 11.2 for 10 replicas: %d, want 12", got)
	}
	if got := a.raw(10, 14, 2, true); got != 7 {
		t.Fatalf("metric 14 at target 2: %d, want 7", got)
	}
	if got := a.decide(15, 5, 100, 1, false); got != 5 || len(a.recs) != 0 {
		t.Fatalf("missing metric: %d replicas, %d recommendations kept", got, len(a.recs))
	}
}

// testFleet is a fleet of n ready replicas at now 0 with signal sig.
func testFleet(n int, sig Signal) *fleet {
	cfg := DefaultConfig()
	f := &fleet{cfg: cfg, day: Day{Seed: 1, Length: time.Hour}, sig: sig, hpa: autoscaler{cfg: cfg.HPA}, stats: newStats(time.Hour)}
	for range n {
		p := f.newPod(0)
		p.state = ready
	}
	f.spec = n
	return f
}

// TestRouterSendsToTheLeastLoaded: with 3, 1 and 2 outstanding requests the
// next goes to the second replica; among equals, round-robin; a replica not
// ready gets nothing.
func TestRouterSendsToTheLeastLoaded(t *testing.T) {
	f := testFleet(3, Fixed{})
	for i, k := range []int{3, 1, 2} {
		for range k {
			f.pods[i].eng.push(&request{arrival: 0, prompt: 10, output: 10})
		}
	}
	f.route(&request{prompt: 10, output: 10})
	if got := []int{f.pods[0].eng.outstanding(), f.pods[1].eng.outstanding(), f.pods[2].eng.outstanding()}; got[1] != 2 || got[0] != 3 || got[2] != 2 {
		t.Fatalf("outstanding after routing %v, want [3 2 2]", got)
	}
	f.pods[0].state = loading
	for range 4 {
		f.route(&request{prompt: 10, output: 10})
	}
	if got := []int{f.pods[0].eng.outstanding(), f.pods[1].eng.outstanding(), f.pods[2].eng.outstanding()}; got[0] != 3 || got[1] != 4 || got[2] != 4 {
		t.Fatalf("outstanding after 4 more %v, want [3 4 4]: alternating between the equal two, none to the loading one", got)
	}
}

// TestScaleDownRemovesLoadingThenYoungest: a scale-down takes the loading
// replica first, then the ready one that became ready last, which drains
// its requests before it is gone.
func TestScaleDownRemovesLoadingThenYoungest(t *testing.T) {
	f := testFleet(2, Fixed{})
	f.pods[1].since = 100
	f.scale(3)
	if f.pods[2].state != loading {
		t.Fatalf("new replica %v, want loading", f.pods[2].state)
	}
	f.pods[1].eng.push(&request{arrival: 0, prompt: 10, output: 5})
	f.scale(2)
	if f.pods[2].state != gone {
		t.Fatalf("the loading replica is %v, want gone first", f.pods[2].state)
	}
	f.scale(1)
	if f.pods[1].state != draining || f.pods[0].state != ready {
		t.Fatalf("states %v %v, want the youngest ready draining", f.pods[0].state, f.pods[1].state)
	}
	f.advance(5)
	f.record(5, metric{})
	if f.pods[1].state != gone || f.stats.requests != 1 {
		t.Fatalf("drained replica %v with %v requests ended, want gone after ending its one", f.pods[1].state, f.stats.requests)
	}
}

// TestFailureLosesTheReplicasRequests: a crash loses what the replica
// held, counted bad, and it serves again after Startup.
func TestFailureLosesTheReplicasRequests(t *testing.T) {
	f := testFleet(1, Fixed{})
	for range 5 {
		f.route(&request{arrival: 0, prompt: 100, output: 500})
	}
	f.advance(1)
	f.fail(1)
	if f.stats.lost != 5 || f.stats.good != 0 || f.pods[0].state != loading {
		t.Fatalf("lost %v good %v state %v, want 5 lost and the replica loading", f.stats.lost, f.stats.good, f.pods[0].state)
	}
	fs := []float64{}
	f.tick(1+f.cfg.Startup.Seconds(), &fs)
	if f.pods[0].state != ready {
		t.Fatalf("state %v after Startup, want ready", f.pods[0].state)
	}
}

// TestFixedLargeFleetMeetsTheGoal: 12 replicas at 30 req/s (2.5 each, far
// below a replica's knee) keep the SLO every minute.
func TestFixedLargeFleetMeetsTheGoal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HPA.Min, cfg.HPA.Max = 12, 12
	d := Day{Name: "steady", Seed: 3, Length: 30 * time.Minute, Initial: 12, Rate: []Point{{0, 30}}}
	sc, tr, err := Run(cfg, d, Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Attainment < SLO.Goal || sc.BreachMinutes != 0 || sc.Pages != 0 || sc.Requests < 40000 {
		t.Fatalf("attainment %v, %d minutes in breach, %d pages, %v requests: want the goal kept every minute", sc.Attainment, sc.BreachMinutes, sc.Pages, sc.Requests)
	}
	if tr[len(tr)-1].Spec != 12 || math.Abs(sc.ReplicaHours-6) > 1e-9 {
		t.Fatalf("%d replicas, %v replica-hours: want 12 for half an hour", tr[len(tr)-1].Spec, sc.ReplicaHours)
	}
}

// TestOneReplicaUnderABurstBreaches: one replica at 4 req/s keeps the SLO;
// a 10-minute burst to 12 req/s (twice its knee) breaks it, pages, and the
// day misses its goal.
func TestOneReplicaUnderABurstBreaches(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HPA.Min, cfg.HPA.Max = 1, 1
	m := 10 * time.Minute
	d := Day{Name: "burst", Seed: 4, Length: 40 * time.Minute, Initial: 1,
		Rate: withBursts([]Point{{0, 4}, {40 * time.Minute, 4}}, []burst{{at: m, length: m, factor: 3}})}
	sc, _, err := Run(cfg, d, Fixed{})
	if err != nil {
		t.Fatal(err)
	}
	before := sc.Minutes[5]
	if before.Good/before.N < SLO.Goal {
		t.Fatalf("before the burst: attainment %v", before.Good/before.N)
	}
	if sc.Attainment >= SLO.Goal || sc.BreachMinutes < 10 || sc.Pages < 1 {
		t.Fatalf("attainment %v, %d minutes in breach, %d pages: want the burst to break the SLO", sc.Attainment, sc.BreachMinutes, sc.Pages)
	}
}

// TestReplicaModelIsCalibratedToTheSimulator: the replica model's knee,
// measured as test/capacitydays measures internal/sim's (a constant-rate
// sweep over the same six seeds), lies within 3% of the simulator's for
// the demo mix and for prompts 1.5 times as long.
func TestReplicaModelIsCalibratedToTheSimulator(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "test", "capacitydays", "testdata", "knees.json"))
	if err != nil {
		t.Fatal(err)
	}
	var simKnees map[string]float64
	if err := json.Unmarshal(b, &simKnees); err != nil {
		t.Fatal(err)
	}
	long := DemoMix()
	long.Prompt = sim.LengthDist{Mixture: []sim.Component{
		{Weight: 0.8, Dist: sim.LengthDist{Median: 600, Sigma: 0.8, Min: 12, Max: 6000}},
		{Weight: 0.2, Dist: sim.LengthDist{Median: 3750, Sigma: 0.5, Min: 750, Max: 15000}},
	}}
	seeds := []uint64{101, 102, 103, 104, 105, 106}
	for _, c := range []struct {
		server string
		mix    Mix
		rates  []float64
	}{
		{"one engine", DemoMix(), []float64{5.4, 5.7, 6.0, 6.3, 6.6}},
		{"one engine, long prompts", long, []float64{3.6, 3.9, 4.2, 4.5, 4.8}},
	} {
		sw := TrueKnee(sim.DemoEngine, c.mix, c.rates, seeds)
		want := simKnees[c.server]
		if !(want > 0) || !(math.Abs(sw.Knee-want)/want <= 0.03) { // a knee off the grid is NaN or +Inf: fails too
			t.Errorf("%s: the replica model's knee %.3f, internal/sim's %.3f: more than 3%% apart (attainment %v)", c.server, sw.Knee, want, sw.Attainment)
		}
	}
}

// TestReplicaSignalScalesOnTheLearnedCapacity: a fleet of two scaled by
// the replica signal through a ramp from 6 to 24 req/s: it has no number
// until the learners have windows enough (the autoscaler holds), then a
// capacity learned from the replicas, never above the fleet's true knee
// (about 6.6 req/s a replica, bench/fleetday/testdata/knees.json) by more
// than the 10% the HPA's tolerance lets the load past the plan, and ends
// with the replicas its plan asks for at 24 req/s, the SLO kept.
func TestReplicaSignalScalesOnTheLearnedCapacity(t *testing.T) {
	h := time.Hour
	d := Day{Name: "ramp", Seed: 5, Length: 3 * h, Initial: 2, Rate: []Point{{0, 6}, {h, 6}, {2 * h, 24}, {3 * h, 24}}}
	sc, tr, err := Run(DefaultConfig(), d, &ours{t: 1, pooled: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr[0].OK || tr[0].Need.Kind != capacity.Unknown {
		t.Fatalf("first tick: %+v, want no number yet", tr[0])
	}
	last := tr[len(tr)-1]
	if last.Need.Kind == capacity.Unknown || !(last.Need.PerReplica > 0 && last.Need.PerReplica <= 1.1*6.6) {
		t.Fatalf("capacity counted at the end %v (%s), want one learned, not above the fleet's knee", last.Need.PerReplica, last.Need.Kind)
	}
	if want := math.Ceil(last.Need.Projected / last.Need.Planned); math.Abs(float64(last.Spec)-want) > 1 {
		t.Fatalf("%d replicas at %.1f req/s with %.2f planned per replica, want about %v", last.Spec, last.Need.Projected, last.Need.Planned, want)
	}
	if sc.Attainment < SLO.Goal || sc.PeakReplicas < 4 {
		t.Fatalf("attainment %v, at most %d replicas, under a slow ramp to 24 req/s", sc.Attainment, sc.PeakReplicas)
	}
}

// TestPagesCountEpisodes: a page fires after its burn has held for its
// hold time, once per episode of each alert. At a goal of 95% the fast
// alert needs 72% of an hour's requests bad and the slow one 30% of six
// hours': a 12-minute outage pages nobody; 50 minutes after six good
// hours page the fast alert alone; 50 minutes 100 minutes into the day
// (the six-hour window holding only those 150) page both.
func TestPagesCountEpisodes(t *testing.T) {
	day := func(n, from, to int) []minute {
		ms := make([]minute, n)
		for i := range ms {
			ms[i] = Minute{N: 100, Good: 100}
			if i >= from && i < to {
				ms[i].Good = 0
			}
		}
		return ms
	}
	for _, c := range []struct {
		ms   []minute
		want int
	}{
		{day(300, 100, 112), 0},
		{day(600, 400, 450), 1},
		{day(400, 100, 150), 2},
	} {
		if p := pages(c.ms, 0.95); p != c.want {
			t.Errorf("%d pages, want %d", p, c.want)
		}
	}
}

// TestChooseCheapestMeetingTheGoal: of the thresholds meeting the goal on
// every training day, the one with the fewest replica-hours; with none,
// the nearest miss.
func TestChooseCheapestMeetingTheGoal(t *testing.T) {
	g := []GridPoint{{1, 0.99, 100, true}, {2, 0.96, 80, true}, {3, 0.94, 60, false}}
	if got := choose(g); got != 2 {
		t.Fatalf("chose %v, want 2", got)
	}
	if got := choose([]GridPoint{{1, 0.90, 100, false}, {2, 0.93, 80, false}}); got != 2 {
		t.Fatalf("chose %v, want 2 (nearest miss)", got)
	}
}
