package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// testNow is the clock of the tests' stores: two minutes after t0, later
// than every span they send.
func testNow() time.Time { return t0.Add(2 * time.Minute) }

// testSpan describes one llm_request span to build.
type testSpan struct {
	id  string
	end time.Duration // after t0
	e2e float64
}

// export builds an export of llm_request spans from service.name "vllm",
// plus one span of another name that must be ignored.
func export(spans ...testSpan) ptraceotlp.ExportRequest {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "vllm")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	for _, s := range spans {
		sp := ss.AppendEmpty()
		sp.SetName(SpanName)
		end := t0.Add(s.end)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-time.Duration(s.e2e * float64(time.Second)))))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
		a := sp.Attributes()
		a.PutDouble(AttrE2E, s.e2e)
		a.PutDouble(AttrTTFT, s.e2e/4)
		a.PutInt(AttrCompletionTokens, 10)
		a.PutStr(AttrRequestID, s.id)
		a.PutStr(AttrResponseModel, "m")
	}
	other := ss.AppendEmpty()
	other.SetName("http.request")
	return ptraceotlp.NewExportRequestFromTraces(td)
}

func newTestReceiver(t *testing.T) (*Receiver, *traces.Store) {
	t.Helper()
	store := traces.NewStore(traces.Limits{Retain: 10 * time.Minute, MaxRecords: 1000, MaxModels: 4, MaxAdapters: 4, Now: testNow})
	r, err := New(Options{HTTPAddress: "127.0.0.1:0", MaxBodyBytes: 64 << 10, Router: NewRouter(nil, "service.name", []string{"gpu0"}, "")}, store)
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

func post(_ testing.TB, r *Receiver, contentType string, body []byte, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.serveTraces(w, req)
	return w
}

func selected(store *traces.Store, from, to time.Duration) int {
	return len(store.Select("gpu0", "m", false, t0.Add(from), t0.Add(to)).All)
}

// TestLateOutOfOrderAndDuplicateSpans: spans sent newest first, a late batch
// for an earlier minute, and the same export sent twice, over JSON and
// protobuf: each request is stored once, in its place by end time.
func TestLateOutOfOrderAndDuplicateSpans(t *testing.T) {
	r, store := newTestReceiver(t)
	recent := export(testSpan{"c", 90 * time.Second, 1}, testSpan{"b", 70 * time.Second, 2}, testSpan{"a", 61 * time.Second, 0.5})
	late := export(testSpan{"x", 30 * time.Second, 1}, testSpan{"y", 59 * time.Second, 1})
	body, err := recent.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if w := post(t, r, contentJSON, body); w.Code != http.StatusOK {
			t.Fatalf("JSON export: %d %s", w.Code, w.Body)
		}
	}
	pb, err := late.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	if w := post(t, r, contentProtobuf, pb); w.Code != http.StatusOK {
		t.Fatalf("protobuf export: %d %s", w.Code, w.Body)
	}
	if got := selected(store, 0, time.Minute); got != 2 {
		t.Errorf("first minute holds %d requests, want the 2 late ones", got)
	}
	if got := selected(store, time.Minute, 2*time.Minute); got != 3 {
		t.Errorf("second minute holds %d requests, want 3 (duplicates counted once)", got)
	}
	if got := testutil.ToFloat64(r.metrics.spanOutcomes.WithLabelValues("duplicate")); got != 3 {
		t.Errorf("duplicates counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(r.metrics.spanOutcomes.WithLabelValues("other_span")); got != 3 {
		t.Errorf("other spans counted %v, want 3", got)
	}
	// A span older than the retention behind the newest is refused, and the
	// exporter is told.
	old, _ := export(testSpan{"z", -20 * time.Minute, 1}).MarshalProto()
	w := post(t, r, contentProtobuf, old)
	resp := ptraceotlp.NewExportResponse()
	if err := resp.UnmarshalProto(w.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if resp.PartialSuccess().RejectedSpans() != 1 || !strings.Contains(resp.PartialSuccess().ErrorMessage(), "too_old") {
		t.Errorf("partial success = %d %q, want 1 too_old", resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage())
	}
}

// TestGarbageIsRejectedAndCounted: every kind of bad export gets a clear
// status and is counted; nothing is stored and nothing panics.
func TestGarbageIsRejectedAndCounted(t *testing.T) {
	r, store := newTestReceiver(t)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(bytes.Repeat([]byte{0}, 1<<20)) // a small bomb: 1 MiB of zeros
	_ = zw.Close()
	tests := []struct {
		name, contentType string
		body              []byte
		header            []string
		code              int
		outcome           string
	}{
		{"protobuf garbage", contentProtobuf, []byte{0xff, 0xff, 0xff, 0x0f, 0x01}, nil, 400, "bad_payload"},
		{"JSON garbage", contentJSON, []byte(`{"resourceSpans": [{"scopeSpans": 7}]`), nil, 400, "bad_payload"},
		{"not JSON at all", contentJSON, []byte("hello"), nil, 400, "bad_payload"},
		{"wrong content type", "text/plain", []byte("x"), nil, 415, "unsupported_media_type"},
		{"too large", contentProtobuf, bytes.Repeat([]byte{0}, 65<<10), nil, 413, "too_large"},
		{"gzip bomb", contentProtobuf, zipped.Bytes(), []string{"Content-Encoding", "gzip"}, 413, "too_large"},
		{"broken gzip", contentProtobuf, []byte("not gzip"), []string{"Content-Encoding", "gzip"}, 400, "bad_payload"},
		{"unknown encoding", contentProtobuf, []byte("x"), []string{"Content-Encoding", "br"}, 415, "unsupported_media_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(r.metrics.exports.WithLabelValues("http", tc.outcome))
			w := post(t, r, tc.contentType, tc.body, tc.header...)
			if w.Code != tc.code {
				t.Errorf("status %d, want %d (%s)", w.Code, tc.code, w.Body)
			}
			if got := testutil.ToFloat64(r.metrics.exports.WithLabelValues("http", tc.outcome)); got != before+1 {
				t.Errorf("%s counted %v times, want %v", tc.outcome, got, before+1)
			}
		})
	}
	req := httptest.NewRequest(http.MethodGet, TracesPath, nil)
	w := httptest.NewRecorder()
	r.serveTraces(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
	if n, _ := store.Retained(); n != 0 {
		t.Errorf("%d records stored from garbage", n)
	}
}

// TestForwarding: a second receiver downstream gets every export the first
// one accepted.
func TestForwarding(t *testing.T) {
	down, downStore := newTestReceiver(t)
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		down.serveTraces(w, req)
		served <- struct{}{}
	}))
	defer srv.Close()
	fwd := NewForwarder(srv.URL+TracesPath, srv.Client(), 5*time.Second, 4, nil)
	store := traces.NewStore(traces.Limits{Retain: time.Hour, Now: testNow})
	up, err := New(Options{HTTPAddress: "127.0.0.1:0", Router: NewRouter(nil, "", []string{"gpu0"}, ""), Forward: fwd}, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fwd.Run(ctx) }()
	body, _ := export(testSpan{"a", time.Second, 1}, testSpan{"b", 2 * time.Second, 1}).MarshalProto()
	if w := post(t, up, contentProtobuf, body); w.Code != http.StatusOK {
		t.Fatalf("export: %d", w.Code)
	}
	select {
	case <-served:
	case err := <-done:
		t.Fatalf("forwarder stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the export was not forwarded within 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, _ := downStore.Retained(); n != 2 {
		t.Errorf("downstream stored %d spans, want 2", n)
	}
}

// FuzzHTTPJSON posts arbitrary bytes as an OTLP/JSON export: the receiver
// answers 200 or a 4xx and never panics, and whatever it stores came from a
// decodable export.
func FuzzHTTPJSON(f *testing.F) {
	good, _ := export(testSpan{"a", time.Second, 1}).MarshalJSON()
	f.Add(good)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"llm_request","attributes":[{"key":"gen_ai.latency.e2e","value":{"doubleValue":"NaN"}}]}]}]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, store := newTestReceiver(t)
		w := post(t, r, contentJSON, body)
		switch {
		case w.Code == http.StatusOK:
		case w.Code >= 400 && w.Code < 500:
			if n, _ := store.Retained(); n != 0 {
				t.Fatalf("refused export stored %d records", n)
			}
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}
