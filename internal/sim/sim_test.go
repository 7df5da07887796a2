package sim_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestTruthAgreesWithExposition advances a sim in uneven steps and checks at
// each stop that every exposed count equals the count from the truth.
func TestTruthAgreesWithExposition(t *testing.T) {
	cfg, err := sim.Preset("multi-model", 7, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, cfg)
	for _, d := range []time.Duration{
		1234 * time.Microsecond, 700 * time.Millisecond, 3 * time.Second, 17*time.Second + 3,
		time.Minute, 2*time.Minute + 123456789,
	} {
		s.Advance(d)
		checkTruth(t, s)
	}
	if n := len(s.Truth()); n < 500 {
		t.Fatalf("only %d requests in 3.4 min of the multi-model preset", n)
	}
}

// TestObservationTiming checks vLLM's observation points: TTFT counts a
// request from its first token on, e2e only from its finish, and ITL gets one
// observation per later token.
func TestObservationTiming(t *testing.T) {
	cfg := smallConfig(3)
	cfg.Models[0].Workload.Output = sim.LengthDist{Fixed: 20}
	ref := mustNew(t, cfg)
	ref.AdvanceTo(t0.Add(30 * time.Second))
	var r sim.Request
	for _, x := range ref.Truth() {
		if x.Finished() && x.Arrival.After(t0.Add(10*time.Second)) {
			r = x
			break
		}
	}
	if r.OutputTokens != 20 || len(r.TokenTimes) != 20 {
		t.Fatalf("no finished 20-token request found: %+v", r)
	}
	eng := []string{"0", "1"}[r.Engine]
	count := func(s *sim.Sim, name string) float64 {
		body, ct := s.Exposition()
		return parse(t, body, ct).must(t, name, "engine", eng, "model_name", "m")
	}
	type stage struct {
		at        time.Time
		ttft, e2e bool // whether r is counted
		itlFromR  int  // r's ITL observations so far
		tokensOfR int
	}
	stages := []stage{
		{at: r.FirstToken.Add(-time.Nanosecond), tokensOfR: 0},
		{at: r.FirstToken, ttft: true, tokensOfR: 1},
		{at: r.TokenTimes[5], ttft: true, itlFromR: 5, tokensOfR: 6},
		{at: r.Finish.Add(-time.Nanosecond), ttft: true, itlFromR: 18, tokensOfR: 19},
		{at: r.Finish, ttft: true, e2e: true, itlFromR: 19, tokensOfR: 20},
	}
	for i, st := range stages {
		s := mustNew(t, cfg)
		s.AdvanceTo(st.at)
		checkTruth(t, s)
		tr := s.Truth()
		others := func(pop sim.Truth) int {
			n := 0
			for _, x := range pop {
				if x.Engine == r.Engine && x.ID != r.ID {
					n++
				}
			}
			return n
		}
		wantTTFT := others(simtruth.FirstTokenIn(tr, t0, st.at))
		wantE2E := others(simtruth.FinishedIn(tr, t0, st.at))
		if st.ttft {
			wantTTFT++
		}
		if st.e2e {
			wantE2E++
		}
		if got := count(s, "vllm:time_to_first_token_seconds_count"); got != float64(wantTTFT) {
			t.Errorf("stage %d: ttft count %v, want %d", i, got, wantTTFT)
		}
		if got := count(s, "vllm:e2e_request_latency_seconds_count"); got != float64(wantE2E) {
			t.Errorf("stage %d: e2e count %v, want %d", i, got, wantE2E)
		}
		var mine sim.Request
		for _, x := range tr {
			if x.ID == r.ID {
				mine = x
			}
		}
		if mine.OutputTokens != st.tokensOfR || max(0, len(mine.TokenTimes)-1) != st.itlFromR {
			t.Errorf("stage %d: request has %d tokens, want %d", i, mine.OutputTokens, st.tokensOfR)
		}
	}
}

// TestOneTokenRequests checks that a one-token request observes TPOT 0 and
// decode 0, and produces no ITL observation.
func TestOneTokenRequests(t *testing.T) {
	cfg := smallConfig(5)
	cfg.Models[0].Workload.Output = sim.LengthDist{Fixed: 1}
	s := mustNew(t, cfg)
	s.Advance(20 * time.Second)
	checkTruth(t, s)
	body, ct := s.Exposition()
	p := parse(t, body, ct)
	for _, eng := range []string{"0", "1"} {
		n := p.must(t, "vllm:request_time_per_output_token_seconds_count", "engine", eng, "model_name", "m")
		if n == 0 {
			t.Fatalf("engine %s finished nothing", eng)
		}
		if got := p.bucket(t, "vllm:request_time_per_output_token_seconds", "m", eng, 0.01); got != n {
			t.Errorf("engine %s: tpot le=0.01 %v of %v", eng, got, n)
		}
		if got := p.must(t, "vllm:inter_token_latency_seconds_count", "engine", eng, "model_name", "m"); got != 0 {
			t.Errorf("engine %s: itl count %v, want 0", eng, got)
		}
	}
}

