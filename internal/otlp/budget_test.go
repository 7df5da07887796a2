package otlp

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// shapes builds exports of n spans of every shape that makes decoding
// expensive, and vLLM's own.
func shapes(n int) map[string]ptrace.Traces {
	mk := func(f func(sp ptrace.Span)) ptrace.Traces {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for range n {
			f(ss.AppendEmpty())
		}
		return td
	}
	return map[string]ptrace.Traces{
		"empty spans":   mk(func(ptrace.Span) {}),
		"minimal spans": mk(func(sp ptrace.Span) { sp.SetName(SpanName); sp.SetEndTimestamp(1e18) }),
		"empty events": mk(func(sp ptrace.Span) {
			for range 20 {
				sp.Events().AppendEmpty()
			}
		}),
		"empty links": mk(func(sp ptrace.Span) {
			for range 20 {
				sp.Links().AppendEmpty()
			}
		}),
		"nested arrays": mk(func(sp ptrace.Span) {
			s := sp.Attributes().PutEmptySlice("a")
			for range 20 {
				s.AppendEmpty().SetEmptySlice().AppendEmpty()
			}
		}),
		"vllm": mk(func(sp ptrace.Span) {
			sp.SetName(SpanName)
			sp.SetEndTimestamp(1e18)
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{1})
			a := sp.Attributes()
			for _, k := range []string{AttrTTFT, AttrE2E, AttrQueue, AttrPrefill, AttrDecode, AttrInference} {
				a.PutDouble(k, 0.5)
			}
			a.PutInt(AttrPromptTokens, 100)
			a.PutInt(AttrCompletionTokens, 100)
			a.PutStr(AttrRequestID, "cmpl-0123456789abcdef0123456789abcdef")
			a.PutEmptySlice(AttrFinishReasons).AppendEmpty().SetStr("stop")
		}),
	}
}

// TestDecodeCostBoundsAllocation: for every shape, in protobuf and JSON,
// decodeCost is at least what decoding really allocates (runtime
// TotalAlloc of pdata's decoder and the receiver's own decoding), so the
// decoding budget bounds the memory; and for vLLM's spans it is within 3x
// of it, so the budget is not wasted.
func TestDecodeCostBoundsAllocation(t *testing.T) {
	router := NewRouter(nil, "", []string{"gpu0"}, "")
	for name, td := range shapes(2000) {
		for _, json := range []bool{false, true} {
			req := ptraceotlp.NewExportRequestFromTraces(td)
			var body []byte
			var err error
			if json {
				body, err = req.MarshalJSON()
			} else {
				body, err = req.MarshalProto()
			}
			if err != nil {
				t.Fatal(err)
			}
			cost, err := decodeCost(body, json)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := ptraceotlp.NewExportRequest()
			if json {
				err = got.UnmarshalJSON(body)
			} else {
				err = got.UnmarshalProto(body)
			}
			if err != nil {
				t.Fatal(err)
			}
			decode(got.Traces(), router, func([]traces.Span) {})
			runtime.ReadMemStats(&after)
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("%s (json %v): body %d, allocated %d (%.1fx), estimated %d", name, json, len(body), alloc, float64(alloc)/float64(len(body)), cost)
			if cost < alloc {
				t.Errorf("%s (json %v): decodeCost %d below the %d bytes decoding allocated", name, json, cost, alloc)
			}
			if name == "vllm" && !json && cost > 3*alloc {
				t.Errorf("vllm spans: decodeCost %d over 3x the %d bytes decoding allocated", cost, alloc)
			}
		}
	}
}

func TestScanExportRefusesMalformed(t *testing.T) {
	for name, body := range map[string][]byte{
		"truncated tag":    {0xff},
		"truncated length": {0x0a, 0x05, 0x01},
		"bad varint":       {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		if _, err := scanExport(body); err == nil {
			t.Errorf("%s: scanned without error", name)
		}
	}
	// AnyValue{array_value: ArrayValue{values: [AnyValue{...}]}}, built
	// inside out, one level deeper than allowed.
	var deep []byte
	for range maxNesting/2 + 1 {
		inner := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), deep)
		deep = protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), inner)
	}
	var s exportShape
	if err := s.scan(deep, kindAnyValue, 0); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("values nested %d deep: %v, want refused", maxNesting+2, err)
	}
	if s, err := scanExport(nil); err != nil || s != (exportShape{}) {
		t.Errorf("empty export: %+v, %v", s, err)
	}
}

