package main

import (
	"slices"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// TestReportFlags parses a report command line into report.Options.
func TestReportFlags(t *testing.T) {
	app := kingpin.New("x", "")
	o := addReportFlags(app.Command("report", ""))
	_, err := app.Parse([]string{"report", "--bench=a.json", "--bench=b.json", "--goodput=ttft:500", "--goodput=tpot:50",
		"--percentile=50", "--percentile=99.9", "--rank=nearest", "--gpu-hourly-cost=2.5", "--format=markdown",
		"--plot=s.svg", "--recording=r.jsonl", "--window=5m"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Bench, []string{"a.json", "b.json"}) || !slices.Equal(o.Goodput, []string{"ttft:500", "tpot:50"}) ||
		!slices.Equal(o.Percentiles, []float64{50, 99.9}) || o.Rank != "nearest" || o.GPUHourlyCost != 2.5 ||
		o.Format != "markdown" || o.Plot != "s.svg" || o.Recording != "r.jsonl" || o.Window != 5*time.Minute ||
		o.Duration != time.Minute || o.Interval != 5*time.Second {
		t.Errorf("options %+v", o)
	}
	if _, err := app.Parse([]string{"report", "--format=yaml"}); err == nil {
		t.Error("--format=yaml accepted")
	}
}
