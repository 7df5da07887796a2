package console

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// TestChartsDrawTheDaemonsEvaluations counts the evaluations one chart
// render costs. A rig evaluates at every scrape for an hour, as the daemon
// does, and keeps every evaluation in a ring: the hour's chart (120
// points, every one an evaluation the daemon already made) evaluates
// nothing, and draws exactly the reports the daemon published, on every
// window configured. Without the ring every point is evaluated again.
func TestChartsDrawTheDaemonsEvaluations(t *testing.T) {
	r := newRigWith(t, 60, NewRing(15*time.Second, 24*time.Hour))
	for _, window := range []string{"", "1m", "5m"} {
		h := &countingHistory{History: r.pipe}
		c := New(Options{Report: func() *pipeline.Report { return r.rep }, History: h, Ring: r.ring})
		got := series(t, c, seriesURL(hostile, "1h", window))
		if h.calls != 0 {
			t.Errorf("window %q: %d evaluations for one chart, want none: the ring holds every point", window, h.calls)
		}
		plain := &countingHistory{History: r.pipe}
		series(t, New(Options{Report: func() *pipeline.Report { return r.rep }, History: plain}), seriesURL(hostile, "1h", window))
		if plain.calls != DefaultPoints {
			t.Errorf("window %q: without the ring %d evaluations, want one per point (%d)", window, plain.calls, DefaultPoints)
		}
		want := series(t, New(Options{Report: func() *pipeline.Report { return r.rep }, History: publishedHistory{r.pipe, r.published}}), seriesURL(hostile, "1h", window))
		if len(got.Times) < DefaultPoints/2 {
			t.Fatalf("window %q: %d points drawn", window, len(got.Times))
		}
		if !sameJSON(t, got, want) {
			t.Errorf("window %q: the chart from the ring differs from the reports the rig published", window)
		}
	}
}

// publishedHistory answers EvaluateModelAt with the model's part of the
// newest published report at or before end: what the daemon said then
// (with the live edge's uncertainty a later evaluation of the same past
// scrape no longer has).
type publishedHistory struct {
	History
	published []*pipeline.Report
}

func (h publishedHistory) EvaluateModelAt(target, model string, end time.Time, _ ...time.Duration) (pipeline.ModelReport, error) {
	for i := len(h.published) - 1; i >= 0; i-- {
		rep := h.published[i]
		if rep.Time.After(end) {
			continue
		}
		for _, tr := range rep.Targets {
			for _, mr := range tr.Models {
				if tr.Name == target && mr.Name == model {
					return mr, nil
				}
			}
		}
	}
	return h.History.EvaluateModelAt(target, model, end)
}

// TestChartsReachPastTheFinestTier draws three hours from a ring whose
// finest tier holds the last hour: every point comes from the ring's
// coarser tiers (no evaluation), each within one grid cell of its end, in
// time order.
func TestChartsReachPastTheFinestTier(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulated hours")
	}
	r := newRigWith(t, 180, NewRing(15*time.Second, 24*time.Hour))
	h := &countingHistory{History: r.pipe}
	c := New(Options{Report: func() *pipeline.Report { return r.rep }, History: h, Ring: r.ring})
	s := series(t, c, seriesURL(hostile, "3h", "5m"))
	if h.calls != 0 {
		t.Errorf("%d evaluations for one chart, want none", h.calls)
	}
	step := (s.To - s.From) / DefaultPoints
	if len(s.Times) < DefaultPoints*9/10 {
		t.Fatalf("%d points drawn, want nearly %d", len(s.Times), DefaultPoints)
	}
	for i := 1; i < len(s.Times); i++ {
		if s.Times[i] <= s.Times[i-1] || s.Times[i]-s.Times[i-1] > 2*step {
			t.Fatalf("times %v then %v: not increasing within two cells of %vs", s.Times[i-1], s.Times[i], step)
		}
	}
}

// TestRingBeforeItsHistory: points older than the ring reaches (a daemon
// restarted on a saved history) are evaluated, the rest drawn from the
// ring.
func TestRingBeforeItsHistory(t *testing.T) {
	r := newRig(t, 30)
	r.ring = NewRing(15*time.Second, 24*time.Hour)
	for i := 1; i <= 30*4; i++ {
		r.scrape(t, r.now.Add(15*time.Second))
	}
	h := &countingHistory{History: r.pipe}
	c := New(Options{Report: func() *pipeline.Report { return r.rep }, History: h, Ring: r.ring})
	series(t, c, seriesURL(hostile, "1h", "1m"))
	if h.calls == 0 || h.calls > DefaultPoints/2+1 {
		t.Errorf("%d evaluations, want the first half hour's (about %d)", h.calls, DefaultPoints/2)
	}
}