// budgetReceiver is a receiver whose budgets fit a few small exports.
func budgetReceiver(t *testing.T, grpcAddr string) (*Receiver, *traces.Store) {
	t.Helper()
	store := traces.NewStore(traces.Limits{Retain: time.Hour, Now: testNow})
	r, err := New(Options{GRPCAddress: grpcAddr, HTTPAddress: "127.0.0.1:0", MaxBodyBytes: 64 << 10, ReadBudget: 128 << 10, DecodeBudget: 1 << 20, MaxInFlight: 2,
		Router: NewRouter(nil, "", []string{"gpu0"}, "")}, store)
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

// TestHTTPThrottled: when the exports in flight, the memory of the bodies
// being read or of the decoding is in use, an export is answered 503 with
// Retry-After at once, counted as throttled, and stored once the budget is
// free again; an export that could never fit the decoding budget is 413,
// not retryable.
func TestHTTPThrottled(t *testing.T) {
	r, store := budgetReceiver(t, "")
	body, _ := export(testSpan{"a", time.Second, 1}).MarshalProto()
	for _, busy := range []struct {
		name string
		p    *pool
		n    int64
	}{{"in flight", r.httpInFlight, 2}, {"reading", r.read, 128 << 10}, {"decoding", r.decodePool, 1 << 20}} {
		res := busy.p.reserve(busy.n)
		if res == nil {
			t.Fatalf("%s: cannot fill the pool", busy.name)
		}
		w := post(t, r, contentProtobuf, body)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%s full: %d, Retry-After %q, want 503 with Retry-After: 1", busy.name, w.Code, w.Header().Get("Retry-After"))
		}
		res.release()
	}
	if got := testutil.ToFloat64(r.metrics.exports.WithLabelValues("http", "throttled")); got != 3 {
		t.Errorf("throttled counted %v, want 3", got)
	}
	if w := post(t, r, contentProtobuf, body); w.Code != http.StatusOK {
		t.Errorf("with the budget free: %d", w.Code)
	}
	if n, _ := store.Retained(); n != 1 {
		t.Errorf("%d records stored, want 1", n)
	}
	for _, p := range []*pool{r.httpInFlight, r.read, r.decodePool} {
		if n := p.inUse(); n != 0 {
			t.Errorf("%d bytes still reserved after every export ended", n)
		}
	}
	// 5,000 empty spans: 50 KB of body, over 1 MiB to decode.
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for range 5000 {
		ss.AppendEmpty()
	}
	huge, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if w := post(t, r, contentProtobuf, huge); w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "to decode") {
		t.Errorf("an export over the decoding budget: %d %q, want 413", w.Code, w.Body.String())
	}
}

// TestGRPCThrottled: over the gRPC stream cap or with the decoding budget in
// use, an export gets UNAVAILABLE with a RetryInfo; once free, the export
// is stored; nothing stays reserved after the streams end.
func TestGRPCThrottled(t *testing.T) {
	r, store := budgetReceiver(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Ready()
	addr, _ := r.Addrs()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	for _, busy := range []struct {
		name string
		p    *pool
		n    int64
	}{{"streams", r.grpcInFlight, 2}, {"reading", r.read, 128 << 10}, {"decoding", r.decodePool, 1 << 20}} {
		res := busy.p.reserve(busy.n)
		_, err := client.Export(rctx, export(testSpan{busy.name, time.Second, 1}))
		res.release()
		st := status.Convert(err)
		retry := false
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == RetryAfter {
				retry = true
			}
		}
		if st.Code() != codes.Unavailable || !retry {
			t.Errorf("%s full: %v (details %v), want UNAVAILABLE with a RetryInfo of %v", busy.name, err, st.Details(), RetryAfter)
		}
	}
	if _, err := client.Export(rctx, export(testSpan{"a", time.Second, 1})); err != nil {
		t.Errorf("with the budget free: %v", err)
	}
	if n, _ := store.Retained(); n != 1 {
		t.Errorf("%d records stored, want 1", n)
	}
	// A stream gives its reservation back when it ends, which is just after
	// the client has its answer: wait for that, while the server runs.
	for deadline := time.Now().Add(10 * time.Second); r.grpcInFlight.inUse() != 0 || r.read.inUse() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("streams still hold %d slots and %d bytes 10s after their answers", r.grpcInFlight.inUse(), r.read.inUse())
		}
		runtime.Gosched()
	}
	conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, p := range []*pool{r.grpcInFlight, r.read, r.decodePool} {
		if n := p.inUse(); n != 0 {
			t.Errorf("%d still reserved after every stream ended", n)
		}
	}
	// Refused in the tap (two) or by the handler (one), each counted once.
	if got := testutil.ToFloat64(r.metrics.exports.WithLabelValues("grpc", "unavailable")); got != 3 {
		t.Errorf("unavailable counted %v, want 3", got)
	}
}

// inUse returns the bytes held.
func (p *pool) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}
