package sim_test

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// cancelConfig is smallConfig under load, with clients that cancel both
// after the first token (skewed to slow requests) and before it.
func cancelConfig(seed uint64) sim.Config {
	c := smallConfig(seed)
	c.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Bursty, Rate: 40, RateOff: 2, On: 20 * time.Second, Off: 20 * time.Second}}
	c.Models[0].Engine.MaxNumSeqs = 24
	c.Models[0].Workload.Cancel = sim.Cancellation{
		Share: 0.2, TTFTRef: 200 * time.Millisecond, Skew: 1,
		AtFirstToken: 0.4, Reaction: 30 * time.Millisecond,
		BeforeFirstToken: 0.5, Patience: 2 * time.Second,
	}
	return c
}

// TestCancellationExposition checks, at uneven stops, that every exposed
// series equals the truth when clients cancel: abandoned streams in TTFT, ITL
// and the token counters but in no finish histogram, requests cancelled
// before their first token nowhere, and the gauges without any of them.
func TestCancellationExposition(t *testing.T) {
	for _, countAborts := range []bool{false, true} {
		cfg := cancelConfig(21)
		cfg.CountAborts = countAborts
		s := mustNew(t, cfg)
		for _, d := range []time.Duration{
			3 * time.Second, 17*time.Second + 5, 11 * time.Second, 29*time.Second + 333333, 65 * time.Second,
		} {
			s.Advance(d)
			checkTruth(t, s)
		}
		tr := s.Truth()
		byOutcome := map[sim.Outcome]int{}
		for _, r := range tr {
			byOutcome[r.Outcome()]++
		}
		for _, o := range []sim.Outcome{sim.OutcomeFinished, sim.OutcomeAbandoned, sim.OutcomeCancelled, sim.OutcomeInFlight} {
			if byOutcome[o] < 5 {
				t.Fatalf("only %d %s requests in %v; the test is vacuous", byOutcome[o], o, byOutcome)
			}
		}
	}
}

// ttftIdentity checks at the sim's current time that the first tokens vLLM
// counted since the (re)start are exactly the finishes, plus the streams
// abandoned after their first token, plus the requests in flight past their
// first token; and that the latter fit in the running gauge.
func ttftIdentity(t *testing.T, s *sim.Sim) {
	t.Helper()
	body, ct := s.ExpositionStyle(sim.Style{Format: sim.SingleProcess})
	p := parse(t, body, ct)
	tr := s.Truth()
	from, now := s.Created(), s.Now()
	start := s.Config().Start
	for _, e := range engines(s, tr) {
		name, eng, mine := e.name, e.label, e.truth
		ttft := p.must(t, "vllm:time_to_first_token_seconds_count", "engine", eng, "model_name", name)
		finished := p.must(t, "vllm:e2e_request_latency_seconds_count", "engine", eng, "model_name", name)
		running := p.must(t, "vllm:num_requests_running", "engine", eng, "model_name", name)
		abandoned := len(simtruth.AbandonedIn(mine, from, now))
		past := simtruth.InFlightAt(mine, now).PastFirstToken
		if ttft != finished+float64(abandoned+past) {
			t.Errorf("%v %s/%s: %v first tokens != %v finished + %d abandoned + %d in flight",
				now.Sub(start), name, eng, ttft, finished, abandoned, past)
		}
		if float64(past) > running {
			t.Errorf("%v %s/%s: %d in flight past the first token, running gauge %v", now.Sub(start), name, eng, past, running)
		}
	}
}

