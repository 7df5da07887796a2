package alertquality

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// TestAbandonedEstimateErrsByPrefill checks the page evidence's one error
// that no counter can remove: over both windows of every alert, at every
// evaluation whose history covers the window, the abandoned estimate
// (first tokens − finished + running at the window's start − running at its
// end, at least 0) is exactly max(0, A + P_start − P_end), with A the
// requests the truth has abandoned in the window and P the prompts in
// prefill at its edges, the scrapes it reads (scheduled, first token not
// yet produced), which the running gauge counts before their first token.
// It runs the library's
// scenarios where every scrape succeeds, vLLM never restarts (a restart's
// lost requests and a failed scrape's stale gauge are the ledger's and the
// window's concern, not this identity's) and the exporter's clock does not
// step. The log says how often P_start − P_end is not 0 and how large.
func TestAbandonedEstimateErrsByPrefill(t *testing.T) {
	t.Parallel()
	for _, sc := range Library() {
		if sc.Full || sc.Failed != nil || sc.StepBy != 0 || len(sc.Sim(time.Time{}).Restarts) > 0 {
			continue
		}
		run, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		evals, taken := run.realTimes()
		windows, off, worst := 0, 0, 0
		for _, k := range run.Keys {
			for j, s := range run.Scrapes {
				c := run.Checks[k][j]
				if !c.Known {
					continue
				}
				end := scrapeEdge(taken, evals[j])
				for _, w := range []struct {
					length   time.Duration
					coverage float64
					estimate float64
				}{{k.Long, c.LongEvidence.Coverage, c.LongEvidence.Abandoned}, {k.Short, c.ShortEvidence.Coverage, c.ShortEvidence.Abandoned}} {
					if w.coverage < 1 {
						continue
					}
					start := scrapeEdge(taken, evals[j].Add(-w.length))
					edges := inPrefill(run.Requests, start) - inPrefill(run.Requests, end)
					truth := abandonedIn(run.Requests, start, end)
					if want := math.Max(0, float64(truth+edges)); w.estimate != want {
						t.Errorf("%s %s over %s at %v: abandoned estimate %v, want %v (%d abandoned, %+d from prompts in prefill at the edges)",
							sc.Name, k, w.length, s.Offset, w.estimate, want, truth, edges)
					}
					windows++
					if edges != 0 {
						off++
						worst = max(worst, edges, -edges)
					}
				}
			}
		}
		if windows == 0 {
			t.Errorf("%s: no window compared", sc.Name)
		}
		t.Logf("%s: %d windows, the prompts in prefill at the edges differ in %d (by up to %d)", sc.Name, windows, off, worst)
	}
}

// inPrefill counts the requests in prefill at t: scheduled, with no first
// token yet, not ended.
func inPrefill(rs sim.Truth, t time.Time) int {
	n := 0
	for _, r := range rs {
		if !r.Scheduled.IsZero() && !r.Scheduled.After(t) && (r.FirstToken.IsZero() || r.FirstToken.After(t)) && (r.Finish.IsZero() || r.Finish.After(t)) {
			n++
		}
	}
	return n
}

// abandonedIn counts the requests that got a first token and ended without
// a finish in (from, to], as the truth's population dates them.
func abandonedIn(rs sim.Truth, from, to time.Time) int {
	n := 0
	for _, r := range rs {
		if unfinished(r) && r.Finish.After(from) && !r.Finish.After(to) {
			n++
		}
	}
	return n
}
