package reliability

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// hostileWindow returns the main pipeline's window report of the victim
// model for a window length.
func (r *rig) hostileWindow(length time.Duration) slo.WindowReport {
	r.t.Helper()
	rep := r.main.report.Load()
	for _, tr := range rep.Targets {
		if tr.Name != hostileName {
			continue
		}
		for _, m := range tr.Models {
			if m.Name != victimModel {
				continue
			}
			for _, w := range m.Windows {
				if w.Window.Nominal == length {
					return w
				}
			}
		}
	}
	r.t.Fatalf("no %v window for %s/%s", length, hostileName, victimModel)
	return slo.WindowReport{}
}

func (r *rig) hostileReport() pipeline.TargetReport {
	for _, tr := range r.main.report.Load().Targets {
		if tr.Name == hostileName {
			return tr
		}
	}
	r.t.Fatal("no hostile target in the report")
	return pipeline.TargetReport{}
}

// TestRestart restarts the hostile target's vLLM between two scrapes in the
// three ways a restart can look: counts lower than before (a plain counter
// reset), counts already past the old values (only `_created` tells), and a
// new bucket layout. Every time one reset is counted, nothing fails, and the
// 5m window's request count equals the truth: the requests that finished
// between the window's first scrape and the last scrape before the restart,
// plus those that finished between the restart and the window's end — no
// double counting, and nothing made up for the requests that finished after
// the last scrape but before the restart, which no scrape ever saw.
func TestRestart(t *testing.T) {
	cases := []struct {
		name    string
		before  int           // good scrapes before the restart
		after   time.Duration // virtual time from the restart to the next scrape
		buckets *sim.Buckets
	}{
		{name: "counter reset", before: 8, after: 10 * time.Second},
		{name: "counts past the old values, _created changes", before: 2, after: 2 * time.Minute},
		{name: "bucket layout changed", before: 6, after: 10 * time.Second,
			buckets: &sim.Buckets{RequestLatency: []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			// The victim's vLLM restarts 5 s after the last scrape before
			// it: a restart in its configuration, the same as restarting it
			// at that instant (sim.ScheduledRestart).
			scheduled := rigStart.Add(time.Duration(c.before)*rigInterval + 5*time.Second)
			r.victim = newSimWith(t, "demo", 2, rigStart, func(cfg *sim.Config) {
				cfg.Restarts = []sim.ScheduledRestart{{At: scheduled.Sub(rigStart), Buckets: c.buckets}}
			})
			for range c.before {
				if err := r.step(r.good); err != nil {
					t.Fatal(err)
				}
				r.check()
			}
			lastBefore := r.clock.Now()
			oldCount := r.hostileWindow(5 * time.Minute).Requests[slo.E2E]

			restartAt := lastBefore.Add(5 * time.Second)
			if !restartAt.Equal(scheduled) {
				t.Fatalf("restart at %v, scheduled at %v", restartAt, scheduled)
			}
			oldCreated := r.victimCreated()
			r.victim.AdvanceTo(restartAt)
			if r.victimCreated() <= oldCreated {
				t.Fatalf("sim restart did not move _created")
			}
			if err := r.stepBy(5*time.Second+c.after, r.good); err != nil {
				t.Fatalf("scrape after restart: %v", err)
			}
			r.check()
			for range 2 {
				if err := r.step(r.good); err != nil {
					t.Fatal(err)
				}
				r.check()
			}
			tr := r.hostileReport()
			if tr.Resets != 1 {
				t.Fatalf("resets = %v, want 1", tr.Resets)
			}
			if len(tr.Failures) != 0 {
				t.Fatalf("failures %v after a restart", tr.Failures)
			}
			w := r.hostileWindow(5 * time.Minute)
			truth := simtruth.ForModel(r.victim.Truth(), victimModel)
			want := len(simtruth.FinishedIn(truth, w.Window.Start, lastBefore)) + len(simtruth.FinishedIn(truth, restartAt, w.Window.End))
			if !w.Window.Start.Before(lastBefore) {
				t.Fatalf("window %v..%v does not span the restart at %v", w.Window.Start, w.Window.End, restartAt)
			}
			if got := w.Requests[slo.E2E]; got != float64(want) {
				t.Fatalf("window e2e requests = %v, want %v (truth; %d before the restart were in the window before it)", got, want, int(oldCount))
			}
			if c.name == "counts past the old values, _created changes" {
				// The proof that only `_created` could tell: the counts did not go down.
				ms := simtruth.FinishedIn(simtruth.ForModel(r.victim.Truth(), victimModel), restartAt, w.Window.End)
				if len(ms) <= len(simtruth.FinishedIn(truth, rigStart, lastBefore)) {
					t.Fatalf("the scenario is wrong: %d requests after the restart are not more than %d before", len(ms), len(simtruth.FinishedIn(truth, rigStart, lastBefore)))
				}
			}
			for _, q := range w.Quantiles[slo.E2E] {
				if !(q.Lower <= q.Estimate && q.Estimate <= q.Upper) {
					t.Fatalf("quantile %v: bounds %+v out of order", q.Q, q.Bounded)
				}
			}
		})
	}
}

// victimCreated is the `_created` value of the victim's exposition at the
// time it has reached.
func (r *rig) victimCreated() float64 {
	r.t.Helper()
	body, ct := r.victim.Exposition()
	snap, err := scrape.Parse(body, ct, scrape.VLLM, rigStart)
	if err != nil {
		r.t.Fatal(err)
	}
	m := snap.Models[victimModel]
	if m == nil {
		r.t.Fatalf("model %s not in the victim's exposition", victimModel)
	}
	return m.Created
}
