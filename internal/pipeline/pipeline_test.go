package pipeline

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

var interactive = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}},
	Goal:       0.99,
	Period:     24 * time.Hour,
}

// fastPage is a burn-rate alert scaled down so a test sees it within minutes.
var fastPage = BurnAlert{SLO: "interactive", Severity: "page", Long: 10 * time.Minute, Short: 2 * time.Minute, Factor: 5, For: time.Minute}

func testSpec(t testing.TB) Spec {
	t.Helper()
	return Spec{
		Targets:   []TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second, HourlyCost: 2}},
		SLOs:      []slo.SLO{interactive},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.99},
		Currency:  "USD",
		MaxModels: 10,
		Retention: history.NewRetention(10*time.Minute, 24*time.Hour),
		Alerts:    []BurnAlert{fastPage},
	}
}

// phased builds a demo-like simulator whose workload runs the given phases once.
func phased(t testing.TB, phases ...sim.Phase) *sim.Sim {
	t.Helper()
	cfg := sim.DemoConfig(7, start)
	cfg.Models[0].Workload.Phases = phases
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scrapeInto advances the simulator to at, parses its exposition and ingests it.
func scrapeInto(t testing.TB, p *Pipeline, s *sim.Sim, at time.Time) {
	t.Helper()
	s.AdvanceTo(at)
	body, ct := s.Exposition()
	snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
	if err != nil {
		t.Fatalf("parse at %v: %v", at, err)
	}
	if err := p.Ingest("gpu0", snap, 0); err != nil {
		t.Fatalf("ingest at %v: %v", at, err)
	}
}

func firing(rep *Report, name string) bool {
	for _, a := range rep.Firing() {
		if a.Name() == name {
			return true
		}
	}
	return false
}

// TestBurnAlertLifecycle replays a healthy period, an overload and a recovery
// on a virtual clock: the page alert must stay silent while healthy, fire
// within a few evaluations of the breach, and resolve after recovery.
func TestBurnAlertLifecycle(t *testing.T) {
	healthy := sim.Phase{Duration: 30 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate}
	overload := sim.Phase{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: 4 * sim.DemoRate}
	recovery := sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate}
	s := phased(t, healthy, overload, recovery)
	p := New(testSpec(t))
	step := 15 * time.Second
	breach := start.Add(30 * time.Minute)
	recovered := breach.Add(10 * time.Minute)
	var firedAt, resolvedAt time.Time
	for at := start.Add(step); at.Before(start.Add(80 * time.Minute)); at = at.Add(step) {
		scrapeInto(t, p, s, at)
		rep := p.Evaluate(at)
		on := firing(rep, AlertBurnRate)
		switch {
		case at.Before(breach) && on:
			t.Fatalf("page fired at %v, during the healthy period", at.Sub(start))
		case on && firedAt.IsZero():
			firedAt = at
		case !on && !firedAt.IsZero() && resolvedAt.IsZero():
			resolvedAt = at
		}
	}
	if firedAt.IsZero() {
		t.Fatal("page never fired during the overload")
	}
	// The short window (2m) must fill with bad requests and the for (1m) pass.
	if lag := firedAt.Sub(breach); lag > 6*time.Minute {
		t.Errorf("page fired %v after the breach began, want within 6m", lag)
	}
	if resolvedAt.IsZero() {
		t.Fatal("page never resolved after the recovery")
	}
	if resolvedAt.Before(recovered) {
		t.Errorf("page resolved at %v, before the overload ended", resolvedAt.Sub(start))
	}
	if lag := resolvedAt.Sub(recovered); lag > 15*time.Minute {
		t.Errorf("page resolved %v after recovery, want within 15m", lag)
	}
}