// TestRestart checks that a restart zeroes counters and histograms, moves
// `_created`, aborts the in-flight requests and can change the bucket layout.
func TestRestart(t *testing.T) {
	s := mustNew(t, smallConfig(11))
	s.Advance(90 * time.Second)
	before := s.Truth()
	inflight := simtruth.InFlightAt(before, s.Now()).Total()
	if inflight == 0 {
		t.Fatal("nothing in flight before the restart; test is vacuous")
	}
	body, ct := s.Exposition()
	p := parse(t, body, ct)
	if got := p.must(t, "vllm:generation_tokens_created", "engine", "0", "model_name", "m"); got != float64(t0.Unix()) {
		t.Errorf("created before restart %v, want %v", got, t0.Unix())
	}

	restartAt := s.Now()
	newTTFT := []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5}
	if err := s.Restart(sim.RestartOptions{Buckets: &sim.Buckets{TTFT: newTTFT}}); err != nil {
		t.Fatal(err)
	}
	body, ct = s.Exposition()
	p = parse(t, body, ct)
	for _, name := range []string{"vllm:generation_tokens_total", "vllm:prompt_tokens_total",
		"vllm:e2e_request_latency_seconds_count", "vllm:time_to_first_token_seconds_count",
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
		for _, eng := range []string{"0", "1"} {
			if got := p.must(t, name, "engine", eng, "model_name", "m"); got != 0 {
				t.Errorf("after restart %s{engine=%s} = %v, want 0", name, eng, got)
			}
		}
	}
	wantCreated := float64(restartAt.UnixNano()) / 1e9
	if got := p.must(t, "vllm:e2e_request_latency_seconds_created", "engine", "1", "model_name", "m"); got != wantCreated {
		t.Errorf("created after restart %v, want %v", got, wantCreated)
	}
	if !s.Created().Equal(restartAt) {
		t.Errorf("Created() = %v, want %v", s.Created(), restartAt)
	}
	if _, ok := p.get("vllm:time_to_first_token_seconds_bucket", "engine", "0", "le", "0.05", "model_name", "m"); !ok {
		t.Error("new TTFT layout not exposed after restart")
	}
	if _, ok := p.get("vllm:time_to_first_token_seconds_bucket", "engine", "0", "le", "0.001", "model_name", "m"); ok {
		t.Error("old TTFT layout still exposed after restart")
	}
	aborted := 0
	for _, r := range s.Truth() {
		if r.Aborted {
			aborted++
			if !r.Finish.Equal(restartAt) || r.Finished() {
				t.Errorf("aborted request %d: finish %v, want %v", r.ID, r.Finish, restartAt)
			}
		}
	}
	if aborted != inflight {
		t.Errorf("%d aborted, want the %d in flight", aborted, inflight)
	}
	s.Advance(45 * time.Second)
	checkTruth(t, s)
}

// TestDeterminism checks that the same seed gives the same bytes and truth
// however the clock is advanced, and another seed does not.
func TestDeterminism(t *testing.T) {
	run := func(seed uint64, steps []time.Duration) ([]byte, []byte) {
		cfg, err := sim.Preset("multi-model", seed, t0)
		if err != nil {
			t.Fatal(err)
		}
		s := mustNew(t, cfg)
		for _, d := range steps {
			s.Advance(d)
		}
		body, _ := s.Exposition()
		var tb bytes.Buffer
		if err := s.WriteTruth(&tb); err != nil {
			t.Fatal(err)
		}
		return body, tb.Bytes()
	}
	b1, t1 := run(42, []time.Duration{2 * time.Minute})
	var many []time.Duration
	for range 120 {
		many = append(many, 997*time.Millisecond)
	}
	many = append(many, 2*time.Minute-120*997*time.Millisecond)
	b2, t2 := run(42, many)
	if !bytes.Equal(b1, b2) {
		t.Error("same seed, different advance steps: expositions differ")
	}
	if !bytes.Equal(t1, t2) {
		t.Error("same seed, different advance steps: truths differ")
	}
	b3, _ := run(43, []time.Duration{2 * time.Minute})
	if bytes.Equal(b1, b3) {
		t.Error("different seeds gave the same exposition")
	}
}

