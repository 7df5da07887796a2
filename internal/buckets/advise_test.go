package buckets_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var start = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// advisorCase is a workload with an SLO whose thresholds are all off
// vLLM's default edges, near where its requests are.
type advisorCase struct {
	preset string
	slo    slo.SLO
}

var advisorCases = []advisorCase{
	{"steady", slo.SLO{Name: "tight", Goal: 0.9, Period: time.Hour, Objectives: []slo.Objective{
		{Metric: slo.TTFT, Threshold: 0.15}, {Metric: slo.TPOT, Threshold: 0.018}, {Metric: slo.E2E, Threshold: 4}}}},
	{"bursty", slo.SLO{Name: "tight", Goal: 0.9, Period: time.Hour, Objectives: []slo.Objective{
		{Metric: slo.TTFT, Threshold: 0.3}, {Metric: slo.TPOT, Threshold: 0.055}, {Metric: slo.E2E, Threshold: 12}}}},
}

// measures sums what a run's windows show.
type measures struct {
	windows, exactObjectives, objectives int
	joint, tokens, quantileErr           float64
	quantiles                            int
	// floor sums each window's joint width had every objective's good
	// count among each scrape interval's finishers been exact (see
	// frechetFloor): what no edge placement can narrow.
	floor float64
}

func (m measures) String() string {
	n := float64(m.windows)
	return fmt.Sprintf("%3d/%3d exact | joint %.4f (floor %.4f) | tokens %.4f | quantile err %.3f", m.exactObjectives, m.objectives, m.joint/n, m.floor/n, m.tokens/n, m.quantileErr/float64(m.quantiles))
}

// TestAdvisedEdgesMakeObjectivesExact records each workload with vLLM's
// default edges, advises edges from that recording (same number of edges
// per family), and serves the same workload (same seed) with them. With the
// advice every objective's attainment is exact in every window (lower =
// upper), where the defaults bracket it; in both runs the truth is inside
// every bound, with no tolerance. The table (-v) compares the mean joint
// width and goodput-token width (shares of the finished requests and their
// tokens) and the mean relative error of the p50/p90/p99 estimates of TTFT,
// TPOT and e2e.
func TestAdvisedEdgesMakeObjectivesExact(t *testing.T) {
	var table strings.Builder
	for _, c := range advisorCases {
		rec := buckets.NewRecorder()
		before := serve(t, c, sim.Buckets{}, rec)
		advice := map[buckets.Family][]float64{}
		for f, ths := range buckets.Thresholds([]slo.SLO{c.slo}) {
			adv, err := buckets.Advise(f, ths, rec.Observed(f, []slo.SLO{c.slo}), len(buckets.Default(f)))
			if err != nil {
				t.Fatal(err)
			}
			if !adv.FromObserved {
				t.Fatalf("%s %s: advice without the recording's distribution", c.preset, f)
			}
			advice[f] = adv.Edges
			t.Logf("%s %s: %v", c.preset, f, adv.Edges)
		}
		after := serve(t, c, sim.Buckets{
			TTFT: advice[buckets.TimeToFirstToken], ITL: advice[buckets.InterTokenLatency], RequestLatency: advice[buckets.RequestLatency],
		}, nil)
		if before.exactObjectives == before.objectives {
			t.Errorf("%s: every objective exact with vLLM's defaults: the case shows nothing", c.preset)
		}
		if after.exactObjectives != after.objectives {
			t.Errorf("%s: %d of %d objective attainments exact with the advised edges, want all", c.preset, after.exactObjectives, after.objectives)
		}
		fmt.Fprintf(&table, "%-7s defaults: %s\n%-7s advised:  %s (joint %.1fx, tokens %.1fx narrower)\n",
			c.preset, before, c.preset, after, before.joint/after.joint, before.tokens/after.tokens)
	}
	t.Logf("mean over the 1m and 5m windows, each minute from the fifth to the twentieth:\n%s", table.String())
}

// serve runs a case for 20 minutes with the given edges, scraped every
// 15 s (into rec too, when given), and measures every window at each whole
// minute from the fifth, checking the truth against every bound.
func serve(t *testing.T, c advisorCase, b sim.Buckets, rec *buckets.Recorder) measures {
	t.Helper()
	cfg, err := sim.Preset(c.preset, 7, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiscardTokenTimes = true
	cfg.Buckets = b
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.New(pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs:      []slo.SLO{c.slo},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.9, 0.99},
		MaxModels: 10,
		Retention: history.NewRetention(5*time.Minute, time.Hour),
	})
	var m measures
	for at := start.Add(15 * time.Second); !at.After(start.Add(20 * time.Minute)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil {
			rec.Add("gpu0", snap)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		if at.Sub(start) >= 5*time.Minute && at.Sub(start)%time.Minute == 0 {
			for _, wr := range p.Evaluate(at).Targets[0].Models[0].Windows {
				m.add(t, c, wr, s.Truth())
			}
		}
	}
	return m
}