// TestFirstTokenIdentity checks the identity first tokens = finishes +
// abandoned + in flight at every 15 s scrape of workloads with
// cancellations, restarts and an outage.
func TestFirstTokenIdentity(t *testing.T) {
	for _, name := range []string{"cancel15", "restart", "outage"} {
		cfg, err := sim.Preset(name, 5, t0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DiscardTokenTimes = true
		s := mustNew(t, cfg)
		abandoned := 0
		for at := t0.Add(15 * time.Second); !at.After(t0.Add(20 * time.Minute)); at = at.Add(15 * time.Second) {
			s.AdvanceTo(at)
			ttftIdentity(t, s)
		}
		abandoned = len(simtruth.AbandonedIn(s.Truth(), t0, s.Now()))
		if name == "cancel15" && abandoned < 100 {
			t.Errorf("%s: only %d abandoned streams", name, abandoned)
		}
	}
	s := mustNew(t, cancelConfig(3))
	for range 40 {
		s.Advance(1500 * time.Millisecond)
		ttftIdentity(t, s)
	}
}

// TestCancelSkew checks the cancel15 preset's promise: about 15% of the
// streams are cancelled after their first token, the cancelled ones are
// slower on average, some stop right after the first token and others
// mid-stream, and no abandoned stream produced a token after its abort or
// ran to its end.
func TestCancelSkew(t *testing.T) {
	cfg, err := sim.Preset("cancel15", 11, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, cfg)
	s.AdvanceTo(t0.Add(30 * time.Minute))
	var ended, abandoned, atFirst int
	var ttftAbandoned, ttftOthers float64
	for _, r := range s.Truth() {
		if r.FirstToken.IsZero() || r.Outcome() == sim.OutcomeInFlight {
			continue
		}
		ended++
		if !r.Abandoned() {
			ttftOthers += r.TTFT()
			continue
		}
		abandoned++
		ttftAbandoned += r.TTFT()
		if r.OutputTokens == 1 {
			atFirst++
		}
		if r.LastToken.After(r.Finish) || r.Finished() || r.Outcome() != sim.OutcomeAbandoned {
			t.Fatalf("abandoned request %d: last token %v after abort %v, or counted as finished", r.ID, r.LastToken, r.Finish)
		}
		if n := len(r.TokenTimes); n != r.OutputTokens || r.TokenTimes[n-1].After(r.Finish) {
			t.Fatalf("abandoned request %d: %d token times for %d tokens", r.ID, n, r.OutputTokens)
		}
		if r.Finish.Sub(r.LastToken) >= sim.Cancel15.Reaction {
			t.Fatalf("abandoned request %d: abort %v after its last token, reaction at most %v", r.ID, r.Finish.Sub(r.LastToken), sim.Cancel15.Reaction)
		}
	}
	share := float64(abandoned) / float64(ended)
	if share < 0.13 || share > 0.17 {
		t.Errorf("abandoned share %.4f of %d streams, want about 0.15", share, ended)
	}
	meanA, meanO := ttftAbandoned/float64(abandoned), ttftOthers/float64(ended-abandoned)
	if meanA < 1.5*meanO {
		t.Errorf("mean TTFT of abandoned streams %.3f s, of the others %.3f s: not skewed to slow ones", meanA, meanO)
	}
	if f := float64(atFirst) / float64(abandoned); f < 0.25 || f > 0.4 {
		t.Errorf("%.3f of abandoned streams stopped at their first token, want about 0.3 (plus mid-stream stops at token 1)", f)
	}
	t.Logf("cancel15: %d of %d streams abandoned (%.4f), mean TTFT %.3f s against %.3f s, %d at the first token",
		abandoned, ended, share, meanA, meanO, atFirst)
}

// TestCancellationKeepsArrivals checks that cancellations draw from their own
// random stream: the same seed gives the same arrivals and lengths with and
// without them, and the run does not depend on how the clock is advanced.
func TestCancellationKeepsArrivals(t *testing.T) {
	plain := mustNew(t, smallConfig(8))
	withCancel := smallConfig(8)
	withCancel.Models[0].Workload.Cancel = cancelConfig(8).Models[0].Workload.Cancel
	cancel := mustNew(t, withCancel)
	plain.Advance(time.Minute)
	cancel.Advance(time.Minute)
	a, b := plain.Truth(), cancel.Truth()
	if len(a) != len(b) {
		t.Fatalf("%d arrivals without cancellations, %d with", len(a), len(b))
	}
	for i := range a {
		if !a[i].Arrival.Equal(b[i].Arrival) || a[i].PromptTokens != b[i].PromptTokens || a[i].Engine != b[i].Engine {
			t.Fatalf("request %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}

	run := func(step time.Duration) ([]byte, []byte) {
		s := mustNew(t, cancelConfig(9))
		for s.Now().Add(step).Before(t0.Add(70 * time.Second)) {
			s.Advance(step)
		}
		s.AdvanceTo(t0.Add(70 * time.Second))
		body, _ := s.Exposition()
		var tb bytes.Buffer
		if err := s.WriteTruth(&tb); err != nil {
			t.Fatal(err)
		}
		return body, tb.Bytes()
	}
	b1, t1 := run(70 * time.Second)
	b2, t2 := run(333 * time.Millisecond)
	if !bytes.Equal(b1, b2) || !bytes.Equal(t1, t2) {
		t.Error("with cancellations, different advance steps give different runs")
	}
}

// TestPatienceCancellation checks clients that give up before their first
// token: they leave the waiting queue at arrival + patience (the waiting
// gauge drops at once), appear in no series, and never have a first token.
func TestPatienceCancellation(t *testing.T) {
	cfg := cancelConfig(4)
	cfg.Models[0].Workload.Cancel = sim.Cancellation{BeforeFirstToken: 1, Patience: 500 * time.Millisecond}
	s := mustNew(t, cfg)
	s.Advance(40 * time.Second)
	checkTruth(t, s)
	n := 0
	for _, r := range s.Truth() {
		if !r.Cancelled {
			continue
		}
		n++
		if r.Abandoned() || !r.FirstToken.IsZero() || r.OutputTokens != 0 || r.Outcome() != sim.OutcomeCancelled {
			t.Fatalf("request %d cancelled before its first token has one: %+v", r.ID, r)
		}
		if !r.Finish.After(r.Arrival) {
			t.Fatalf("request %d cancelled at %v, arrived %v", r.ID, r.Finish, r.Arrival)
		}
	}
	if n < 20 {
		t.Fatalf("only %d impatient clients left; the test is vacuous", n)
	}
}

// TestCountAborts checks the abort child of request_success_total when
// cancellations are counted, and that it stays 0 by default.
func TestCountAborts(t *testing.T) {
	for _, count := range []bool{false, true} {
		cfg := cancelConfig(6)
		cfg.CountAborts = count
		s := mustNew(t, cfg)
		s.Advance(45 * time.Second)
		body, ct := s.Exposition()
		p := parse(t, body, ct)
		got := 0.0
		for _, eng := range []string{"0", "1"} {
			got += p.must(t, "vllm:request_success_total", "engine", eng, "finished_reason", "abort", "model_name", "m")
		}
		want := 0
		if count {
			want = len(simtruth.CancelledIn(s.Truth(), t0, s.Now()))
		}
		if got != float64(want) || (count && want == 0) {
			t.Errorf("count aborts %v: abort child %v, want %d", count, got, want)
		}
	}
}

// TestNoRequestTPOT checks that dropping the per-request TPOT family removes
// exactly its lines and nothing else, and that the old names drop it too.
func TestNoRequestTPOT(t *testing.T) {
	const family = "vllm:request_time_per_output_token_seconds"
	for _, f := range []sim.Format{sim.SingleProcess, sim.MultiProcess, sim.OpenMetrics} {
		s := mustNew(t, smallConfig(2))
		s.Advance(20 * time.Second)
		full, _ := s.ExpositionStyle(sim.Style{Format: f})
		dropped, ct := s.ExpositionStyle(sim.Style{Format: f, NoRequestTPOT: true})
		var want bytes.Buffer
		for _, line := range strings.SplitAfter(string(full), "\n") {
			if !strings.Contains(line, family) {
				want.WriteString(line)
			}
		}
		if !strings.Contains(string(full), family) {
			t.Fatalf("%v: the full exposition lacks %s", f, family)
		}
		if !bytes.Equal(dropped, want.Bytes()) {
			t.Errorf("%v: dropping %s changed other lines", f, family)
		}
		p := parse(t, dropped, ct)
		if _, ok := p.types[family]; ok {
			t.Errorf("%v: %s still declared", f, family)
		}
		old, ct := s.ExpositionStyle(sim.Style{Format: f, OldNames: true})
		if _, ok := parse(t, old, ct).types[family]; ok {
			t.Errorf("%v: old names still declare %s", f, family)
		}
	}
	cfg, err := sim.Preset("no-tpot", 1, t0)
	if err != nil || !cfg.Style.NoRequestTPOT {
		t.Errorf("no-tpot preset: %v, style %+v", err, cfg.Style)
	}
}

// TestOldNamesITL checks that the old per-gap name vLLM used before v0.10.2
// (observed per output event in V1, per token gap in V0: the same here, one
// token per step) holds one observation per token after the first.
func TestOldNamesITL(t *testing.T) {
	cfg := cancelConfig(12)
	cfg.Style = sim.Style{OldNames: true}
	s := mustNew(t, cfg)
	s.Advance(50 * time.Second)
	body, ct := s.Exposition()
	p := parse(t, body, ct)
	tr := s.Truth()
	for _, eng := range []string{"0", "1"} {
		e, _ := strconv.Atoi(eng)
		var want int
		for _, r := range tr {
			if r.Engine == e {
				want += max(0, r.OutputTokens-1)
			}
		}
		got := p.must(t, "vllm:time_per_output_token_seconds_count", "engine", eng, "model_name", "m")
		if got != float64(want) || want == 0 {
			t.Errorf("engine %s: %v old-name observations, want %d", eng, got, want)
		}
	}
}

// TestOutagePreset checks the outage preset: vLLM dies at PresetOutageAt
// losing every request in flight, /metrics is refused and no request arrives
// while it is down, and a new process serves from PresetOutageAt +
// PresetOutageDown with counters from zero.
func TestOutagePreset(t *testing.T) {
	cfg, err := sim.Preset("outage", 2, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, cfg)
	crash, up := t0.Add(sim.PresetOutageAt), t0.Add(sim.PresetOutageAt+sim.PresetOutageDown)
	s.AdvanceTo(crash.Add(-time.Nanosecond))
	inflight := simtruth.InFlightAt(s.Truth(), s.Now()).Total()
	if !s.Serving() || inflight == 0 {
		t.Fatalf("before the crash: serving %v, %d in flight", s.Serving(), inflight)
	}
	s.AdvanceTo(crash)
	if s.Serving() {
		t.Fatal("serving at the crash")
	}
	s.AdvanceTo(up.Add(-time.Nanosecond))
	if s.Serving() {
		t.Fatal("serving during the outage")
	}
	s.AdvanceTo(up)
	if !s.Serving() || !s.Created().Equal(up) {
		t.Fatalf("after the outage: serving %v, created %v, want %v", s.Serving(), s.Created(), up)
	}
	body, ct := s.Exposition()
	p := parse(t, body, ct)
	for _, eng := range []string{"0", "1"} {
		if got := p.must(t, "vllm:time_to_first_token_seconds_count", "engine", eng, "model_name", sim.DemoModel); got != 0 {
			t.Errorf("engine %s: %v first tokens right after the restart", eng, got)
		}
	}
	s.AdvanceTo(up.Add(2 * time.Minute))
	checkTruth(t, s)
	lost := 0
	for _, r := range s.Truth() {
		if r.Arrival.After(crash) && r.Arrival.Before(up) {
			t.Fatalf("request %d arrived at %v, during the outage", r.ID, r.Arrival)
		}
		if r.Aborted {
			lost++
			if !r.Finish.Equal(crash) {
				t.Errorf("request %d lost at %v, want the crash %v", r.ID, r.Finish, crash)
			}
		}
	}
	if lost != inflight {
		t.Errorf("%d lost, want the %d in flight at the crash", lost, inflight)
	}
	if n := len(simtruth.FinishedIn(s.Truth(), up, s.Now())); n < 100 {
		t.Errorf("only %d requests finished in the two minutes after the restart", n)
	}
}

// TestScheduledRestartMatchesRestart checks that a restart of zero downtime
// in the config is the same as calling Restart at that instant.
func TestScheduledRestartMatchesRestart(t *testing.T) {
	at := 37*time.Second + 123
	buckets := &sim.Buckets{TTFT: []float64{0.1, 1, 10}}
	cfg := cancelConfig(13)
	cfg.Restarts = []sim.ScheduledRestart{{At: at, Buckets: buckets}}
	sched := mustNew(t, cfg)
	manual := mustNew(t, cancelConfig(13))
	manual.AdvanceTo(t0.Add(at))
	if err := manual.Restart(sim.RestartOptions{Buckets: buckets}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*sim.Sim{sched, manual} {
		s.AdvanceTo(t0.Add(time.Minute))
	}
	b1, _ := sched.Exposition()
	b2, _ := manual.Exposition()
	var t1, t2 bytes.Buffer
	if err := sched.WriteTruth(&t1); err != nil {
		t.Fatal(err)
	}
	if err := manual.WriteTruth(&t2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) || !bytes.Equal(t1.Bytes(), t2.Bytes()) {
		t.Error("a scheduled restart differs from Restart at the same instant")
	}
	checkTruth(t, sched)
}

// TestCancellationConfigErrors checks that bad cancellation and restart
// settings are rejected with the field named.
func TestCancellationConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *sim.Config)
		want   string
	}{
		{"share", func(c *sim.Config) { c.Models[0].Workload.Cancel.Share = 1.5 }, "share 1.5"},
		{"nan", func(c *sim.Config) { c.Models[0].Workload.Cancel.AtFirstToken = math.NaN() }, "at first token NaN"},
		{"skew", func(c *sim.Config) { c.Models[0].Workload.Cancel.Skew = -1 }, "skew -1"},
		{"ref", func(c *sim.Config) { c.Models[0].Workload.Cancel.TTFTRef = 0 }, "needs a TTFT reference"},
		{"patience", func(c *sim.Config) { c.Models[0].Workload.Cancel.Patience = 0 }, "needs a patience"},
		{"reaction", func(c *sim.Config) { c.Models[0].Workload.Cancel.Reaction = -1 }, "reaction -1ns"},
		{"restart at", func(c *sim.Config) { c.Restarts = []sim.ScheduledRestart{{At: 0}} }, "restart 0: at 0s"},
		{"restart order", func(c *sim.Config) {
			c.Restarts = []sim.ScheduledRestart{{At: time.Minute, Down: time.Minute}, {At: 90 * time.Second}}
		}, "restart 1 at 1m30s: not after"},
		{"restart buckets", func(c *sim.Config) {
			c.Restarts = []sim.ScheduledRestart{{At: time.Minute, Buckets: &sim.Buckets{ITL: []float64{}}}}
		}, "restart 0: buckets ITL"},
	}
	for _, tt := range tests {
		cfg := cancelConfig(1)
		tt.mutate(&cfg)
		_, err := sim.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// TestPresetsRun checks that every preset builds and runs, and that the
// truth of each agrees with its exposition after a few minutes.
func TestPresetsRun(t *testing.T) {
	for _, name := range sim.PresetNames() {
		cfg, err := sim.Preset(name, 3, t0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DiscardTokenTimes = true
		s := mustNew(t, cfg)
		s.AdvanceTo(t0.Add(3 * time.Minute))
		if n := len(simtruth.FinishedIn(s.Truth(), t0, s.Now())); n < 300 {
			t.Errorf("%s: only %d requests finished in 3 minutes", name, n)
		}
	}
}

// TestCancellationDrains checks the engines' books once a workload with
// cancellations has ended and drained: no KV cache held, nothing running or
// waiting, no pending abort, and every request ended one way or another.
func TestCancellationDrains(t *testing.T) {
	cfg := cancelConfig(17)
	cfg.Models[0].Workload.Phases[0].Duration = 45 * time.Second
	s := mustNew(t, cfg)
	s.Advance(5 * time.Minute)
	for idx, e := range s.Books(0) {
		if e.KVUsed != 0 || e.Running != 0 || e.Waiting != 0 || e.WaitingCancelled != 0 || e.NextCancel != sim.Never {
			t.Errorf("engine %d: kv %d, running %d, waiting %d, cancelled in queue %d, next abort %d",
				idx, e.KVUsed, e.Running, e.Waiting, e.WaitingCancelled, e.NextCancel)
		}
	}
	outcomes := map[sim.Outcome]int{}
	for _, r := range s.Truth() {
		outcomes[r.Outcome()]++
	}
	if outcomes[sim.OutcomeInFlight] != 0 || outcomes[sim.OutcomeAbandoned] < 20 || outcomes[sim.OutcomeCancelled] < 20 {
		t.Errorf("outcomes after the drain %v: want none in flight and both kinds of cancellation", outcomes)
	}
}
