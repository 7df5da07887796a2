package benchreport

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simRun runs the demo model with a finite workload (arrivals for traffic,
// then quiet until every request finished) and records a scrape every
// interval from the start: the recording covers every request.
func simRun(t *testing.T, seed uint64, traffic, total, interval time.Duration) ([]recording.Entry, sim.Truth) {
	t.Helper()
	cfg := sim.DemoConfig(seed, t0)
	cfg.Models[0].Workload.Phases = []sim.Phase{{Duration: traffic, Kind: sim.Poisson, Rate: 12}}
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var entries []recording.Entry
	for at := t0; !at.After(t0.Add(total)); at = at.Add(interval) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		entries = append(entries, recording.Entry{Time: at, Target: "vllm", Status: 200, ContentType: ct, Body: string(body)})
	}
	return entries, s.Truth()
}

// writeRecording saves entries as a recording file.
func writeRecording(t *testing.T, path string, entries []recording.Entry) {
	t.Helper()
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// nearest is the nearest-rank quantile of unsorted values.
func nearest(q float64, vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return slo.ExactQuantile(q, s)
}

// TestRecordingBracketsHoldTruth: on a simulated recording with an overload
// phase, every printed bracket holds the true quantile of the requests in
// the window, and goodput's bounds hold the true goodput.
func TestRecordingBracketsHoldTruth(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		entries, truth := simRun(t, seed, 3*time.Minute, 4*time.Minute, 15*time.Second)
		path := filepath.Join(t.TempDir(), "rec.jsonl")
		writeRecording(t, path, entries)
		opts := Options{Recording: path, Goodput: []string{"ttft:500", "tpot:50"}, Percentiles: []float64{10, 50, 90, 95, 99}}
		out, err := Build(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Server) != 1 {
			t.Fatalf("%d server tables, want 1", len(out.Server))
		}
		m := out.Server[0]
		finished := simtruth.FinishedIn(truth, m.Start, m.End)
		firsts := simtruth.FirstTokenIn(truth, m.Start, m.End)
		values := map[slo.Metric][]float64{}
		good := 0
		for _, r := range finished {
			values[slo.E2E] = append(values[slo.E2E], r.E2E())
			values[slo.TPOT] = append(values[slo.TPOT], r.TPOT())
			if r.TTFT() <= 0.5 && r.TPOT() <= 0.05 {
				good++
			}
		}
		for _, r := range firsts {
			values[slo.TTFT] = append(values[slo.TTFT], r.TTFT())
		}
		if len(finished) < 500 || float64(len(finished)) != m.Requests[slo.E2E] {
			t.Fatalf("seed %d: %d finished in truth, %v in the histograms", seed, len(finished), m.Requests[slo.E2E])
		}
		for metric, vs := range values {
			if len(m.Quantiles[metric]) != 5 {
				t.Fatalf("seed %d: %s has %d quantiles, want 5", seed, metric, len(m.Quantiles[metric]))
			}
			for _, q := range m.Quantiles[metric] {
				truthQ := nearest(q.Q, vs)
				if !(truthQ > float64(q.Lower) && truthQ <= float64(q.Upper)) {
					t.Errorf("seed %d: %s q%v truth %v outside (%v, %v]", seed, metric, q.Q, truthQ, q.Lower, q.Upper)
				}
			}
		}
		gp := m.Goodput.RequestsPerSecond
		trueGoodput := float64(good) / m.Seconds
		if trueGoodput < float64(gp.Lower)-1e-12 || trueGoodput > float64(gp.Upper)+1e-12 {
			t.Errorf("seed %d: true goodput %v outside [%v, %v]", seed, trueGoodput, gp.Lower, gp.Upper)
		}
		var buf bytes.Buffer
		if err := Write(&buf, out, "text"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "TTFT p99 (ms)") || !strings.Contains(buf.String(), " [") {
			t.Errorf("table lacks TTFT p99 with a bracket:\n%s", buf.String())
		}
	}
}