// add measures one window and checks its bounds against the truth.
func (m *measures) add(t *testing.T, c advisorCase, wr slo.WindowReport, truth sim.Truth) {
	t.Helper()
	where := fmt.Sprintf("%s window %v ending %v", c.preset, wr.Window.Nominal, wr.Window.End.Sub(start))
	finished := simtruth.FinishedIn(truth, wr.Window.Start, wr.Window.End)
	if len(wr.SLOs) != 1 || len(finished) == 0 {
		t.Fatalf("%s: %d SLO results, %d finished", where, len(wr.SLOs), len(finished))
	}
	r := wr.SLOs[0]
	for _, o := range c.slo.Objectives {
		m.objectives++
		if b := r.Objectives[string(o.Metric)]; b.Lower == b.Upper {
			m.exactObjectives++
		}
	}
	good, tokens, all := 0, 0, 0
	for _, req := range finished {
		all += req.OutputTokens
		if meets(req, c.slo) {
			good++
			tokens += req.OutputTokens
		}
	}
	g := r.GoodRequests[slo.AllKey]
	if float64(good) < g.Lower || float64(good) > g.Upper {
		t.Errorf("%s: good requests %d outside [%v, %v]", where, good, g.Lower, g.Upper)
	}
	secs := wr.Window.Seconds()
	gt := r.GoodputTokensPerSecond
	m.windows++
	m.joint += (g.Upper - g.Lower) / float64(len(finished))
	m.floor += frechetFloor(c.slo, truth, wr.Window.Start, wr.Window.End) / float64(len(finished))
	m.tokens += (gt.Upper - gt.Lower) * secs / float64(all)
	for _, metric := range []slo.Metric{slo.TTFT, slo.TPOT, slo.E2E} {
		pop := finished
		if metric == slo.TTFT {
			pop = simtruth.FirstTokenIn(truth, wr.Window.Start, wr.Window.End)
		}
		vals := values(pop, metric)
		for _, q := range wr.Quantiles[metric] {
			v := slo.ExactQuantile(q.Q, vals)
			if v < q.Lower || v > q.Upper {
				t.Errorf("%s: %s q%g truth %v outside [%v, %v]", where, metric, q.Q, v, q.Lower, q.Upper)
			}
			if v > 0 {
				m.quantileErr += math.Abs(q.Estimate-v) / v
				m.quantiles++
			}
		}
	}
}

func meets(r sim.Request, s slo.SLO) bool {
	for _, o := range s.Objectives {
		v, _ := r.Value(string(o.Metric))
		if v > o.Threshold {
			return false
		}
	}
	return true
}

func values(reqs sim.Truth, m slo.Metric) []float64 {
	var out []float64
	for _, r := range reqs {
		if v, ok := r.Value(string(m)); ok {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// frechetFloor is the width of the narrowest bound on a window's requests
// meeting every objective that exact per-objective counts in every scrape
// interval allow: in an interval whose n finishers hold a_i good on
// objective i (of k), the good on all lie anywhere in
// [max(0, Σa_i − (k−1)·n), min a_i] (Fréchet), and every value there is
// possible, so the window's width is at least the sum of these widths. With
// every threshold on an edge, the histograms give the a_i exactly (TTFT's
// up to which first tokens its finishers had); the width left is which
// requests met which objective, which no bucket edge records.
func frechetFloor(s slo.SLO, truth sim.Truth, from, to time.Time) float64 {
	const step = 15 * time.Second
	width := 0.0
	for at := from; at.Before(to); at = at.Add(step) {
		fin := simtruth.FinishedIn(truth, at, at.Add(step))
		n := float64(len(fin))
		if n == 0 {
			continue
		}
		sum, least := 0.0, n
		for _, o := range s.Objectives {
			good := 0.0
			for _, r := range fin {
				if v, _ := r.Value(string(o.Metric)); v <= o.Threshold {
					good++
				}
			}
			sum += good
			least = math.Min(least, good)
		}
		width += least - math.Max(0, sum-float64(len(s.Objectives)-1)*n)
	}
	return width
}
