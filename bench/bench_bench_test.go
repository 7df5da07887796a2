package bench

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// benchShapes are the expositions of the per-scrape benchmarks.
var benchShapes = []struct {
	name  string
	shape Shape
}{
	{"realistic", Realistic},
	{"large", Large},
}

// BenchmarkPerScrape compares, per exposition, the textparse floor, our
// Parse, the expfmt alternative and the daemon's whole per-scrape work.
// `go run ./bench/cmd/perf scrape` prints the same as a table with medians.
func BenchmarkPerScrape(b *testing.B) {
	for _, bs := range benchShapes {
		body, ct, err := Body(bs.shape, 10*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range ParseCases(body, ct) {
			b.Run(bs.name+"/"+c.Name, c.Run)
		}
		sc, st, err := NewWarmScraper(bs.shape, DefaultWorkload())
		if err != nil {
			b.Fatal(err)
		}
		c := FullCase(sc, st)
		b.Run(bs.name+"/"+c.Name, c.Run)
	}
}

// BenchmarkEvaluate times one pipeline.Evaluate of 100 targets whose
// histories hold a 30-day period (the fill of `perf mem`), with the
// default workload's windows and budget, then with the default alert
// policy's three burn-rate alerts added. Beside the wall time it reports
// the process's CPU time per evaluation (user + system, GC included), the
// figure to read on a shared machine.
func BenchmarkEvaluate(b *testing.B) {
	const targets = 100
	w := DefaultWorkload()
	synth, err := NewSynth()
	if err != nil {
		b.Fatal(err)
	}
	spec := w.Spec(targets)
	end := Epoch.Add(60 * 24 * time.Hour)
	pipe := pipeline.New(spec)
	if err := Fill(pipe, targets, synth, FillTimes(spec.Retention, end, Interval)); err != nil {
		b.Fatal(err)
	}
	alerts := spec
	for _, a := range config.DefaultAlertPolicy() {
		alerts.Alerts = append(alerts.Alerts, pipeline.BurnAlert{SLO: spec.SLOs[0].Name, Severity: a.Severity,
			Long: time.Duration(a.LongWindow), Short: time.Duration(a.ShortWindow), Factor: 1})
	}
	for _, c := range []struct {
		name string
		spec pipeline.Spec
	}{{"windows+budget", spec}, {"windows+budget+alerts", alerts}} {
		if err := pipe.Reconfigure(c.spec); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				pipe.Evaluate(end)
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}