// TestClientAgainstServer writes the simulated requests as a bench file seen
// by a client 30 ms away (TTFT and e2e both 30 ms longer) and checks that the
// difference column's bounds hold those 30 ms for every quantile.
func TestClientAgainstServer(t *testing.T) {
	entries, truth := simRun(t, 5, 2*time.Minute, 3*time.Minute, 10*time.Second)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	writeRecording(t, rec, entries)
	const delay = 0.030
	g := genFile{rate: 12.0, latencies: true, startTimes: true, errorsList: true, modelID: sim.DemoModel}
	for _, r := range truth {
		if !r.Finished() {
			t.Fatalf("request %d unfinished at the end of the run", r.ID)
		}
		req := genReq{start: r.Arrival.Sub(t0).Seconds(), ttft: r.TTFT() + delay, latency: r.E2E() + delay,
			plen: r.PromptTokens, olen: r.OutputTokens}
		for range r.OutputTokens - 1 {
			req.itls = append(req.itls, r.TPOT())
		}
		g.reqs = append(g.reqs, req)
	}
	g.duration = 180
	bench := g.write(t, dir, "bench.json")
	out, err := Build(context.Background(), Options{Bench: []string{bench}, Recording: rec, Rank: "nearest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Comparisons) != 1 || len(out.Comparisons[0].Rows) != 8 {
		t.Fatalf("comparisons %+v, want one with 8 rows (TTFT and e2e at 4 percentiles)", out.Comparisons)
	}
	for _, r := range out.Comparisons[0].Rows {
		lo, hi := float64(r.Difference.Lower), float64(r.Difference.Upper)
		if !(delay >= lo-1e-9 && delay < hi+1e-9) {
			t.Errorf("%s q%v: the 30 ms delay is outside the difference [%v, %v) (client %v, server %+v)", r.Metric, r.Q, lo, hi, r.Client, r.Server)
		}
		if est := float64(r.Difference.Estimate); !(est >= lo && est <= hi) {
			t.Errorf("%s q%v: estimate %v outside its bounds [%v, %v]", r.Metric, r.Q, est, lo, hi)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, out, "markdown"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "client − server (ms)") {
		t.Errorf("markdown lacks the comparison table:\n%s", buf.String())
	}
}

// TestRecordingErrors: recordings that cannot give a table say why.
func TestRecordingErrors(t *testing.T) {
	one := []recording.Entry{{Time: t0, Target: "vllm", Body: "# nothing\n"}}
	if _, _, err := EvaluateScrapes(one, ServerOptions{}); err == nil || !strings.Contains(err.Error(), "two scrapes") {
		t.Errorf("one scrape: err %v, want a 'two scrapes' error", err)
	}
	if _, _, err := EvaluateScrapes(nil, ServerOptions{}); err == nil {
		t.Error("no scrape: no error")
	}
	bad := []recording.Entry{{Time: t0, Target: "vllm", Error: "connection refused"}, {Time: t0.Add(time.Minute), Target: "vllm", Error: "connection refused"}}
	_, notes, err := EvaluateScrapes(bad, ServerOptions{})
	if err == nil || len(notes) != 2 || !strings.Contains(notes[0], "connection refused") {
		t.Errorf("failed scrapes: err %v notes %q", err, notes)
	}
	if _, err := Build(context.Background(), Options{Recording: filepath.Join(t.TempDir(), "missing.jsonl")}); err == nil {
		t.Error("missing recording: no error")
	}
}

// TestRecordingGolden pins the histogram table of a simulated recording in
// text and JSON (the simulator is deterministic for a seed).
func TestRecordingGolden(t *testing.T) {
	entries, _ := simRun(t, 1, 2*time.Minute, 3*time.Minute, 15*time.Second)
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	writeRecording(t, path, entries)
	for _, format := range []struct{ name, file string }{{"text", "recording.txt"}, {"json", "recording.golden.json"}} {
		var buf bytes.Buffer
		opts := Options{Recording: path, Goodput: []string{"ttft:500", "tpot:50"}, GPUHourlyCost: 2, Format: format.name}
		if err := Run(context.Background(), opts, &buf); err != nil {
			t.Fatal(err)
		}
		golden(t, format.file, buf.Bytes())
	}
}
