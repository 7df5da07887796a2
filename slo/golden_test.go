package slo

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// renderReport prints a report in a stable, reviewable text form.
func renderReport(rep WindowReport) string {
	var b strings.Builder
	bd := func(x Bounded) string { return fmt.Sprintf("%.6g [%.6g, %.6g]", x.Estimate, x.Lower, x.Upper) }
	fmt.Fprintf(&b, "window %v..%v (%gs)\n", rep.Window.Start.Format("15:04:05"), rep.Window.End.Format("15:04:05"), rep.Window.Seconds())
	for _, m := range Metrics {
		n, ok := rep.Requests[m]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%-9s n=%g\n", m, n)
		for _, q := range rep.Quantiles[m] {
			p := PrometheusQuantile(q.Q, rep.Window.Latency[m])
			if math.IsNaN(p) {
				p = math.Inf(1) // as the report held it when it carried Prometheus's answer
			}
			fmt.Fprintf(&b, "  q%-5g %s  prometheus %.6g\n", q.Q, bd(q.Bounded), p)
		}
	}
	fmt.Fprintf(&b, "throughput %v gen %.6g prompt %.6g; request rate %v %.6g\n", rep.HasThroughput, rep.GenerationTokensPerSecond, rep.PromptTokensPerSecond, rep.HasRequestRate, rep.RequestsPerSecond)
	for _, s := range []Stage{StageTotal, StageQueue, StageRunning} {
		if c, ok := rep.Concurrency[s]; ok {
			fmt.Fprintf(&b, "concurrency %-7s predicted %.6g observed %.6g (%v)\n", s, c.Predicted, c.Observed, c.HasObserved)
		}
	}
	for _, r := range rep.SLOs {
		fmt.Fprintf(&b, "slo %s: requests %g\n", r.Name, r.Requests)
		keys := make([]string, 0, len(r.Objectives))
		for k := range r.Objectives {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-5s ratio %s  good %s\n", k, bd(r.Objectives[k]), bd(r.GoodRequests[k]))
		}
		fmt.Fprintf(&b, "  goodput tok/s %s (%v)  req/s %s\n", bd(r.GoodputTokensPerSecond), r.HasGoodputTokens, bd(r.GoodputRequestsPerSecond))
		fmt.Fprintf(&b, "  burn %s (%v)\n", bd(r.BurnRate), r.HasBurnRate)
	}
	return b.String()
}

// TestEvaluateWindowGolden pins the whole report of a busy window; run with
// -update to rewrite testdata/busy_window.golden after a reviewed change.
func TestEvaluateWindowGolden(t *testing.T) {
	w := busyWindow()
	w.Latency[ITL] = hist(30, []float64{0.025, 0.05, 0.1, inf}, 500, 900, 990, 1000)
	slos := []SLO{interactive, {Name: "itl", Objectives: []Objective{{ITL, 0.04}, {E2E, 7}}, Goal: 0.95}}
	got := renderReport(EvaluateWindow(w, slos, Options{Quantiles: []float64{0.5, 0.9, 0.95, 0.99}}))
	path := filepath.Join("testdata", "busy_window.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("write golden: %v", err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("report differs from %s (run with -update after review):\n%s", path, got)
	}
}
