package pipeline

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// workload is one simulated scenario of the accuracy table.
type workload struct {
	name    string
	cfg     func() sim.Config
	restart time.Duration // when > 0, vLLM restarts at this offset
}

func workloads() []workload {
	demo := func(mod func(*sim.Config)) func() sim.Config {
		return func() sim.Config {
			c := sim.DemoConfig(11, start)
			c.DiscardTokenTimes = true
			mod(&c)
			return c
		}
	}
	phases := func(ps ...sim.Phase) func(*sim.Config) {
		return func(c *sim.Config) {
			c.Models[0].Workload.Phases = ps
			c.Models[0].Workload.Repeat = false
		}
	}
	return []workload{
		{name: "steady", cfg: demo(phases(sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate}))},
		{name: "bursty", cfg: demo(phases(sim.Phase{Kind: sim.Bursty, Rate: 4 * sim.DemoRate, RateOff: sim.DemoRate / 2, On: 30 * time.Second, Off: 90 * time.Second}))},
		{name: "overload", cfg: demo(phases(
			sim.Phase{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate},
			sim.Phase{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: 4 * sim.DemoRate},
			sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate}))},
		{name: "restart", cfg: demo(phases(sim.Phase{Kind: sim.Poisson, Rate: 2 * sim.DemoRate})), restart: 13 * time.Minute},
		{name: "one-engine", cfg: demo(func(c *sim.Config) {
			c.Models[0].Engines = 1
			phases(sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})(c)
		})},
		{name: "bimodal-prompts", cfg: demo(func(c *sim.Config) {
			phases(sim.Phase{Kind: sim.Poisson, Rate: 1.5 * sim.DemoRate})(c)
			c.Models[0].Workload.Prompt = sim.LengthDist{Mixture: []sim.Component{
				{Weight: 0.5, Dist: sim.LengthDist{Fixed: 64}},
				{Weight: 0.5, Dist: sim.LengthDist{Median: 6000, Sigma: 0.3, Min: 2000, Max: 12000}},
			}}
		})},
	}
}

// accuracy accumulates, over windows, the width of the bounds and the error of
// the estimate for one quantity.
type accuracy struct {
	n, width, absErr, outside float64
}

func (a *accuracy) add(truth float64, b slo.Bounded, scale float64) {
	if scale <= 0 {
		return
	}
	a.n++
	a.width += (b.Upper - b.Lower) / scale
	a.absErr += math.Abs(b.Estimate-truth) / scale
	if truth < b.Lower-1e-9*scale || truth > b.Upper+1e-9*scale {
		a.outside++
	}
}

func (a accuracy) String() string {
	if a.n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%7.4f %7.4f", a.width/a.n, a.absErr/a.n)
}

// TestJointAccuracyAgainstTruth runs every workload through the pipeline and
// compares joint attainment and goodput with the simulator's per-request
// truth over every evaluated window: the truth must lie inside the bounds in
// every window, and the table (printed with -v) reports the mean bound width
// and the mean estimate error, as shares of the finished requests and of the
// generated tokens. BENCHMARKS.md quotes it.
func TestJointAccuracyAgainstTruth(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-16s %7s | %-15s | %-15s\n", "workload", "windows", "joint width err", "goodput width err")
	var allJoint, allGood accuracy
	for _, wl := range workloads() {
		s, err := sim.New(wl.cfg())
		if err != nil {
			t.Fatal(err)
		}
		spec := testSpec(t)
		spec.Windows = []time.Duration{time.Minute, 5 * time.Minute}
		p := New(spec)
		var joint, good accuracy
		step := 15 * time.Second
		restarted := false
		// Requests that finish between the last scrape before a restart and
		// the restart are counted by a process that dies before anyone reads
		// it: no scraper can see them, so they leave the truth too.
		var lostFrom, lostTo time.Time
		for at := start.Add(step); !at.After(start.Add(30 * time.Minute)); at = at.Add(step) {
			if wl.restart > 0 && !restarted && at.Sub(start) >= wl.restart {
				lostFrom, lostTo = at.Add(-step), at.Add(-7*time.Second)
				s.AdvanceTo(lostTo)
				if err := s.Restart(sim.RestartOptions{}); err != nil {
					t.Fatal(err)
				}
				restarted = true
			}
			scrapeInto(t, p, s, at)
			if at.Sub(start) < 5*time.Minute || at.Sub(start)%time.Minute != 0 {
				continue
			}
			truth := s.Truth()
			for _, w := range p.Evaluate(at).Targets[0].Models[0].Windows {
				if len(w.SLOs) == 0 {
					continue
				}
				fin := truth.FinishedIn(w.Window.Start, w.Window.End)
				n, ok, tokens, goodTokens := 0.0, 0.0, 0.0, 0.0
				for _, r := range fin {
					if !r.Finished() || (r.Finish.After(lostFrom) && !r.Finish.After(lostTo)) {
						continue
					}
					n++
					tokens += float64(r.OutputTokens)
					if r.TTFT() <= 0.5+1e-9 && r.TPOT() <= 0.05+1e-9 {
						ok++
						goodTokens += float64(r.OutputTokens)
					}
				}
				res := w.SLOs[0]
				if res.Requests != n {
					t.Errorf("%s at %v window %v: %v finished requests, truth %v", wl.name, at.Sub(start), w.Window.Nominal, res.Requests, n)
				}
				joint.add(ok, res.GoodRequests[slo.AllKey], n)
				secs := w.Window.Seconds()
				gt := res.GoodputTokensPerSecond
				good.add(goodTokens/secs, gt, tokens/secs)
			}
		}
		if joint.outside > 0 || good.outside > 0 {
			t.Errorf("%s: truth outside the bounds in %v joint and %v goodput windows of %v", wl.name, joint.outside, good.outside, joint.n)
		}
		fmt.Fprintf(&table, "%-16s %7.0f | %s | %s\n", wl.name, joint.n, joint, good)
		allJoint.n += joint.n
		allJoint.width += joint.width
		allJoint.absErr += joint.absErr
		allGood.n += good.n
		allGood.width += good.width
		allGood.absErr += good.absErr
	}
	fmt.Fprintf(&table, "%-16s %7.0f | %s | %s\n", "all", allJoint.n, allJoint, allGood)
	t.Logf("mean bound width and mean |estimate − truth|, as shares of finished requests (joint) and generated tokens (goodput):\n%s", table.String())
}