// TestTruthRoundTrip writes the truth, reads it back and compares.
func TestTruthRoundTrip(t *testing.T) {
	s := mustNew(t, cancelConfig(9))
	s.Advance(20 * time.Second)
	_ = s.Restart(sim.RestartOptions{})
	s.Advance(5 * time.Second)
	want := s.Truth()
	outcomes := map[sim.Outcome]int{}
	for _, r := range want {
		outcomes[r.Outcome()]++
	}
	if outcomes[sim.OutcomeAbandoned] == 0 || outcomes[sim.OutcomeLost] == 0 || outcomes[sim.OutcomeCancelled] == 0 {
		t.Fatalf("outcomes %v: the round trip misses some", outcomes)
	}
	var buf bytes.Buffer
	if err := want.WriteTruth(&buf); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(buf.String(), "\n", 2)[0]
	for _, key := range []string{`"arrival":"2026-03-01T12:00:`, `"token_offsets_ns":[`, `"finished_reason":`} {
		if !strings.Contains(first, key) {
			t.Errorf("first truth line lacks %s: %s", key, first)
		}
	}
	got, err := sim.ReadTruth(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d requests, wrote %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.Model != g.Model || w.Engine != g.Engine || !w.Arrival.Equal(g.Arrival) ||
			!w.Scheduled.Equal(g.Scheduled) || !w.FirstToken.Equal(g.FirstToken) || !w.Finish.Equal(g.Finish) ||
			w.PromptTokens != g.PromptTokens || w.OutputTokens != g.OutputTokens ||
			w.FinishedReason != g.FinishedReason || w.Aborted != g.Aborted || len(w.TokenTimes) != len(g.TokenTimes) ||
			w.Cancelled != g.Cancelled || !w.LastToken.Equal(g.LastToken) || w.Outcome() != g.Outcome() {
			t.Fatalf("request %d differs:\nwrote %+v\nread  %+v", i, w, g)
		}
		for j := range w.TokenTimes {
			if !w.TokenTimes[j].Equal(g.TokenTimes[j]) {
				t.Fatalf("request %d token %d: %v vs %v", i, j, w.TokenTimes[j], g.TokenTimes[j])
			}
		}
	}
	for _, bad := range []string{"{", `{"id":1}`, `{"arrival":"yesterday"}`} {
		if _, err := sim.ReadTruth(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("ReadTruth(%q) accepted", bad)
		}
	}
}

// TestDemoSLO checks the demo preset's promise: the interactive SLO (TTFT ≤
// 500 ms and TPOT ≤ 50 ms for 99% of requests) holds in steady state and
// breaks during each overload.
func TestDemoSLO(t *testing.T) {
	s := mustNew(t, sim.DemoConfig(1, t0))
	s.AdvanceTo(t0.Add(3 * sim.DemoPeriod))
	tr := s.Truth()
	attain := func(from, to time.Time) (float64, int) {
		f := simtruth.FinishedIn(tr, from, to)
		good := 0
		for _, r := range f {
			if r.TTFT() <= 0.5 && r.TPOT() <= 0.05 {
				good++
			}
		}
		return float64(good) / float64(len(f)), len(f)
	}
	steadyLen := sim.DemoPeriod - sim.DemoOverload
	for p := range 3 {
		base := t0.Add(time.Duration(p) * sim.DemoPeriod)
		// Steady state: from a minute after the previous overload to its start.
		from := base.Add(time.Minute)
		if a, n := attain(from, base.Add(steadyLen)); a < 0.99 || n < 1000 {
			t.Errorf("period %d steady: attainment %.4f over %d requests, want >= 0.99", p, a, n)
		}
		if f := simtruth.InFlightAt(tr, base.Add(steadyLen)); f.Waiting > 5 {
			t.Errorf("period %d: %d waiting at the end of the steady phase", p, f.Waiting)
		}
		// The second minute of the overload.
		ov := base.Add(steadyLen + time.Minute)
		if a, n := attain(ov, ov.Add(time.Minute)); a > 0.5 {
			t.Errorf("period %d overload: attainment %.4f over %d requests, want < 0.5", p, a, n)
		}
	}
}

