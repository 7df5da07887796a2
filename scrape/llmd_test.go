package scrape_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// llmdCapture is the capture of llm-d-inference-sim (testdata/real/SOURCES.md).
const llmdCapture = "07-llmd-inference-sim.prom"

// llmdSLOs are judged over the emulator's scrapes: a TTFT-only SLO and one
// with TPOT too, whose families (with e2e) the evaluation needs.
var llmdSLOs = []slo.SLO{
	{Name: "ttft-only", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}, Goal: 0.9, Period: 24 * time.Hour},
	{Name: "interactive", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}, Goal: 0.9, Period: 24 * time.Hour},
}

// llmdPipeline is a pipeline with one target read with profile p, judged by
// llmdSLOs over a one-minute window.
func llmdPipeline(p scrape.Profile) *pipeline.Pipeline {
	return pipeline.New(pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "sim", URL: "http://127.0.0.1:8000/metrics", Profile: p, Interval: 15 * time.Second}},
		SLOs:      llmdSLOs,
		Windows:   []time.Duration{time.Minute},
		Retention: history.NewRetention(10*time.Minute, 24*time.Hour),
	})
}

// ingest parses body as scraped at at with p and ingests it.
func ingest(t *testing.T, pl *pipeline.Pipeline, body []byte, p scrape.Profile, at time.Time) {
	t.Helper()
	if err := pl.Ingest("sim", parseCapture(t, body, "", p, at), 0); err != nil {
		t.Fatal(err)
	}
}

// TestLLMDSimCaptureEvaluates reads the emulator's capture and two later
// scrapes built from it (bumped: four requests of 62.5 ms in every latency
// histogram, then four of 40 ms, no restart) through the pipeline. The vllm
// profile finds every family the SLOs need (e2e, TTFT, TPOT) and reports
// queue and the abort count missing, which no SLO needs, so no alert and
// no warning; another profile finds nothing and says so. The minute's
// window then holds exactly the eight requests the bumps added: every
// bound holds their truth (TTFT good for all eight, TPOT for the second
// four), with nothing unknown.
func TestLLMDSimCaptureEvaluates(t *testing.T) {
	body := readCapture(t, llmdCapture)
	first := bump(t, body, scrape.VLLM, bumpSpec{k: 4, latency: 0.0625, tokens: 10, tokenStep: 25, requestInc: 1})
	second := bump(t, first, scrape.VLLM, bumpSpec{k: 4, latency: 0.04, tokens: 10, tokenStep: 25, requestInc: 1})
	pl := llmdPipeline(scrape.VLLM)
	var rep *pipeline.Report
	for i, b := range [][]byte{body, first, second} {
		at := captureTime.Add(time.Duration(i) * 15 * time.Second)
		ingest(t, pl, b, scrape.VLLM, at)
		rep = pl.Evaluate(at)
	}
	tr := rep.Targets[0]
	if want := []string{string(scrape.Queue), string(scrape.RequestAborted)}; !slices.Equal(tr.Missing, want) {
		t.Errorf("missing %v, want %v", tr.Missing, want)
	}
	if len(tr.Warnings) != 0 || len(rep.Firing()) != 0 {
		t.Errorf("warnings %q, alerts %+v: want none", tr.Warnings, rep.Firing())
	}
	if len(tr.Models) != 1 || len(tr.Models[0].Windows) != 1 {
		t.Fatalf("models %+v: want fake-model with one window", tr.Models)
	}
	w := tr.Models[0].Windows[0]
	if w.Requests[slo.E2E] != 8 || w.Requests[slo.TTFT] != 8 || w.Requests[slo.TPOT] != 8 || w.RequestsPerSecond != 8.0/30 {
		t.Errorf("requests %v, %v/s: want the bumps' 8 over 30 s", w.Requests, w.RequestsPerSecond)
	}
	for k, good := range []float64{8, 4} {
		r := w.SLOs[k]
		all, ok := r.GoodRequests[slo.AllKey]
		if !ok || len(r.Unknown) != 0 || r.Requests != 8 {
			t.Errorf("%s: all %+v (present %v) over %v, unknown %v: want it judged over 8", r.Name, all, ok, r.Requests, r.Unknown)
			continue
		}
		for what, c := range map[string]struct {
			b     slo.Bounded
			truth float64
		}{
			"good":         {all, good},
			"attainment":   {r.Objectives[slo.AllKey], good / 8},
			"goodput/s":    {r.GoodputRequestsPerSecond, good / 30},
			"abandoned":    {r.Abandoned, 0},
			"ttft good":    {r.GoodRequests["ttft"], 8},
			"goodput tok":  {r.GoodputTokensPerSecond, good * 10 / 30},
			"finished tok": {slo.Exact(r.FinishedTokensPerSecond), 80.0 / 30},
		} {
			if c.truth < c.b.Lower || c.truth > c.b.Upper {
				t.Errorf("%s: %s truth %v outside [%v, %v]", r.Name, what, c.truth, c.b.Lower, c.b.Upper)
			}
		}
	}

	// Read as SGLang, the same scrapes find nothing, and the target says so.
	pl = llmdPipeline(scrape.SGLang)
	ingest(t, pl, body, scrape.SGLang, captureTime)
	if tr := pl.Evaluate(captureTime).Targets[0]; len(tr.Found) != 0 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], `profile "sglang"`) {
		t.Errorf("as SGLang: found %v, warnings %q: want nothing found and the profile warning", tr.Found, tr.Warnings)
	}
}

