package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestWindowsOfRenderedExpositions serves workloads live as a scraper sees
// them: a scrape is stamped when it starts, and the server renders its
// exposition later, anywhere in the scrape's duration (here up to 300 ms,
// the scrape's duration handed to the pipeline as the daemon does). What
// the counters of a scrape hold is then what had happened when it was
// rendered, while the spans are placed by their end time: a request that
// finished between a scrape's stamp and its rendering is in the counters
// of that scrape and after its stamp.
//
// Every window of every evaluation is checked against the simulator's
// truth between the renderings of its edge scrapes (what its counters
// counted), with no tolerance, under abandoned bad and excluded (and
// rejected bad and excluded where the server turns requests away): "all",
// the burn rate, the good and the abandoned requests, and, where the spans
// covered the window, the finished requests; a covered window must also
// hold the same finished and good requests between its stamps (where its
// spans are placed) as between its renderings. The spans of a window number
// its counters' finished requests also when as many requests ended in the
// sliver after one edge's stamp as after the other's, different requests:
// such a window must not be taken as exact unless they are alike. The run
// must hold such windows (the test fails otherwise), so that what keeps
// them out is exercised: the spans' calibration against the histograms.
func TestWindowsOfRenderedExpositions(t *testing.T) {
	for _, preset := range []string{"cancel15", "admission"} {
		t.Run(preset, func(t *testing.T) {
			c := serveRendered(t, preset, 300*time.Millisecond)
			t.Logf("%d windows from the spans and %d from the histograms checked; %d had requests end between a stamp and its rendering, %d covered ones as many after either edge",
				c.exact, c.hist, c.slivered, c.swapped)
			if c.exact == 0 || c.hist == 0 || c.slivered == 0 || c.swapped == 0 {
				t.Fatalf("%+v: the run shows nothing", c)
			}
		})
	}
}

// renderedCounts tallies what TestWindowsOfRenderedExpositions checked.
type renderedCounts struct {
	exact, hist int
	// slivered counts the windows whose truth between their edges' stamps
	// is not the truth between their renderings.
	slivered int
	// swapped counts the covered windows whose spans and counters held as
	// many requests but not the same ones.
	swapped int
}

// serveRendered plays a preset for six minutes, scraped a second apart
// ±20%, each exposition rendered up to sliver after its stamp, spans
// delivered between scrapes up to the span delay late, and checks every
// window of every evaluation against the truth between the renderings of
// its edges.
func serveRendered(t *testing.T, preset string, sliver time.Duration) renderedCounts {
	t.Helper()
	const runFor = 6 * time.Minute
	l := newLiveServe(t, preset, 2*time.Minute, 3, 9)
	rendered := map[int64]time.Time{} // by a scrape's stamp (Unix ns): when its exposition was rendered
	var c renderedCounts
	at := start
	for k := 0; at.Before(start.Add(runFor)); k++ {
		at = l.nextScrape(at)
		took := time.Duration(l.rng.Float64() * float64(sliver))
		l.sim.AdvanceTo(at.Add(took))
		rendered[at.UnixNano()] = at.Add(took)
		body, ct := l.sim.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.p.Ingest("gpu0", snap, took); err != nil {
			t.Fatal(err)
		}
		if at.Sub(start) < time.Minute || k%3 != 0 {
			continue
		}
		ev := at.Add(sliver + time.Duration(l.rng.Float64()*float64(liveInterval)/2))
		l.deliver(ev)
		checkRenderedWindows(t, l.p.Evaluate(ev).Targets[0].Models[0], l.sim.Truth(), l.slos, rendered, &c)
	}
	return c
}

// checkRenderedWindows checks every window of one evaluation against the
// truth between the renderings of its edge scrapes.
func checkRenderedWindows(t *testing.T, mr ModelReport, truth sim.Truth, slos []slo.SLO, rendered map[int64]time.Time, c *renderedCounts) {
	t.Helper()
	for _, wr := range mr.Windows {
		covered := false
		for _, tr := range mr.Traces {
			covered = covered || (tr.Nominal == wr.Window.Nominal && tr.Covered)
		}
		from, ok1 := rendered[wr.Window.Start.UnixNano()]
		to, ok2 := rendered[wr.Window.End.UnixNano()]
		if !ok1 || !ok2 {
			t.Fatalf("window %v (%v, %v]: not the stamps of two scrapes", wr.Window.Nominal, wr.Window.Start.Sub(start), wr.Window.End.Sub(start))
		}
		tw := truthOver(truth, from, to)
		where := fmt.Sprintf("window %v (%v, %v] rendered (%v, %v] (spans: %v)", wr.Window.Nominal,
			wr.Window.Start.Sub(start), wr.Window.End.Sub(start), from.Sub(start), to.Sub(start), covered)
		if wr.HasRejected && wr.Rejected != tw.rejected {
			t.Errorf("%s: rejected %v, truth %v", where, wr.Rejected, tw.rejected)
		}
		for _, r := range wr.SLOs {
			if i := indexOf(slos, r.Name); i >= 0 {
				checkEdgeSLO(t, where, r, slos[i], tw, covered)
			}
		}
		if covered {
			c.exact++
		} else {
			c.hist++
		}
		stamped := truthOver(truth, wr.Window.Start, wr.Window.End)
		if stamped != tw {
			c.slivered++
		}
		if covered && (stamped.finished != tw.finished || stamped.good != tw.good) {
			// The spans are placed between the stamps, the histograms
			// between the renderings: a window is exact only where both
			// hold the same finished and good requests.
			t.Errorf("%s: covered, but %d finished, %d good between the stamps and %d, %d between the renderings",
				where, stamped.finished, stamped.good, tw.finished, tw.good)
		}
		// Spans that number the counters' finished requests only because
		// as many requests ended in the sliver after one edge's stamp as
		// after the other's: the calibration against the histograms (over
		// the renderings) is what must keep these from being taken as
		// exact when the requests differ.
		before, after := truthOver(truth, wr.Window.Start, from).finished, truthOver(truth, wr.Window.End, to).finished
		if covered && before > 0 && before == after {
			c.swapped++
		}
	}
}
