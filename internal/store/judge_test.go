package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// judgeSLOs are SLOs of every kind a judgement treats apart: per-request
// objectives (TTFT's among them, which the ledger matches to finishers),
// ITL alone, and a finish-observed objective with ITL.
var judgeSLOs = []slo.SLO{
	{Name: "interactive", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}, Goal: 0.99, Period: time.Hour},
	{Name: "smooth", Objectives: []slo.Objective{{Metric: slo.ITL, Threshold: 0.05}}, Goal: 0.95, Period: time.Hour},
	{Name: "batch", Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 4}, {Metric: slo.ITL, Threshold: 0.2}}, Goal: 0.9, Period: time.Hour},
}

// judgeFeed is a server of two models whose requests finish at random,
// which restarts now and then (its counters from zero under a new start
// time), and whose second model is missing from some scrapes.
type judgeFeed struct {
	r      *rand.Rand
	models map[string]*judgeModel
}

type judgeModel struct {
	hists   map[scrape.Family]slo.Histogram
	created float64
}

var judgeEdges = []float64{0.02, 0.05, 0.1, 0.5, 1, 4, math.Inf(1)}

func (f *judgeFeed) next(at time.Time) *scrape.Snapshot {
	snap := &scrape.Snapshot{Time: at, Models: map[string]*scrape.ModelSample{}}
	for _, name := range []string{"a", "b"} {
		m := f.models[name]
		if m == nil || f.r.IntN(25) == 0 {
			m = &judgeModel{hists: map[scrape.Family]slo.Histogram{}, created: float64(at.Unix()) - 1}
			f.models[name] = m
		}
		n := float64(f.r.IntN(12))
		for _, fam := range []scrape.Family{scrape.TTFT, scrape.TPOT, scrape.E2E, scrape.ITL, scrape.Decode, scrape.GenerationTokensHist} {
			h, ok := m.hists[fam]
			if !ok {
				h = slo.Histogram{Edges: judgeEdges, Counts: make([]float64, len(judgeEdges))}
			}
			counts := append([]float64(nil), h.Counts...)
			added := n
			if fam == scrape.ITL || fam == scrape.TTFT {
				added = n + float64(f.r.IntN(3)) // gaps, and first tokens of requests still running
			}
			for k := 0; k < int(added); k++ {
				for j := f.r.IntN(len(counts)); j < len(counts); j++ {
					counts[j]++
				}
			}
			m.hists[fam] = slo.Histogram{Edges: judgeEdges, Counts: counts, Sum: h.Sum + added*f.r.Float64()}
		}
		if name == "b" && f.r.IntN(6) == 0 {
			continue // missing from this scrape
		}
		ms := &scrape.ModelSample{Histograms: map[scrape.Family]slo.Histogram{}, Counters: map[scrape.Family]float64{},
			Gauges: map[scrape.Family]float64{scrape.Running: float64(f.r.IntN(6)), scrape.Waiting: float64(f.r.IntN(2))}, Created: m.created}
		for fam, h := range m.hists {
			ms.Histograms[fam] = h
		}
		snap.Models[name] = ms
	}
	return snap
}

