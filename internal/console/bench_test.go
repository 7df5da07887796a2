package console

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// fleet is one target serving 20 models, scraped every 15 s for an hour,
// with four windows and the SLO's two alerts.
func fleet(b *testing.B) (*pipeline.Pipeline, *pipeline.Report) {
	b.Helper()
	return fleetRing(b, nil)
}

// fleetRing is fleet evaluated at every scrape into ring, as the daemon
// does (nil: evaluated once, at the end).
func fleetRing(b *testing.B, ring *Ring) (*pipeline.Pipeline, *pipeline.Report) {
	b.Helper()
	cfg := sim.DemoConfig(5, start)
	model := cfg.Models[0]
	model.Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 1}}
	model.Workload.Repeat = false
	cfg.Models = nil
	for i := range 20 {
		m := model
		m.Name = fmt.Sprintf("org/model-%02d", i)
		cfg.Models = append(cfg.Models, m)
	}
	s, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	spec := testSpec()
	spec.Windows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	spec.Retention = history.NewRetention(time.Hour, 24*time.Hour)
	p := pipeline.New(spec)
	var rep *pipeline.Report
	for at := start.Add(15 * time.Second); !at.After(start.Add(time.Hour)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Ingest("gpu0", snap, 0); err != nil {
			b.Fatal(err)
		}
		if ring != nil {
			ring.Add(p.Evaluate(at), p.Spec())
		}
	}
	rep = p.Evaluate(start.Add(time.Hour))
	return p, rep
}

func gzipLen(b *testing.B, body []byte) int {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(body); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Len()
}

// cpuTime is the CPU time the process has used (all threads, user and
// system): on a shared machine wall time mostly measures the neighbours.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since before.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// serve returns the body of one request, failing on a status other than 200.
func serve(b *testing.B, h http.Handler, target string) []byte {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

// BenchmarkOverview20Models renders the overview of 20 models x 4 windows.
func BenchmarkOverview20Models(b *testing.B) {
	p, rep := fleet(b)
	c := New(Options{Report: func() *pipeline.Report { return rep }, History: p})
	var body []byte
	before := cpuTime(b)
	for b.Loop() {
		body = serve(b, c, "/")
	}
	reportCPU(b, before)
	b.ReportMetric(float64(len(body)), "page-bytes")
	b.ReportMetric(float64(gzipLen(b, body)), "page-gzip-bytes")
}

// BenchmarkSeries1h evaluates one model's detail data over the last hour
// (120 windows ending at past scrapes), as a first request does.
func BenchmarkSeries1h(b *testing.B) {
	p, rep := fleet(b)
	var body []byte
	before := cpuTime(b)
	for b.Loop() {
		c := New(Options{Report: func() *pipeline.Report { return rep }, History: p}) // an empty cache
		body = serve(b, c, "/api/series?target=gpu0&model=org%2Fmodel-07&slo=interactive&range=1h")
	}
	reportCPU(b, before)
	b.ReportMetric(float64(len(body)), "json-bytes")
	b.ReportMetric(float64(gzipLen(b, body)), "json-gzip-bytes")
}

// BenchmarkSeries1hFromRing is BenchmarkSeries1h with the daemon's
// evaluations kept in a ring, as the daemon serves it: no window is
// evaluated.
func BenchmarkSeries1hFromRing(b *testing.B) {
	ring := NewRing(15*time.Second, 24*time.Hour)
	p, rep := fleetRing(b, ring)
	var body []byte
	before := cpuTime(b)
	for b.Loop() {
		c := New(Options{Report: func() *pipeline.Report { return rep }, History: p, Ring: ring}) // an empty cache
		body = serve(b, c, "/api/series?target=gpu0&model=org%2Fmodel-07&slo=interactive&range=1h")
	}
	reportCPU(b, before)
	b.ReportMetric(float64(len(body)), "json-bytes")
}

// BenchmarkSeries1hCached is the same request answered from the cache.
func BenchmarkSeries1hCached(b *testing.B) {
	p, rep := fleet(b)
	c := New(Options{Report: func() *pipeline.Report { return rep }, History: p})
	const target = "/api/series?target=gpu0&model=org%2Fmodel-07&slo=interactive&range=1h"
	serve(b, c, target)
	before := cpuTime(b)
	for b.Loop() {
		serve(b, c, target)
	}
	reportCPU(b, before)
}

// BenchmarkDetailPageWeight reports what a browser loads for one detail view
// (page, scripts, styles and data, each gzipped as a proxy would send them).
func BenchmarkDetailPageWeight(b *testing.B) {
	p, rep := fleet(b)
	c := New(Options{Report: func() *pipeline.Report { return rep }, History: p})
	parts := []string{"/slo?target=gpu0&model=org%2Fmodel-07&slo=interactive&range=1h",
		"/assets/uPlot.iife.min.js", "/assets/uPlot.min.css", "/assets/console.js", "/assets/console.css",
		"/api/series?target=gpu0&model=org%2Fmodel-07&slo=interactive&range=1h"}
	var total, zipped int
	for b.Loop() {
		total, zipped = 0, 0
		for _, part := range parts {
			body := serve(b, c, part)
			total += len(body)
			zipped += gzipLen(b, body)
		}
	}
	b.ReportMetric(float64(total), "bytes")
	b.ReportMetric(float64(zipped), "gzip-bytes")
}