// TestRingForgetsAnotherSpec: evaluations of another configuration are
// never drawn; a new configuration empties the ring.
func TestRingForgetsAnotherSpec(t *testing.T) {
	r := newRigWith(t, 20, NewRing(15*time.Second, 24*time.Hour))
	spec := SpecKey(r.pipe.Spec())
	end := r.now
	if _, ok := r.ring.point(spec, "gpu0", hostile, end, time.Minute); !ok {
		t.Fatal("the newest evaluation is not in the ring")
	}
	if _, ok := r.ring.point(spec+"x", "gpu0", hostile, end, time.Minute); ok {
		t.Error("a chart of another configuration drew the ring's evaluation")
	}
	other := r.pipe.Spec()
	other.Quantiles = []float64{0.5}
	r.ring.Add(r.rep, other)
	if _, ok := r.ring.point(spec, "gpu0", hostile, end.Add(-5*time.Minute), time.Minute); ok {
		t.Error("a new configuration kept the old one's evaluations")
	}
}

// TestRingTiersBounded: a ring keeps at most RingPoints per tier, and its
// tiers span the retention asked for.
func TestRingTiersBounded(t *testing.T) {
	ring := NewRing(15*time.Second, 30*24*time.Hour)
	if span := time.Duration(RingPoints) * 15 * time.Second << (ring.tiers - 1); span < 30*24*time.Hour || span >= 60*24*time.Hour {
		t.Errorf("%d tiers span %v, want 30 days and less than twice it", ring.tiers, span)
	}
	m := &modelRing{tiers: make([]tier, ring.tiers)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100000 {
		ring.push(m, ringPoint{at: t0.Add(time.Duration(i) * 15 * time.Second)}, RingPoints)
	}
	for k, tr := range m.tiers {
		if len(tr.points) > RingPoints {
			t.Fatalf("tier %d holds %d points", k, len(tr.points))
		}
		for i := 1; i < len(tr.points); i++ {
			if gap := tr.at(i).at.Sub(tr.at(i - 1).at); gap < 15*time.Second<<k {
				t.Fatalf("tier %d: points %v apart, want at least %v", k, gap, 15*time.Second<<k)
			}
		}
	}
}

// sameJSON compares two values by their JSON (NaN as null).
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var va, vb any
	if err := json.Unmarshal(ja, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jb, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestRingBudget feeds a ring a fleet of models larger than its budget,
// then a small one: with many models each tier keeps fewer points (at
// least the newest two), all models together within the budget or two
// points a tier; with few it grows back to RingPoints; every tier stays in
// time order, newest last, across the change.
func TestRingBudget(t *testing.T) {
	ring := NewRing(15*time.Second, 30*24*time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fleet := func(models int, at time.Time) *pipeline.Report {
		rep := &pipeline.Report{Time: at}
		for i := range models {
			rep.Targets = append(rep.Targets, pipeline.TargetReport{Name: fmt.Sprint("t", i),
				Models: []pipeline.ModelReport{{Name: "m", Budgets: []pipeline.Budget{{SLO: "s", End: at}}}}})
		}
		return rep
	}
	at := t0
	feed := func(models, n int) (points, most int) {
		for range n {
			at = at.Add(15 * time.Second)
			ring.Add(fleet(models, at), pipeline.Spec{})
		}
		for _, m := range ring.models {
			for _, tr := range m.tiers {
				points += len(tr.points)
				most = max(most, len(tr.points))
				for i := 1; i < len(tr.points); i++ {
					if !tr.at(i).at.After(tr.at(i - 1).at) {
						t.Fatalf("a tier out of order: %v then %v", tr.at(i-1).at, tr.at(i).at)
					}
				}
				if last, ok := tr.last(); ok && tr.at(0).at.After(last.at) {
					t.Fatal("a tier's newest point is not last")
				}
			}
		}
		return points, most
	}
	if points, most := feed(2000, 20); most != 2 || points > max(RingBudget, 2000*ring.tiers*2) {
		t.Errorf("2000 models: %d points, at most %d a tier; want 2 a tier", points, most)
	}
	if _, most := feed(5, 600); most != RingPoints {
		t.Errorf("5 models: at most %d points a tier, want %d", most, RingPoints)
	}
	if len(ring.models) != 5 {
		t.Errorf("%d models kept, want the 5 the last report holds", len(ring.models))
	}
}

// TestRingConcurrentReaders adds evaluations while charts read the ring,
// as the daemon's evaluation and the console's requests do (run with
// -race): every read sees a consistent ring, the newest evaluation never
// older than one read before it.
func TestRingConcurrentReaders(t *testing.T) {
	ring := NewRing(15*time.Second, 24*time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spec := pipeline.Spec{}
	key := SpecKey(spec)
	report := func(at time.Time) *pipeline.Report {
		return &pipeline.Report{Time: at, Targets: []pipeline.TargetReport{{Name: "t",
			Models: []pipeline.ModelReport{{Name: "m", Budgets: []pipeline.Budget{{SLO: "s", End: at}}}}}}}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 2000; i++ {
			ring.Add(report(t0.Add(time.Duration(i)*15*time.Second)), spec)
		}
	}()
	var newest time.Time
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		mr, ok := ring.point(key, "t", "m", t0.Add(2000*15*time.Second), time.Hour)
		if !ok {
			continue
		}
		at, _ := evaluatedAt(mr)
		if at.Before(newest) {
			t.Fatalf("the newest evaluation went from %v back to %v", newest, at)
		}
		newest = at
		_ = ring.Len()
	}
	if ring.version() != 2000 {
		t.Errorf("%d evaluations added, want 2000", ring.version())
	}
}
