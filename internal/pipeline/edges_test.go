package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestWindowPartsShareEdges serves the admission preset live: scrapes a
// second apart ±20%, streams cancelled after their first token, clients
// leaving the queue, requests turned away at admission, and every finished
// request's span delivered between two scrapes, up to the span delay after
// it finished. Four minutes in, a reload adds an SLO, which restarts the
// ledgers (their sums are of another SLO list) while the history goes on:
// for the next two minutes the history holds scrapes the ledger does not.
//
// Every window of every evaluation is checked against the simulator's
// truth over its own two scrapes, under the four populations (abandoned
// and rejected each bad or excluded), with no tolerance: "all", the burn
// rate, the good requests, the abandoned requests and, exactly, the
// rejected ones; where the spans covered the window, the finished requests
// too. A bound with lower = upper must then be the truth. Before every
// part of a window took the same edges (store.Store.WindowEdges), a
// window reaching before the restarted ledger's first checkpoint took its
// joint from that checkpoint on, and put the good requests and the
// abandoned ones of fewer scrapes beside the window's finished requests.
func TestWindowPartsShareEdges(t *testing.T) {
	const (
		reloadAt = 4 * time.Minute
		runFor   = 8 * time.Minute
	)
	l := newLiveServe(t, "admission", 3*time.Minute, 5, 7)
	var c edgeCounts
	reloaded := false
	at := start
	for k := 0; at.Before(start.Add(runFor)); k++ {
		at = l.nextScrape(at)
		l.sim.AdvanceTo(at)
		body, ct := l.sim.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.p.Ingest("gpu0", snap, 0); err != nil {
			t.Fatal(err)
		}
		if !reloaded && at.Sub(start) >= reloadAt {
			reloaded = true
			more := l.spec
			more.SLOs = append(append([]slo.SLO{}, l.slos...), slo.SLO{Name: "e2e", Goal: 0.9, Period: 24 * time.Hour,
				Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 20}}})
			if err := l.p.Reconfigure(more); err != nil {
				t.Fatal(err)
			}
		}
		if at.Sub(start) < 2*time.Minute || k%3 != 0 {
			continue
		}
		ev := at.Add(time.Duration(l.rng.Float64() * float64(liveInterval) / 2))
		l.deliver(ev)
		// Windows evaluated within their length of the reload reach before
		// the restarted ledgers' first checkpoint.
		reaches := reloaded && ev.Sub(start) < reloadAt+2*time.Minute+liveSpanDelay
		checkEdgeWindows(t, l.p.Evaluate(ev).Targets[0].Models[0], l.sim.Truth(), l.slos, reaches, &c)
	}
	t.Logf("%d windows from the spans and %d from the histograms checked (%d after the reload); rejected %v, abandoned %v summed over them",
		c.exact, c.hist, c.afterReload, c.rejected, c.abandoned)
	if c.exact == 0 || c.hist == 0 || c.afterReload == 0 || c.rejected == 0 || c.abandoned == 0 {
		t.Fatalf("%+v: the run shows nothing", c)
	}
}

// populations are the interactive SLO under the four populations.
func populations() []slo.SLO {
	var out []slo.SLO
	for _, ab := range []slo.Population{slo.AbandonedBad, slo.AbandonedExcluded} {
		for _, rej := range []slo.Population{slo.RejectedBad, slo.RejectedExcluded} {
			s := interactive
			s.Name, s.Abandoned, s.Rejected = fmt.Sprintf("ab%d-rej%d", ab, rej), ab, rej
			out = append(out, s)
		}
	}
	return out
}

// edgeCounts tallies what TestWindowPartsShareEdges checked.
type edgeCounts struct {
	exact, hist, afterReload int
	rejected, abandoned      float64
}

// edgeTruth is what happened over one window's scrapes.
type edgeTruth struct {
	finished            int
	good                int
	abandoned, rejected float64
}

// truthOver counts the requests of the window (from, to] as the
// simulator saw them.
func truthOver(truth sim.Truth, from, to time.Time) edgeTruth {
	fin := simtruth.FinishedIn(truth, from, to)
	w := edgeTruth{finished: len(fin),
		abandoned: float64(len(simtruth.AbandonedIn(truth, from, to)) + len(simtruth.LostIn(truth, from, to))),
		rejected:  float64(len(simtruth.RejectedIn(truth, from, to)))}
	for _, r := range fin {
		if meetsInteractive(r) {
			w.good++
		}
	}
	return w
}

// checkEdgeWindows checks every window of one evaluation against the truth
// over its own scrapes; afterReload says the windows reach before the
// restarted ledgers.
func checkEdgeWindows(t *testing.T, mr ModelReport, truth sim.Truth, slos []slo.SLO, afterReload bool, c *edgeCounts) {
	t.Helper()
	for _, wr := range mr.Windows {
		covered := false
		for _, tr := range mr.Traces {
			covered = covered || (tr.Nominal == wr.Window.Nominal && tr.Covered)
		}
		tw := truthOver(truth, wr.Window.Start, wr.Window.End)
		where := fmt.Sprintf("window %v (%v, %v] (spans: %v)", wr.Window.Nominal, wr.Window.Start.Sub(start), wr.Window.End.Sub(start), covered)
		if !wr.HasRejected || wr.Rejected != tw.rejected {
			t.Errorf("%s: rejected %v (present %v), truth %v", where, wr.Rejected, wr.HasRejected, tw.rejected)
		}
		for _, r := range wr.SLOs {
			if i := indexOf(slos, r.Name); i >= 0 { // not the SLO the reload added
				checkEdgeSLO(t, where, r, slos[i], tw, covered)
			}
		}
		if covered {
			c.exact++
		} else {
			c.hist++
		}
		if afterReload {
			c.afterReload++
		}
		c.rejected += tw.rejected
		c.abandoned += tw.abandoned
	}
}

// checkEdgeSLO checks one SLO's result over a window against the truth
// over the same scrapes, no tolerance.
func checkEdgeSLO(t *testing.T, where string, r slo.SLOResult, s slo.SLO, tw edgeTruth, covered bool) {
	t.Helper()
	pop := float64(tw.finished)
	if s.Abandoned == slo.AbandonedBad {
		pop += tw.abandoned
	}
	if s.Rejected == slo.RejectedBad {
		pop += tw.rejected
	}
	inside := func(what string, b slo.Bounded, v float64) {
		if v < b.Lower || v > b.Upper {
			t.Errorf("%s SLO %s: %s %+v, truth %v", where, r.Name, what, b, v)
		}
	}
	if r.HasAbandoned {
		inside("abandoned", r.Abandoned, tw.abandoned)
	}
	if g, ok := r.GoodRequests[slo.AllKey]; ok {
		inside("good requests", g, float64(tw.good))
	}
	if covered && r.Requests != float64(tw.finished) {
		t.Errorf("%s SLO %s: %v finished from the spans, truth %d", where, r.Name, r.Requests, tw.finished)
	}
	all, ok := r.Objectives[slo.AllKey]
	if !ok || pop == 0 {
		return
	}
	truth := float64(tw.good) / pop
	inside("all", all, truth)
	if r.HasBurnRate {
		inside("burn rate", r.BurnRate, (1-truth)/(1-s.Goal))
	}
}
