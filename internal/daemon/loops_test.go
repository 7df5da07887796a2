package daemon

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

func parseConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(text), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ingestCounter stands in for the pipeline: it counts the results of each
// target.
type ingestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *ingestCounter) ingest(r scrape.Result) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Target]++
	return r.Err
}

func (c *ingestCounter) count(target string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[target]
}

// TestLoopDiffing applies configurations to the scrape-loop supervisor and
// checks that exactly the loops of added, removed and changed targets stop
// and start: a new loop scrapes first at its offset into the interval (not
// at the update), a kept loop keeps its schedule, a stopped loop never
// scrapes again, and the old loops have exited before the pipeline is
// reconfigured.
func TestLoopDiffing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		srv := map[string]*fakeTarget{}
		for _, h := range []string{"a", "b", "c", "d", "e"} {
			srv[h] = serveTarget(t, n, h)
		}
		url := func(h string) string { return h + " " + srv[h].url() }
		counter := &ingestCounter{n: map[string]int{}}
		loops := newScrapeLoops(slog.New(slog.DiscardHandler), n.dial, counter.ingest, func() {})
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() {
			result <- loops.run(ctx, parseConfig(t, testConfig([]string{url("a"), url("b"), url("c"), url("e")}, "")))
		}()
		advance(time.Minute)
		if !loops.allTried() {
			t.Errorf("not every loop tried after a minute")
		}

		// a unchanged, b's interval changed, c removed, d added, e's labels changed.
		nextText := testConfig([]string{url("a"), url("b") + " scrape_interval: 30s", url("d"), url("e") + " labels: {gpu: h100}"}, "")
		next := parseConfig(t, nextText)
		at := time.Now()
		var stoppedAtBetween int
		changes, err := loops.update(next, func() { stoppedAtBetween = counter.count("c") })
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"b", "c", "e"}; !slices.Equal(changes.stopped, want) {
			t.Errorf("stopped %v, want %v", changes.stopped, want)
		}
		if want := []string{"b", "d", "e"}; !slices.Equal(changes.started, want) {
			t.Errorf("started %v, want %v", changes.started, want)
		}
		synctest.Wait()
		for _, h := range []string{"a", "b", "c", "d", "e"} {
			if got := srv[h].scrapedSince(at); got != 0 {
				t.Errorf("%s scraped %d times at the update, want 0 (a new loop waits its offset)", h, got)
			}
		}
		advance(2 * time.Minute)
		for h, interval := range map[string]time.Duration{"b": 30 * time.Second, "d": 15 * time.Second, "e": 15 * time.Second} {
			offset := (&scrape.Loop{Target: h, Interval: interval}).Offset()
			if first := firstSince(srv[h].scrapedAt(), at); !first.Equal(at.Add(offset)) {
				t.Errorf("%s's first scrape after the update at %v, want at its offset %v after the update", h, first, offset)
			}
		}
		if got := srv["c"].scrapedSince(at); got != 0 || counter.count("c") != stoppedAtBetween {
			t.Errorf("removed target c scraped %d times after the update (%d results after its loop stopped), want 0", got, counter.count("c")-stoppedAtBetween)
		}
		// 2 minutes after the update: 8 scrapes at 15 s, 4 at 30 s, for the
		// new loops as for the kept one.
		for h, want := range map[string]int{"a": 8, "b": 4, "d": 8, "e": 8} {
			if got := srv[h].scrapedSince(at); got != want {
				t.Errorf("%s scraped %d times in the 2 minutes after the update, want %d", h, got, want)
			}
		}

		// The same configuration again changes nothing; a global setting
		// every loop depends on restarts them all.
		if changes, _ := loops.update(next, nil); len(changes.stopped)+len(changes.started) != 0 {
			t.Errorf("an identical configuration stopped %v and started %v", changes.stopped, changes.started)
		}
		bigger := parseConfig(t, nextText)
		bigger.Global.BodySizeLimit *= 2
		changes, _ = loops.update(bigger, nil)
		if want := []string{"a", "b", "d", "e"}; !slices.Equal(changes.stopped, want) || !slices.Equal(changes.started, want) {
			t.Errorf("a new body size limit stopped %v and started %v, want %v both", changes.stopped, changes.started, want)
		}

		cancel()
		if err := <-result; err != nil {
			t.Errorf("run returned %v after its context ended", err)
		}
		if _, err := loops.update(next, nil); err != errShuttingDown {
			t.Errorf("update after run returned: %v, want %v", err, errShuttingDown)
		}
		before := map[string]int{}
		for h, s := range srv {
			before[h] = len(s.scrapedAt())
		}
		advance(time.Minute)
		for h, s := range srv {
			if got := len(s.scrapedAt()) - before[h]; got != 0 {
				t.Errorf("%s scraped %d times after the supervisor stopped", h, got)
			}
		}
	})
}

// TestTargetErrorLoggedOnce: a target that stays down is logged once, and
// its recovery once.
func TestTargetErrorLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		r := startRig(t, n, testConfig([]string{"a http://down:80/metrics", "b " + a.url()}, ""))
		advance(3 * time.Minute)
		if got := countLines(r.log.String(), "scrape failed", "target=a"); got != 1 {
			t.Errorf("%d failures of target a logged in 3 minutes down, want 1:\n%s", got, r.log)
		}
		serveTarget(t, n, "down")
		advance(3 * time.Minute)
		if got := countLines(r.log.String(), "scrape recovered", "target=a"); got != 1 {
			t.Errorf("%d recoveries of target a logged, want 1:\n%s", got, r.log)
		}
		if r.targetReport("a").Up != true {
			t.Errorf("target a not up after its server came")
		}
	})
}

// TestReadyWaitsForTheReport: the daemon is ready once every running loop
// has finished a scrape and the published report holds each of their
// targets, tried; a loop's flag alone, set before the evaluation that
// follows its first scrape publishes, is not enough.
func TestReadyWaitsForTheReport(t *testing.T) {
	a := &runningLoop{target: config.Target{Name: "a"}}
	b := &runningLoop{target: config.Target{Name: "b"}}
	d := &Daemon{loops: &scrapeLoops{}}
	report := func(targets ...pipeline.TargetReport) { d.report.Store(&pipeline.Report{Targets: targets}) }
	check := func(what string, want bool) {
		t.Helper()
		if got := d.ready(); got != want {
			t.Errorf("%s: ready %v, want %v", what, got, want)
		}
	}
	check("no loops yet", false)
	d.loops.current.Store(&[]*runningLoop{a})
	check("a not tried", false)
	a.tried.Store(true)
	check("a tried, no report", false)
	report(pipeline.TargetReport{Name: "other", Tried: true})
	check("a tried, the report without a", false)
	report(pipeline.TargetReport{Name: "a"})
	check("a tried, the report from before its scrape", false)
	report(pipeline.TargetReport{Name: "a", Tried: true})
	check("a tried and reported", true)
	d.loops.current.Store(&[]*runningLoop{a, b})
	check("b added by a reload, not tried", false)
	b.tried.Store(true)
	check("b tried, not yet reported", false)
	report(pipeline.TargetReport{Name: "a", Tried: true}, pipeline.TargetReport{Name: "b", Tried: true})
	check("both reported", true)
}

// firstSince is the first of times at or after from (zero if none).
func firstSince(times []time.Time, from time.Time) time.Time {
	for _, at := range times {
		if !at.Before(from) {
			return at
		}
	}
	return time.Time{}
}