// TestLLMDSimFreshTicketsMissingFamilies serves what the emulator exposes
// before its first request (the capture's gauges, with none of its
// histograms and counters: they appear at their first observation). The
// families the SLOs need are reported missing, and once the scrapes have
// said so for three intervals the missing-family alert fires, naming them.
func TestLLMDSimFreshTicketsMissingFamilies(t *testing.T) {
	capture := string(readCapture(t, llmdCapture))
	gauges := map[string]bool{}
	for line := range strings.Lines(capture) {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && f[3] == "gauge" {
			gauges[f[2]] = true
		}
	}
	var fresh bytes.Buffer
	for line := range strings.Lines(capture) {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if gauges[name[:strings.IndexAny(name, "{ ")]] {
			fresh.WriteString(line)
		}
	}
	if !strings.Contains(fresh.String(), "vllm:num_requests_running") || strings.Contains(fresh.String(), "_bucket") {
		t.Fatalf("the fresh exposition is not the gauges alone:\n%s", fresh.String())
	}
	pl := llmdPipeline(scrape.VLLM)
	var rep *pipeline.Report
	for i := range 5 {
		at := captureTime.Add(time.Duration(i) * 15 * time.Second)
		ingest(t, pl, fresh.Bytes(), scrape.VLLM, at)
		rep = pl.Evaluate(at)
	}
	tr := rep.Targets[0]
	for _, f := range []scrape.Family{scrape.TTFT, scrape.TPOT, scrape.E2E} {
		if !slices.Contains(tr.Missing, string(f)) {
			t.Errorf("missing %v lacks %s", tr.Missing, f)
		}
	}
	i := slices.IndexFunc(rep.Firing(), func(a pipeline.Alert) bool { return a.Name() == pipeline.AlertFamilyMissing })
	if i < 0 {
		t.Fatalf("alerts %+v: want %s", rep.Firing(), pipeline.AlertFamilyMissing)
	}
	for _, f := range []string{"ttft", "tpot", "e2e"} {
		if s := rep.Firing()[i].Annotations["summary"]; !strings.Contains(s, f) {
			t.Errorf("summary %q does not name %s", s, f)
		}
	}
	if len(tr.Models) != 1 || len(tr.Models[0].Windows) != 1 || len(tr.Models[0].Windows[0].SLOs) != 0 {
		t.Fatalf("models %+v: want fake-model with one window and no SLO judged", tr.Models)
	}
}
