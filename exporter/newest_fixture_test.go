package exporter

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// newestGoldenFamilies are the series the newest families feed, and the
// TTFT attainment and request counts that the priority label must not
// change (TTFT summed over priority).
var newestGoldenFamilies = []string{
	"vllm_slo_rejected_requests", "vllm_slo_preemptions", "vllm_slo_prompt_tokens_by_source",
	"vllm_slo_preempted_ratio", "vllm_slo_preempted_lower_ratio", "vllm_slo_preempted_upper_ratio",
	"vllm_slo_waiting_requests_mean", "vllm_slo_waiting_requests_max",
	"vllm_slo_attainment_ratio", "vllm_slo_attainment_lower_ratio", "vllm_slo_attainment_upper_ratio",
	"vllm_slo_window_requests", "vllm_slo_target_metric_missing",
}

// TestNewestFixtureGolden replays the two scrapes of the newest vLLM's
// exposition built from its metric definitions (scrape/testdata/newest,
// with the priority label on every finished-request histogram, TTFT
// included) through scrape, the pipeline and the collector, and compares
// the series of the newest families with testdata/newest.golden (-update
// rewrites it): rejections summed over reason, preemptions, prompt tokens
// by source, the preempted share, waiting by reason, and TTFT's attainment
// over every priority, with no family reported missing. TTFT carries the
// priority label, so it is observed at finish: objective="all" (and
// goodput, burn rate, abandoned) is absent, not bounded from first-token
// timing this server does not have (with it, the ledger bounded all's
// upper end at 4/13 = 0.31 while 7 of the window's 12 finishers met
// both objectives).
func TestNewestFixtureGolden(t *testing.T) {
	at0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := pipeline.New(pipeline.Spec{
		Targets: []pipeline.TargetSpec{{Name: "vllm-0.32", URL: "http://x/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs: []slo.SLO{{Name: "interactive", Goal: 0.99, Period: time.Hour, Objectives: []slo.Objective{
			{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05},
		}}},
		Windows:   []time.Duration{time.Minute},
		Quantiles: []float64{0.5},
		Retention: history.NewRetention(time.Minute, time.Hour),
	})
	var rep *pipeline.Report
	for k := range 2 {
		at := at0.Add(time.Duration(k) * 15 * time.Second)
		body, err := os.ReadFile(filepath.Join("..", "scrape", "testdata", "newest", fmt.Sprintf("vllm-0.32-priority-%d.prom", k)))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := scrape.Parse(body, "text/plain; version=0.0.4; charset=utf-8", scrape.VLLM, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ingest("vllm-0.32", snap, 0); err != nil {
			t.Fatal(err)
		}
		rep = p.Evaluate(at)
	}
	mfs := gather(t, rep)
	var buf bytes.Buffer
	for _, name := range newestGoldenFamilies {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("%s absent", name)
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	if missing := mfs["vllm_slo_target_metric_missing"]; missing != nil {
		for _, m := range missing.GetMetric() {
			if value(m) != 0 {
				t.Errorf("reported missing: %s", label(m, "metric"))
			}
		}
	}
	for _, m := range mfs["vllm_slo_attainment_ratio"].GetMetric() {
		if label(m, "objective") == slo.AllKey {
			t.Errorf("objective=\"all\" published on a server that observes TTFT at finish: %v", value(m))
		}
	}
	golden := filepath.Join("testdata", "newest.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		got, wantLines := strings.Split(buf.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(got), len(wantLines)) {
			if got[i] != wantLines[i] {
				t.Fatalf("differs from %s (go test ./exporter -run TestNewestFixtureGolden -update) at line %d:\n got %s\nwant %s", golden, i+1, got[i], wantLines[i])
			}
		}
		t.Fatalf("differs from %s in length: %d lines, want %d", golden, len(got), len(wantLines))
	}
}