// TestWindowsMatchTruth checks exact window counts and throughput against the
// simulator's ground truth, and that every published bound holds the truth.
func TestWindowsMatchTruth(t *testing.T) {
	s := phased(t, sim.Phase{Duration: 20 * time.Minute, Kind: sim.Poisson, Rate: 2 * sim.DemoRate})
	p := New(testSpec(t))
	step := 15 * time.Second
	end := start.Add(20 * time.Minute)
	for at := start.Add(step); !at.After(end); at = at.Add(step) {
		scrapeInto(t, p, s, at)
	}
	rep := p.Evaluate(end)
	truth := s.Truth()
	m := rep.Targets[0].Models[0]
	for _, w := range m.Windows {
		from, to := w.Window.Start, w.Window.End
		fin := simtruth.FinishedIn(truth, from, to)
		if got, want := w.Requests[slo.E2E], float64(len(fin)); got != want {
			t.Errorf("window %v: e2e requests %v, truth %v", w.Window.Nominal, got, want)
		}
		tokens := float64(simtruth.TokensIn(truth, from, to)) / to.Sub(from).Seconds()
		if !close(w.GenerationTokensPerSecond, tokens) {
			t.Errorf("window %v: throughput %v, truth %v", w.Window.Nominal, w.GenerationTokensPerSecond, tokens)
		}
		good, goodTokens := 0, 0
		for _, r := range fin {
			if r.TTFT() <= 0.5 && r.TPOT() <= 0.05 {
				good++
				goodTokens += r.OutputTokens
			}
		}
		res := w.SLOs[0]
		all := res.Objectives[slo.AllKey]
		ratio := float64(good) / float64(len(fin))
		if ratio < all.Lower-1e-12 || ratio > all.Upper+1e-12 {
			t.Errorf("window %v: true joint attainment %v outside [%v, %v]", w.Window.Nominal, ratio, all.Lower, all.Upper)
		}
		gt := float64(goodTokens) / to.Sub(from).Seconds()
		if g := res.GoodputTokensPerSecond; gt < g.Lower-1e-9 || gt > g.Upper+1e-9 {
			t.Errorf("window %v: true goodput %v tok/s outside [%v, %v]", w.Window.Nominal, gt, g.Lower, g.Upper)
		}
	}
	if len(m.GoodRequests) == 0 {
		t.Error("no good-request totals accumulated")
	}
	for _, b := range m.Budgets {
		if !b.Known || b.Remaining.Lower > b.Remaining.Estimate || b.Remaining.Estimate > b.Remaining.Upper {
			t.Errorf("budget %+v: not known or bounds out of order", b)
		}
	}
}