// TestArrivalRates checks the arrival kinds against their expected counts.
func TestArrivalRates(t *testing.T) {
	tests := []struct {
		name   string
		w      sim.Workload
		span   time.Duration
		expect float64 // expected arrivals in span
	}{
		{"poisson", sim.Workload{Phases: []sim.Phase{{Kind: sim.Poisson, Rate: 20}}}, 100 * time.Second, 2000},
		{"ramp", sim.Workload{Phases: []sim.Phase{{Duration: 100 * time.Second, Kind: sim.Ramp, Rate: 0, RateEnd: 40}}}, 200 * time.Second, 2000},
		{"bursty", sim.Workload{Phases: []sim.Phase{{Kind: sim.Bursty, Rate: 30, RateOff: 0, On: 10 * time.Second, Off: 20 * time.Second}}}, 120 * time.Second, 1200},
		{"phases-end", sim.Workload{Phases: []sim.Phase{{Duration: 50 * time.Second, Rate: 10}, {Duration: 50 * time.Second, Rate: 30}}}, 300 * time.Second, 2000},
		{"repeat", sim.Workload{Phases: []sim.Phase{{Duration: 10 * time.Second, Rate: 0}, {Duration: 10 * time.Second, Rate: 20}}, Repeat: true}, 200 * time.Second, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := smallConfig(1)
			tt.w.Prompt, tt.w.Output = sim.LengthDist{Fixed: 10}, sim.LengthDist{Fixed: 2}
			cfg.Models[0].Workload = tt.w
			s := mustNew(t, cfg)
			s.Advance(tt.span)
			n := float64(len(s.Truth()))
			if math.Abs(n-tt.expect) > 4*math.Sqrt(tt.expect) {
				t.Errorf("%v arrivals, want %v ± %.0f", n, tt.expect, 4*math.Sqrt(tt.expect))
			}
		})
	}
	// Bursty: no arrival in the off parts.
	cfg := smallConfig(2)
	cfg.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Bursty, Rate: 30, On: 10 * time.Second, Off: 20 * time.Second}}
	s := mustNew(t, cfg)
	s.Advance(90 * time.Second)
	for _, r := range s.Truth() {
		if off := r.Arrival.Sub(t0) % (30 * time.Second); off >= 10*time.Second {
			t.Fatalf("arrival at %v is in an off period", r.Arrival.Sub(t0))
		}
	}
}

// TestLengthDist checks fixed, clamped and mixture distributions.
func TestLengthDist(t *testing.T) {
	s := mustNew(t, smallConfig(1))
	tests := []struct {
		name     string
		d        sim.LengthDist
		min, max int
	}{
		{"fixed", sim.LengthDist{Fixed: 7}, 7, 7},
		{"clamped", sim.LengthDist{Median: 100, Sigma: 3, Min: 50, Max: 60}, 50, 60},
		{"mixture", sim.LengthDist{Mixture: []sim.Component{{Weight: 1, Dist: sim.LengthDist{Fixed: 3}}, {Weight: 1, Dist: sim.LengthDist{Fixed: 9}}}}, 3, 9},
	}
	for _, tt := range tests {
		seen := map[int]int{}
		for range 2000 {
			n := s.SampleLength(0, tt.d)
			if n < tt.min || n > tt.max {
				t.Fatalf("%s: sample %d outside [%d, %d]", tt.name, n, tt.min, tt.max)
			}
			seen[n]++
		}
		if tt.name == "mixture" && (seen[3] < 800 || seen[9] < 800 || seen[3]+seen[9] != 2000) {
			t.Errorf("mixture counts %v", seen)
		}
		if tt.name == "clamped" && (seen[50] == 0 || seen[60] == 0) {
			t.Errorf("clamp never hit both ends: %v", seen)
		}
	}
}

// TestConfigErrors checks that bad configs are rejected with the field named.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *sim.Config)
		want   string
	}{
		{"no models", func(c *sim.Config) { c.Models = nil }, "no models"},
		{"engines", func(c *sim.Config) { c.Models[0].Engines = 0 }, "engines 0"},
		{"dup", func(c *sim.Config) { c.Models = append(c.Models, c.Models[0]) }, `duplicate name "m"`},
		{"buckets", func(c *sim.Config) { c.Buckets.TTFT = []float64{1, 0.5} }, "buckets TTFT: edge 1"},
		{"phase", func(c *sim.Config) { c.Models[0].Workload.Repeat = true }, "phase 0 duration"},
		{"rate", func(c *sim.Config) { c.Models[0].Workload.Phases[0].Rate = -1 }, "rate -1"},
		{"dist", func(c *sim.Config) { c.Models[0].Workload.Output = sim.LengthDist{} }, "output: fixed length 0"},
		{"kv", func(c *sim.Config) { c.Models[0].Engine.KVCapacityTokens = 10 }, "kv capacity 10"},
		{"style", func(c *sim.Config) { c.Style.Format = 9 }, "unknown format 9"},
		{"stop", func(c *sim.Config) { c.Models[0].Workload.StopProbability = 2 }, "stop probability 2"},
	}
	for _, tt := range tests {
		cfg := smallConfig(1)
		tt.mutate(&cfg)
		_, err := sim.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := sim.Preset("nope", 1, t0); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown preset error %v", err)
	}
	s := mustNew(t, smallConfig(1))
	if err := s.Restart(sim.RestartOptions{Buckets: &sim.Buckets{ITL: []float64{}}}); err == nil {
		t.Error("restart accepted an empty bucket list")
	}
}