// TestEachIntervalJudgedOnce feeds a store scrapes of two models with
// restarts, warm-ups, a missing model and three SLOs, with spans and
// without, and checks that every interval an append closed was judged
// exactly once: the store's judgements equal the intervals returned, each
// interval carries one judgement per SLO, the per-objective counts are
// those slo.Evaluate gives over the interval's warm-up-free increase (what
// the running totals used to judge again), the ledger's record is the
// ledger's own sums over the interval, and the running totals are the sum
// of the judgements returned and nothing else.
func TestEachIntervalJudgedOnce(t *testing.T) {
	for _, spans := range []bool{false, true} {
		r := rand.New(rand.NewPCG(11, 4))
		st := New(Config{SLOs: judgeSLOs, Retention: history.NewRetention(time.Hour, 2*time.Hour), Warmup: 40 * time.Second, Spans: spans})
		feed := &judgeFeed{r: r, models: map[string]*judgeModel{}}
		want := Totals{}
		add := func(model, name, obj string, v float64) {
			if v > 0 {
				if want[model] == nil {
					want[model] = map[string]map[string]float64{}
				}
				if want[model][name] == nil {
					want[model][name] = map[string]float64{}
				}
				want[model][name][obj] += v
			}
		}
		var closed, warm, restarts int
		for n := range 400 {
			cs, err := st.Append(feed.next(at.Add(time.Duration(n)*15*time.Second)), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				closed++
				if !counted(c.Interval) {
					warm++
				}
				restarts += c.Window.Restarts
				checkJudgement(t, st, c, spans, add)
			}
			if got := st.Judgements(); got != int64(closed) {
				t.Fatalf("spans %v, scrape %d: %d judgements for %d closed intervals", spans, n, got, closed)
			}
		}
		if closed < 600 || warm < 20 || restarts < 20 {
			t.Fatalf("spans %v: only %d intervals, %d in a warm-up, %d restarts", spans, closed, warm, restarts)
		}
		t.Logf("spans %v: %d intervals judged once each, %d in a warm-up, %d restarts", spans, closed, warm, restarts)
		for _, model := range []string{"a", "b"} {
			for _, g := range st.GoodTotals(model) {
				if w := want[model][g.SLO][g.Objective]; g.Value != w {
					t.Errorf("spans %v: %s %s/%s total %v, the judgements add up to %v", spans, model, g.SLO, g.Objective, g.Value, w)
				}
				delete(want[model][g.SLO], g.Objective)
			}
			for name, byObj := range want[model] {
				for obj, v := range byObj {
					t.Errorf("spans %v: %s %s/%s: judgements add up to %v, no total", spans, model, name, obj, v)
				}
			}
		}
	}
}

// checkJudgement checks one closed interval's judgement against the
// judging it replaces and passes what it adds to the totals to add.
func checkJudgement(t *testing.T, st *Store, c Closed, spans bool, add func(model, name, obj string, v float64)) {
	t.Helper()
	if len(c.SLOs) != len(judgeSLOs) {
		t.Fatalf("%s at %v: %d judgements for %d SLOs", c.Model, c.Window.End, len(c.SLOs), len(judgeSLOs))
	}
	// Per objective, with no joint ("all" is the ledger's): a slice of nil
	// joints, not nil, which asks for the whole-window fallback.
	rep := slo.Evaluate(c.Warm, judgeSLOs, make([]*slo.Joint, len(judgeSLOs)), slo.Options{})
	l := st.Ledger(c.Model)
	for i, s := range judgeSLOs {
		j := c.SLOs[i]
		var want map[string]slo.Bounded
		if len(rep.SLOs) > 0 {
			want = rep.SLOs[i].GoodRequests
		}
		if g, w := fmt.Sprint(j.Objectives), fmt.Sprint(want); g != w {
			t.Fatalf("%s at %v, %s: objectives %s, slo.Evaluate %s", c.Model, c.Window.End, s.Name, g, w)
		}
		settles := spans && counted(c.Interval) && slo.HasPerRequestObjective(s)
		for obj, good := range j.Objectives {
			if obj == string(slo.ITL) || !settles {
				add(c.Model, s.Name, obj, good.Estimate)
			}
		}
		if !j.Recorded {
			t.Fatalf("%s at %v: the ledger did not record the interval", c.Model, c.Window.End)
		}
		if iv := j.Ledger.Interval; !iv.End.IsZero() {
			sums, ok := l.Sums(i, iv.Start, iv.End)
			if !ok || sums.Estimate != j.Ledger.Good || iv.End != c.Window.End || iv.Start != c.Window.Start {
				t.Fatalf("%s at %v, %s: record %+v (good %v), the ledger's sums %+v", c.Model, c.Window.End, s.Name, iv, j.Ledger.Good, sums)
			}
		}
		if !spans && slo.HasPerRequestObjective(s) && j.Ledger.GoodKnown {
			add(c.Model, s.Name, slo.AllKey, j.Ledger.Good)
		}
	}
}