func close(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func TestTargetDownAlertAndFailures(t *testing.T) {
	p := New(testSpec(t))
	at := start
	for i := 0; i < 5; i++ {
		at = at.Add(15 * time.Second)
		p.RecordFailure("gpu0", "connection", nil, at, time.Millisecond)
		rep := p.Evaluate(at)
		tr := rep.Targets[0]
		if tr.Up || !tr.Tried || tr.Failures["connection"] != float64(i+1) {
			t.Fatalf("after %d failures: %+v", i+1, tr)
		}
		// Three intervals must pass before the alert fires.
		if want := i >= 3; firing(rep, AlertTargetDown) != want {
			t.Fatalf("after %d failures: firing=%v, want %v", i+1, !want, want)
		}
	}
}

func TestModelCap(t *testing.T) {
	spec := testSpec(t)
	spec.MaxModels = 1
	cfg := sim.DemoConfig(3, start)
	second := cfg.Models[0]
	second.Name = "other"
	cfg.Models = append(cfg.Models, second)
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New(spec)
	for i := 1; i <= 3; i++ {
		scrapeInto(t, p, s, start.Add(time.Duration(i)*15*time.Second))
	}
	tr := p.Evaluate(start.Add(45 * time.Second)).Targets[0]
	if len(tr.Models) != 1 || tr.ModelsDropped != 3 {
		t.Fatalf("models %d, dropped %v; want 1 and 3", len(tr.Models), tr.ModelsDropped)
	}
}

func TestReconfigureKeepsHistoryAndStateRoundTrip(t *testing.T) {
	s := phased(t, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	spec := testSpec(t)
	p := New(spec)
	for i := 1; i <= 20; i++ {
		scrapeInto(t, p, s, start.Add(time.Duration(i)*15*time.Second))
	}
	end := start.Add(5 * time.Minute)
	before := p.Evaluate(end).Targets[0].Models[0].Windows[1].Requests[slo.E2E]
	allBefore := p.Evaluate(end).Targets[0].Models[0].Windows[1].SLOs[0].GoodRequests[slo.AllKey]

	spec.SLOs[0].Goal = 0.95
	if err := p.Reconfigure(spec); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	if got := p.Evaluate(end).Targets[0].Models[0].Windows[1].Requests[slo.E2E]; got != before {
		t.Errorf("after a reload that kept the target: %v requests, want %v", got, before)
	}

	data, err := p.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	fresh := New(spec)
	if n, err := fresh.UnmarshalState(data); err != nil || n != 1 {
		t.Fatalf("UnmarshalState: %d targets, %v", n, err)
	}
	if got := fresh.Evaluate(end).Targets[0].Models[0].Windows[1].Requests[slo.E2E]; got != before {
		t.Errorf("after a state round trip: %v requests, want %v", got, before)
	}
	// The ledger survives too: the joint of the window is the same.
	if got := fresh.Evaluate(end).Targets[0].Models[0].Windows[1].SLOs[0].GoodRequests[slo.AllKey]; got != allBefore || got.Upper <= 0 {
		t.Errorf("after a state round trip: all %+v, want %+v", got, allBefore)
	}
	if _, err := fresh.UnmarshalState(data[:len(data)/2]); err == nil {
		t.Error("a truncated state was accepted")
	}
	if _, err := fresh.UnmarshalState([]byte("garbage")); err == nil {
		t.Error("a garbage state was accepted")
	}

	moved := spec
	moved.Targets = []TargetSpec{spec.Targets[0]}
	moved.Targets[0].URL = "http://127.0.0.1:9999/metrics"
	if err := p.Reconfigure(moved); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	if models := p.Evaluate(end).Targets[0].Models; len(models) != 0 {
		t.Errorf("a target whose URL changed kept %d models of history", len(models))
	}
}

func TestIngestRejectsClockGoingBack(t *testing.T) {
	s := phased(t, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	p := New(testSpec(t))
	scrapeInto(t, p, s, start.Add(time.Minute))
	body, ct := s.Exposition()
	snap, err := scrape.Parse(body, ct, scrape.VLLM, start.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ingest("gpu0", snap, 0); err == nil {
		t.Fatal("a snapshot older than the history was accepted")
	}
	tr := p.Evaluate(start.Add(time.Minute)).Targets[0]
	if tr.Failures["out_of_order"] != 1 {
		t.Errorf("failures %v, want out_of_order 1", tr.Failures)
	}
}

func TestOffEdgeThresholdWarning(t *testing.T) {
	spec := testSpec(t)
	spec.SLOs[0].Objectives = append(spec.SLOs[0].Objectives, slo.Objective{Metric: slo.E2E, Threshold: 12})
	s := phased(t, sim.Phase{Duration: time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	p := New(spec)
	scrapeInto(t, p, s, start.Add(15*time.Second))
	scrapeInto(t, p, s, start.Add(30*time.Second))
	w := p.Evaluate(start.Add(30 * time.Second)).Targets[0].Warnings
	// ttft 0.5 and tpot 0.05 are vLLM edges; e2e 12 s lies between 10 and 15.
	if len(w) != 1 || !strings.Contains(w[0], "e2e <= 12s") || !strings.Contains(w[0], "10 and 15") {
		t.Errorf("warnings %q, want one about e2e between 10 and 15", w)
	}
}

// TestWarmupKeepsRestartOutOfSLOs restarts vLLM with a slow first minute (the
// overload stands in for CUDA-graph capture): with warm-up, the SLO series
// leave those observations out while the latency series still count them.
func TestWarmupKeepsRestartOutOfSLOs(t *testing.T) {
	restartAt := start.Add(5 * time.Minute)
	cfg := sim.DemoConfig(7, start)
	cfg.Models[0].Workload.Phases = []sim.Phase{{Duration: 20 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate}}
	cfg.Models[0].Workload.Repeat = false
	// vLLM restarts a second before the scrape at restartAt.
	cfg.Restarts = []sim.ScheduledRestart{{At: restartAt.Add(-time.Second).Sub(start)}}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.Targets[0].Warmup = 2 * time.Minute
	p := New(spec)
	plain := New(testSpec(t))
	step := 15 * time.Second
	var lastWarm, lastPlain ModelReport
	for at := start.Add(step); !at.After(start.Add(9 * time.Minute)); at = at.Add(step) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		for _, pp := range []*Pipeline{p, plain} {
			snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
			if err != nil {
				t.Fatal(err)
			}
			if err := pp.Ingest("gpu0", snap, 0); err != nil {
				t.Fatal(err)
			}
		}
		lastWarm = p.Evaluate(at).Targets[0].Models[0]
		lastPlain = plain.Evaluate(at).Targets[0].Models[0]
	}
	// The 5m window ending at 9m covers the restart at 5m and its 2m warm-up.
	w, pw := lastWarm.Windows[1], lastPlain.Windows[1]
	if w.Requests[slo.E2E] != pw.Requests[slo.E2E] {
		t.Errorf("latency series differ with warm-up: %v vs %v requests", w.Requests[slo.E2E], pw.Requests[slo.E2E])
	}
	if w.SLOs[0].Requests >= pw.SLOs[0].Requests {
		t.Errorf("warm-up kept %v finished requests in the SLO window, without it %v: want fewer", w.SLOs[0].Requests, pw.SLOs[0].Requests)
	}
	truth := simtruth.FinishedIn(s.Truth(), w.Window.Start, w.Window.End)
	warmEnd := restartAt.Add(-time.Second).Add(2 * time.Minute)
	kept := 0
	for _, r := range truth {
		if r.Finished() && (r.Finish.Before(restartAt.Add(-time.Second)) || r.Finish.After(warmEnd)) {
			kept++
		}
	}
	// The warm-up ends at the first scrape at or after restart+2m, so the SLO
	// window holds at most the requests finished outside the warm-up.
	if got := w.SLOs[0].Requests; got > float64(kept) {
		t.Errorf("SLO window holds %v requests, more than the %d finished outside the warm-up", got, kept)
	}
}

// TestReconfigureRetentionAndTotals: a reload that lengthens the windows moves
// the history to the longer retention (it then fills up to the new length),
// and the good-request totals of an SLO whose definition changed start over.
func TestReconfigureRetentionAndTotals(t *testing.T) {
	s := phased(t, sim.Phase{Duration: 10 * time.Hour, Kind: sim.Poisson, Rate: sim.DemoRate})
	spec := testSpec(t)
	spec.Retention = history.NewRetention(time.Hour, 2*time.Hour)
	p := New(spec)
	step := time.Minute
	at := start
	for i := 0; i < 90; i++ {
		at = at.Add(step)
		scrapeInto(t, p, s, at)
	}
	if len(p.Evaluate(at).Targets[0].Models[0].GoodRequests) == 0 {
		t.Fatal("no good totals before the reload")
	}
	longer := spec
	longer.Windows = []time.Duration{6 * time.Hour}
	longer.Retention = history.NewRetention(6*time.Hour, 24*time.Hour)
	longer.SLOs = []slo.SLO{interactive}
	longer.SLOs[0].Goal = 0.9
	if err := p.Reconfigure(longer); err != nil {
		t.Fatalf("reconfigure: %v", err)
	}
	if g := p.Evaluate(at).Targets[0].Models[0].GoodRequests; len(g) != 0 {
		t.Errorf("totals of a changed SLO survived the reload: %+v", g)
	}
	for i := 0; i < 6*60; i++ {
		at = at.Add(step)
		scrapeInto(t, p, s, at)
	}
	w := p.Evaluate(at).Targets[0].Models[0].Windows[0]
	if got := w.Window.End.Sub(w.Window.Start); got != 6*time.Hour {
		t.Errorf("6h window spans %v after the reload, want 6h", got)
	}
}

// TestBurnCheckWithoutItsSLO: an alert naming an SLO the spec does not
// define is never active and says why, while the alert beside it is
// evaluated as usual.
func TestBurnCheckWithoutItsSLO(t *testing.T) {
	spec := testSpec(t)
	orphan := fastPage
	orphan.SLO = "batch"
	spec.Alerts = append(spec.Alerts, orphan)
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: 4 * sim.DemoRate})
	p := New(spec)
	step := 15 * time.Second
	var rep *Report
	for at := start.Add(step); !at.After(start.Add(15 * time.Minute)); at = at.Add(step) {
		scrapeInto(t, p, s, at)
		rep = p.Evaluate(at)
	}
	burns := rep.Targets[0].Models[0].Burns
	if len(burns) != 2 {
		t.Fatalf("%d burn checks, want 2", len(burns))
	}
	if b := burns[0]; !b.Known || b.Reason != "" || !b.Active() {
		t.Errorf("the overloaded SLO's alert: known %v, active %v, reason %q; want known and active", b.Known, b.Active(), b.Reason)
	}
	if b := burns[1]; b.Known || b.Active() || !strings.Contains(b.Reason, `no SLO "batch"`) {
		t.Errorf("the orphan alert: known %v, active %v, reason %q; want unknown, inactive, naming the SLO", b.Known, b.Active(), b.Reason)
	}
}

// TestBurnCheckActiveNeedsEvidence: a wide upper bound alone (requests the
// window cannot see) does not page; the observed bad requests must exceed
// the factor too, in both windows.
func TestBurnCheckActiveNeedsEvidence(t *testing.T) {
	alert := BurnAlert{Factor: 14.4}
	wide := slo.Bounded{Estimate: 0, Lower: 0, Upper: 95}
	cases := []struct {
		name                 string
		long, short          slo.Bounded
		observedL, observedS float64
		want                 bool
	}{
		{"vacuous bound, nothing observed bad", wide, wide, 0, 0, false},
		{"observed burn in the long window only", wide, wide, 20, 3, false},
		{"observed burn in both windows", wide, wide, 20, 30, true},
		{"observed but the upper bound says no", slo.Exact(10), slo.Exact(10), 20, 30, false},
	}
	for _, c := range cases {
		check := BurnCheck{Alert: alert, Long: c.long, Short: c.short, Known: true,
			LongEvidence: slo.Evidence{Observed: c.observedL}, ShortEvidence: slo.Evidence{Observed: c.observedS}}
		if got := check.Active(); got != c.want {
			t.Errorf("%s: Active() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCoverageSaysWhatNumbersRestOn: one minute after the first scrape, the
// error budget of a one-day SLO rests on a minute of it, the burn check's
// windows on a minute of theirs, and the evidence counts the requests.
func TestCoverageSaysWhatNumbersRestOn(t *testing.T) {
	s := phased(t, sim.Phase{Kind: sim.Poisson, Rate: sim.DemoRate})
	p := New(testSpec(t))
	for at := start; !at.After(start.Add(time.Minute)); at = at.Add(15 * time.Second) {
		scrapeInto(t, p, s, at)
	}
	rep := p.Evaluate(start.Add(time.Minute))
	m := rep.Targets[0].Models[0]
	if got, want := m.Budgets[0].Coverage, float64(time.Minute)/float64(24*time.Hour); got != want {
		t.Errorf("budget coverage = %v, want %v", got, want)
	}
	c := m.Burns[0]
	if got, want := c.LongEvidence.Coverage, 0.1; got != want {
		t.Errorf("10m window coverage = %v, want %v", got, want)
	}
	if got, want := c.ShortEvidence.Coverage, 0.5; got != want {
		t.Errorf("2m window coverage = %v, want %v", got, want)
	}
	finished := float64(len(simtruth.FinishedIn(s.Truth(), start, start.Add(time.Minute))))
	if c.LongEvidence.Requests != finished {
		t.Errorf("evidence counts %v finished requests, the truth %v", c.LongEvidence.Requests, finished)
	}
	if c.Active() {
		t.Errorf("a healthy minute pages: %+v", c)
	}
}

// TestPartialScrapeCountsRejection feeds a two-model target a scrape in which
// one model's TTFT histogram lost its +Inf bucket: the target stays up, the
// rejection is counted by family and reason and named in LastError, the
// other model keeps its point, and the next intact scrape clears the error.
func TestPartialScrapeCountsRejection(t *testing.T) {
	cfg := sim.DemoConfig(3, start)
	second := cfg.Models[0]
	second.Name = "other"
	cfg.Models = append(cfg.Models, second)
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New(testSpec(t))
	scrapeInto(t, p, s, start.Add(15*time.Second))
	at := start.Add(30 * time.Second)
	s.AdvanceTo(at)
	body, ct := s.Exposition()
	var kept []string
	for _, l := range strings.Split(string(body), "\n") {
		if !(strings.HasPrefix(l, "vllm:time_to_first_token_seconds_bucket{") && strings.Contains(l, `le="+Inf"`) && strings.Contains(l, `model_name="other"`)) {
			kept = append(kept, l)
		}
	}
	snap, err := scrape.Parse([]byte(strings.Join(kept, "\n")), ct, scrape.VLLM, at)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(snap.Rejected) != 1 || snap.Rejected[0].Model != "other" {
		t.Fatalf("rejected %+v, want other's TTFT", snap.Rejected)
	}
	if err := p.Ingest("gpu0", snap, 0); err != nil {
		t.Fatal(err)
	}
	tr := p.Evaluate(at).Targets[0]
	want := FamilyRejection{Family: string(scrape.TTFT), Reason: scrape.ReasonInvalidHistogram}
	if !tr.Up || tr.Rejections[want] != 1 || len(tr.Rejections) != 1 {
		t.Fatalf("up %v, rejections %v; want up and %v once", tr.Up, tr.Rejections, want)
	}
	if !strings.Contains(tr.LastError, `model "other": invalid_histogram`) || !strings.Contains(tr.LastError, "no +Inf bucket") {
		t.Errorf("LastError %q does not name the rejection", tr.LastError)
	}
	if len(tr.Failures) != 0 {
		t.Errorf("failures %v: a partial scrape is not a failed one", tr.Failures)
	}
	scrapeInto(t, p, s, start.Add(45*time.Second))
	tr = p.Evaluate(start.Add(45 * time.Second)).Targets[0]
	if tr.LastError != "" || tr.Rejections[want] != 1 || len(tr.Models) != 2 {
		t.Errorf("after an intact scrape: LastError %q, rejections %v, %d models", tr.LastError, tr.Rejections, len(tr.Models))
	}
}

// TestWindowStartCrossesOneFailedScrapeUnderJitter checks the gap a
// window's start may be taken across: one failed scrape between two
// scrapes each taken a fifth of the interval off their nominal time (36 s
// apart at 15 s) is crossed, so the window starts at the scrape before
// the gap, as the rules' windows do; two failed scrapes are
// not (51 s apart here), and the window starts after them.
func TestWindowStartCrossesOneFailedScrapeUnderJitter(t *testing.T) {
	step, jitter := 15*time.Second, 3*time.Second
	for _, tc := range []struct {
		failed    []int
		wantStart time.Time
	}{
		{[]int{8}, start.Add(7*step - jitter)},
		{[]int{8, 9}, start.Add(10*step + jitter)},
	} {
		s := phased(t, sim.Phase{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate})
		p := New(testSpec(t))
		for k := 1; k <= 13; k++ {
			at := start.Add(time.Duration(k) * step)
			switch {
			case slices.Contains(tc.failed, k):
				continue
			case slices.Contains(tc.failed, k+1):
				at = at.Add(-jitter)
			case slices.Contains(tc.failed, k-1):
				at = at.Add(jitter)
			}
			scrapeInto(t, p, s, at)
		}
		// The 1m window read at 13 intervals starts at 9 intervals, inside the gap.
		rep := p.Evaluate(start.Add(13 * step))
		for _, w := range rep.Targets[0].Models[0].Windows {
			if w.Window.Nominal == time.Minute && !w.Window.Start.Equal(tc.wantStart) {
				t.Errorf("scrapes %v failed: the 1m window starts at %v, want %v", tc.failed, w.Window.Start.Sub(start), tc.wantStart.Sub(start))
			}
		}
	}
}
