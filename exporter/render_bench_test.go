package exporter

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// fleetReport copies one simulated target n times under different names.
func fleetReport(b testing.TB, n int) *pipeline.Report {
	one := simReport(b, "Qwen/Qwen2.5-7B-Instruct")
	rep := &pipeline.Report{Time: one.Time, Currency: one.Currency}
	for i := 0; i < n; i++ {
		t := one.Targets[0]
		t.Name = fmt.Sprintf("gpu%04d", i)
		rep.Targets = append(rep.Targets, t)
	}
	return rep
}

// BenchmarkMetricsRender measures one GET /metrics of a fleet's report.
func BenchmarkMetricsRender(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			rep := fleetReport(b, n)
			h := NewHandler(Endpoints{Report: func() *pipeline.Report { return rep }})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				io.Copy(io.Discard, rec.Body)
				b.SetBytes(int64(rec.Body.Len()))
			}
		})
	}
}
