package otlp

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// benchExport is one OTLP/HTTP protobuf export of n llm_request spans with
// every vLLM attribute, ending 10ms apart from offset on.
func benchExport(b *testing.B, n int, offset time.Duration) []byte {
	b.Helper()
	spans := make([]testSpan, n)
	for i := range spans {
		spans[i] = testSpan{id: fmt.Sprintf("req-%d", int(offset/time.Millisecond)+i), end: offset + time.Duration(i)*10*time.Millisecond, e2e: 1.5}
	}
	body, err := export(spans...).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkReceiveSpans measures the receiver's whole path for OTLP/HTTP
// protobuf exports of 512 spans (vLLM's batch size): read, decode, route,
// store. Run with -cpu=1 for spans per second on one core.
func BenchmarkReceiveSpans(b *testing.B) {
	const batch = 512
	// The store's clock reads t0 + 10m, after the last of the 64 bodies.
	benchNow := func() time.Time { return t0.Add(10 * time.Minute) }
	store := traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, Now: benchNow})
	r, err := New(Options{HTTPAddress: "127.0.0.1:0", MaxBodyBytes: 16 << 20, Router: NewRouter(nil, "service.name", []string{"gpu0"}, DefaultAdapterAttribute)}, store)
	if err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = benchExport(b, batch, time.Duration(i*batch)*10*time.Millisecond)
	}
	b.ResetTimer()
	for i := range b.N {
		if i%len(bodies) == 0 && i > 0 {
			// Every body has been stored once: a fresh store, so that every
			// span stays new rather than a cheap duplicate.
			b.StopTimer()
			r.store = traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, Now: benchNow})
			b.StartTimer()
		}
		w := post(nil, r, contentProtobuf, bodies[i%len(bodies)])
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "spans/s")
	if got := testutil.ToFloat64(r.metrics.spanOutcomes.WithLabelValues("duplicate")); got != 0 {
		b.Fatalf("%v duplicates: the benchmark measured the wrong path", got)
	}
}

// BenchmarkRetainedBytes measures the heap a store holds per retained
// request after 100,000 spans: the record array, amortised.
func BenchmarkRetainedBytes(b *testing.B) {
	const n = 100000
	spans := make([]traces.Span, n)
	for i := range spans {
		spans[i] = traces.Span{Target: "gpu0", Model: "m", RequestID: fmt.Sprintf("req-%d", i), End: t0.Add(time.Duration(i) * time.Millisecond),
			TTFT: 0.1, E2E: 1, Queue: 0.01, Prefill: 0.09, Decode: 0.9, Inference: 0.99, PromptTokens: 100, CompletionTokens: 50, FinishReason: "stop"}
	}
	var perRequest float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		store := traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, Now: testNow})
		for i := 0; i < n; i += 512 {
			store.Add(spans[i:min(i+512, n)])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perRequest = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(store)
	}
	b.ReportMetric(perRequest, "B/request")
}
