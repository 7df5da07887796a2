package benchreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

var kneeStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// oneEngine is the demo's model on one engine under phases, run once.
func oneEngine(t *testing.T, seed uint64, phases []sim.Phase) *sim.Sim {
	t.Helper()
	cfg := sim.DemoConfig(seed, kneeStart)
	cfg.DiscardTokenTimes = true
	cfg.Models[0].Engines = 1
	cfg.Models[0].Workload.Phases, cfg.Models[0].Workload.Repeat = phases, false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// benchAtRate writes the `vllm bench serve` result file of rate on the
// simulator: the requests that arrive in 20 minutes after a 3-minute
// warm-up, each with its TTFT, latency and lengths; those unfinished ten
// minutes after the last arrival fail, as a client timeout would.
func benchAtRate(t *testing.T, dir string, rate float64) string {
	t.Helper()
	const warm, measure, drain = 3 * time.Minute, 20 * time.Minute, 10 * time.Minute
	s := oneEngine(t, 1, []sim.Phase{{Duration: warm + measure, Kind: sim.Poisson, Rate: rate}})
	s.AdvanceTo(kneeStart.Add(warm + measure + drain))
	type file struct {
		RequestRate float64     `json:"request_rate"`
		Duration    float64     `json:"duration"`
		Completed   int         `json:"completed"`
		InputLens   []int       `json:"input_lens"`
		OutputLens  []int       `json:"output_lens"`
		TTFTs       []float64   `json:"ttfts"`
		ITLs        [][]float64 `json:"itls"`
		Latencies   []float64   `json:"latencies"`
		Errors      []string    `json:"errors"`
	}
	f := file{RequestRate: rate, Duration: measure.Seconds()}
	from := kneeStart.Add(warm)
	for _, r := range s.Truth() {
		if r.Arrival.Before(from) || !r.Arrival.Before(from.Add(measure)) {
			continue
		}
		f.InputLens, f.ITLs = append(f.InputLens, r.PromptTokens), append(f.ITLs, []float64{})
		if !r.Finished() {
			f.OutputLens, f.TTFTs, f.Latencies, f.Errors = append(f.OutputLens, 0), append(f.TTFTs, 0), append(f.Latencies, 0), append(f.Errors, "timeout")
			continue
		}
		f.Completed++
		f.OutputLens, f.TTFTs, f.Latencies, f.Errors = append(f.OutputLens, r.OutputTokens), append(f.TTFTs, r.TTFT()), append(f.Latencies, r.E2E()), append(f.Errors, "")
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("rate-%g.json", rate))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordDay records the server's /metrics every 15 s over phases.
func recordDay(t *testing.T, dir string, phases []sim.Phase) string {
	t.Helper()
	s := oneEngine(t, 2, phases)
	path := filepath.Join(dir, "day.jsonl")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var length time.Duration
	for _, p := range phases {
		length += p.Duration
	}
	for at := kneeStart.Add(15 * time.Second); !at.After(kneeStart.Add(length)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		if err := w.Write(recording.Entry{Time: at, Target: "gpu0", Status: 200, ContentType: ct, Body: string(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCapacityOfflineAgainstOnline runs report on a constant-rate sweep of
// the simulated one-engine server (TTFT ≤ 500 ms, TPOT ≤ 50 ms for 95%)
// and on a recording of a day of the same server whose load ramps past its
// knee and back: the sweep's knee (where the attainment per rate crosses
// the goal) must lie inside the online estimate's 90% prediction interval,
// and both must be printed, in text and in JSON.
func TestCapacityOfflineAgainstOnline(t *testing.T) {
	dir := t.TempDir()
	var bench []string
	for _, r := range []float64{5.1, 5.7, 6.3, 6.9} {
		bench = append(bench, benchAtRate(t, dir, r))
	}
	var day []sim.Phase
	for k := range 12 { // up from 2 to 7 req/s and down again, in ten-minute ramps
		at := func(k int) float64 { return 2 + 5*(1-math.Cos(2*math.Pi*float64(k)/12))/2 }
		day = append(day, sim.Phase{Duration: 10 * time.Minute, Kind: sim.Ramp, Rate: at(k), RateEnd: at(k + 1)})
	}
	rec := recordDay(t, dir, day)
	opts := Options{Bench: bench, Recording: rec, Goodput: []string{"ttft:500", "tpot:50"}, CapacityGoal: 0.95}
	out, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	if c == nil || len(c.Online) != 1 {
		t.Fatalf("capacity %+v, want the sweep beside one online model", c)
	}
	knee, o := float64(c.OfflineKnee), c.Online[0]
	t.Logf("offline knee %.3f req/s (attainment %v), online %s %.3f [%.3f, %.3f] from %d windows", knee, c.Attainment, o.Kind, float64(o.Estimate), float64(o.Lower), float64(o.Upper), o.Windows)
	if !(knee > float64(c.Rates[0]) && knee < float64(c.Rates[len(c.Rates)-1])) {
		t.Fatalf("offline knee %v outside the swept rates %v", knee, c.Rates)
	}
	if o.Kind != "bounded" || !(float64(o.Lower) <= knee && knee <= float64(o.Upper)) {
		t.Fatalf("online %s [%v, %v] does not hold the sweep's knee %v", o.Kind, float64(o.Lower), float64(o.Upper), knee)
	}
	var text, js bytes.Buffer
	if err := Write(&text, out, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Capacity: the sweep's knee beside the online estimate") || !strings.Contains(text.String(), f2(knee)) {
		t.Errorf("text output lacks the capacity table or the knee %s:\n%s", f2(knee), text.String())
	}
	if err := Write(&js, out, "json"); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Capacity struct {
			Offline float64 `json:"offline_knee_requests_per_second"`
			Online  []struct {
				Kind string `json:"kind"`
			} `json:"online"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Capacity.Offline != knee || len(back.Capacity.Online) != 1 || back.Capacity.Online[0].Kind != "bounded" {
		t.Errorf("json capacity %+v (err %v), want the knee %v and one bounded estimate", back.Capacity, err, knee)
	}
}

// TestOfflineKneePoolsViolators pins the offline knee of a sweep whose
// attainment rises between two rates (noise): the pair is pooled (weights:
// completed requests) and the crossing interpolated between its rates.
func TestOfflineKneePoolsViolators(t *testing.T) {
	rates := []Num{4, 5, 6, 7}
	att := []Num{0.99, 0.94, 0.96, 0.80}
	f := nonIncreasing(att, []float64{100, 100, 100, 100})
	want := []float64{0.99, 0.95, 0.95, 0.80}
	for i := range want {
		if math.Abs(f[i]-want[i]) > 1e-12 {
			t.Fatalf("fit %v, want %v", f, want)
		}
	}
	// 0.95 holds up to rate 6; between 6 (0.95) and 7 (0.80) the goal
	// 0.95 is met exactly at 6.
	if got := crossingOf(rates, f, 0.95); math.Abs(got-6) > 1e-12 {
		t.Fatalf("crossing at 0.95 = %v, want 6", got)
	}
	// At 0.9: between 6 (0.95) and 7 (0.80): 6 + 0.05/0.15.
	if got := crossingOf(rates, f, 0.9); math.Abs(got-(6+0.05/0.15)) > 1e-12 {
		t.Fatalf("crossing at 0.9 = %v, want %v", got, 6+0.05/0.15)
	}
	if got := crossingOf(rates, f, 0.995); !math.IsNaN(got) {
		t.Fatalf("crossing above the first point = %v, want NaN", got)
	}
	if got := crossingOf(rates, f, 0.5); !math.IsInf(got, 1) {
		t.Fatalf("crossing below every point = %v, want +Inf", got)
	}
}
