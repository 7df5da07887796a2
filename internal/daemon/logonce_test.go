package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

// handleRig feeds results straight to the supervisor's handle, as a loop
// does, and keeps the log.
func handleRig() (*scrapeLoops, *runningLoop, *testlog.Buffer) {
	log := &testlog.Buffer{}
	s := newScrapeLoops(slog.New(slog.NewTextHandler(log, nil)), nil, func(r scrape.Result) error { return r.Err }, func() {})
	return s, &runningLoop{target: config.Target{Name: "a"}}, log
}

// resetErr is a connection reset as net/http reports it: the text carries
// the ephemeral port of the connection, new at every scrape.
func resetErr(port int) error {
	return &scrape.FetchError{Reason: scrape.ReasonRead, Err: fmt.Errorf(
		`target "a": GET http://127.0.0.1:8000/metrics: read tcp 127.0.0.1:%d->127.0.0.1:8000: read: connection reset by peer`, port)}
}

// TestFloodingErrorLoggedOnce: a target that resets the connection at every
// scrape (a new port in each message), or keeps sending decreasing buckets
// (live counts in each message), is logged once per change of state, not
// once per scrape.
func TestFloodingErrorLoggedOnce(t *testing.T) {
	s, l, log := handleRig()
	for i := range 100 {
		s.handle(l, scrape.Result{Target: "a", Err: resetErr(40000 + i)})
	}
	if got := countLines(log.String(), "scrape failed", "target=a"); got != 1 {
		t.Errorf("%d lines for 100 connection resets, want 1:\n%s", got, log)
	}
	for i := range 100 {
		s.handle(l, scrape.Result{Target: "a", Err: &scrape.ParseError{Reason: scrape.ReasonInvalidHistogram, Line: 40 + i%3,
			Family: "vllm:e2e_request_latency_seconds", Err: fmt.Errorf("bucket le=1 count %d below le=0.5 count %d", 1000+i, 1200+2*i)}})
	}
	if got := countLines(log.String(), "scrape failed", "reason=invalid_histogram"); got != 1 {
		t.Errorf("%d lines for 100 scrapes with decreasing buckets, want 1 (a new reason is logged once):\n%s", got, log)
	}
	s.handle(l, scrape.Result{Target: "a", Snapshot: &scrape.Snapshot{}})
	s.handle(l, scrape.Result{Target: "a", Snapshot: &scrape.Snapshot{}})
	if got := countLines(log.String(), "scrape recovered"); got != 1 {
		t.Errorf("%d recoveries logged, want 1:\n%s", got, log)
	}
	if got := countLines(log.String(), "scrape failed"); got != 2 {
		t.Errorf("%d failures logged in all, want 2", got)
	}
}

// TestRejectionsLoggedOnce: a good scrape that leaves one model out because
// its buckets decrease (the counts in the message change at every scrape)
// is logged once; another model's rejection is a change, logged again; the
// end of the rejections is logged once.
func TestRejectionsLoggedOnce(t *testing.T) {
	s, l, log := handleRig()
	rejected := func(i int, models ...string) *scrape.Snapshot {
		snap := &scrape.Snapshot{}
		for _, m := range models {
			snap.Rejected = append(snap.Rejected, scrape.Rejection{Family: scrape.TTFT, Model: m, Err: &scrape.ParseError{
				Reason: scrape.ReasonInvalidHistogram, Line: 10 + i, Family: "vllm:time_to_first_token_seconds", Model: m,
				Err: fmt.Errorf("bucket count %d below %d", i, i+5)}})
		}
		return snap
	}
	for i := range 50 {
		s.handle(l, scrape.Result{Target: "a", Snapshot: rejected(i, "m1")})
	}
	if got := countLines(log.String(), "models left out"); got != 1 {
		t.Errorf("%d lines for 50 scrapes rejecting model m1, want 1:\n%s", got, log)
	}
	for i := range 50 {
		s.handle(l, scrape.Result{Target: "a", Snapshot: rejected(i, "m1", "m2")})
	}
	if got := countLines(log.String(), "models left out"); got != 2 {
		t.Errorf("%d lines once m2 is rejected too, want 2:\n%s", got, log)
	}
	for range 3 {
		s.handle(l, scrape.Result{Target: "a", Snapshot: &scrape.Snapshot{}})
	}
	if got := countLines(log.String(), "no model left out"); got != 1 {
		t.Errorf("%d lines for the end of the rejections, want 1:\n%s", got, log)
	}
}

// TestTargetStatesLoggedOnce: a history that starts dropping points for its
// memory limit is logged once, however many it drops afterwards; a target
// that serves none of its profile's families is logged once, and its return
// once.
func TestTargetStatesLoggedOnce(t *testing.T) {
	log := &testlog.Buffer{}
	d := &Daemon{logger: slog.New(slog.NewTextHandler(log, nil)), logged: map[string]loggedTarget{}}
	report := func(dropped int, found bool) *pipeline.Report {
		tr := pipeline.TargetReport{Name: "a", Up: true, History: history.Usage{Bytes: 1 << 20, Limit: 1 << 20, DroppedPoints: dropped}}
		if found {
			tr.Found = map[string]string{"ttft": "vllm:time_to_first_token_seconds"}
		} else {
			tr.Missing = []string{"ttft", "e2e"}
		}
		return &pipeline.Report{Targets: []pipeline.TargetReport{tr}}
	}
	for range 5 {
		d.logTargetStates(report(0, true))
	}
	for i := range 10 {
		d.logTargetStates(report(1+i*7, true))
	}
	if got := countLines(log.String(), "history over its memory limit", "target=a"); got != 1 {
		t.Errorf("%d lines for a history dropping points, want 1:\n%s", got, log)
	}
	for range 10 {
		d.logTargetStates(report(70, false))
	}
	d.logTargetStates(report(70, true))
	if got := countLines(log.String(), "serves none of its profile's families"); got != 1 {
		t.Errorf("%d lines for a target without its families, want 1:\n%s", got, log)
	}
	if got := countLines(log.String(), "families again"); got != 1 {
		t.Errorf("%d lines for the families' return, want 1:\n%s", got, log)
	}
}

// TestLogKey: numbers do not make a new key, words and reasons do.
func TestLogKey(t *testing.T) {
	if logKey(resetErr(1)) != logKey(resetErr(65535)) {
		t.Errorf("two resets on different ports key differently")
	}
	if logKey(resetErr(1)) == logKey(&scrape.FetchError{Reason: scrape.ReasonConnection, Err: errors.New("read tcp 127.0.0.1:1->127.0.0.1:8000: read: connection reset by peer")}) {
		t.Errorf("a different reason keys alike")
	}
	if logKey(nil) != "" {
		t.Errorf("no error keys as %q", logKey(nil))
	}
}