// TestDiscardTruth checks that a long-running sim can keep only in-flight
// requests while its exposition is unchanged.
func TestDiscardTruth(t *testing.T) {
	full := mustNew(t, smallConfig(4))
	cfg := smallConfig(4)
	cfg.DiscardTruth, cfg.DiscardTokenTimes = true, true
	var streamed sim.Truth
	cfg.OnDone = func(r sim.Request) { streamed = append(streamed, r) }
	lean := mustNew(t, cfg)
	full.Advance(30 * time.Second)
	lean.Advance(30 * time.Second)
	_ = full.Restart(sim.RestartOptions{})
	_ = lean.Restart(sim.RestartOptions{})
	full.Advance(30 * time.Second)
	lean.Advance(30 * time.Second)
	var done sim.Truth
	for _, r := range full.Truth() {
		if !r.Finish.IsZero() {
			done = append(done, r)
		}
	}
	if len(streamed) != len(done) || len(done) < 100 {
		t.Fatalf("OnDone got %d requests, truth has %d done", len(streamed), len(done))
	}
	aborted := 0
	for _, r := range streamed {
		if r.Aborted {
			aborted++
		}
	}
	if aborted == 0 {
		t.Error("OnDone saw no aborted request from the restart")
	}
	a, _ := full.Exposition()
	b, _ := lean.Exposition()
	if !bytes.Equal(a, b) {
		t.Error("discarding truth changed the exposition")
	}
	tr := lean.Truth()
	if want := simtruth.InFlightAt(full.Truth(), full.Now()).Total(); len(tr) != want {
		t.Errorf("lean truth holds %d requests, want the %d in flight", len(tr), want)
	}
	for _, r := range tr {
		if len(r.TokenTimes) != 0 {
			t.Fatal("token times kept despite DiscardTokenTimes")
		}
	}
}

// BenchmarkHourAt10RPS simulates one hour of a 10 req/s workload.
func BenchmarkHourAt10RPS(b *testing.B) {
	cfg := sim.DemoConfig(1, t0)
	cfg.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 10}}
	cfg.Models[0].Workload.Repeat = false
	for b.Loop() {
		s := mustNew(b, cfg)
		s.AdvanceTo(t0.Add(time.Hour))
	}
}

// BenchmarkExposition renders the demo's single-process exposition.
func BenchmarkExposition(b *testing.B) {
	s := mustNew(b, sim.DemoConfig(1, t0))
	s.AdvanceTo(t0.Add(5 * time.Minute))
	for b.Loop() {
		s.Exposition()
	}
}

// TestPhasePromptOverridesTheMix checks that a phase's own prompt lengths
// apply to exactly the requests arriving in it.
func TestPhasePromptOverridesTheMix(t *testing.T) {
	cfg := sim.DemoConfig(3, t0)
	seven := sim.LengthDist{Fixed: 7}
	cfg.Models[0].Workload.Phases = []sim.Phase{
		{Duration: time.Minute, Kind: sim.Poisson, Rate: 5},
		{Duration: time.Minute, Kind: sim.Poisson, Rate: 5, Prompt: &seven},
	}
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.AdvanceTo(t0.Add(2 * time.Minute))
	var first, second, sevens int
	for _, r := range s.Truth() {
		if r.Arrival.Before(t0.Add(time.Minute)) {
			first++
			if r.PromptTokens == 7 {
				sevens++
			}
			continue
		}
		second++
		if r.PromptTokens != 7 {
			t.Fatalf("request %d arrived in the second phase with a %d-token prompt, want 7", r.ID, r.PromptTokens)
		}
	}
	if first < 100 || second < 100 || sevens > first/10 {
		t.Fatalf("%d requests in the first phase (%d of 7 tokens), %d in the second", first, sevens, second)
	}
	bad := cfg
	bad.Models = append([]sim.ModelConfig(nil), cfg.Models...)
	bad.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 1, Prompt: &sim.LengthDist{Min: 5, Max: 2}}}
	if _, err := sim.New(bad); err == nil || !strings.Contains(err.Error(), "phase 0 prompt") {
		t.Fatalf("a phase with an invalid prompt distribution: err %v", err)
	}
}
