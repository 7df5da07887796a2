package otlp

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// TestInvalidValuesRefused: a span with a negative, infinite or NaN latency,
// a negative token count or a latency that is not a number is refused whole
// and counted as invalid_value; the sender learns it from the partial
// success; a valid span beside them is stored.
func TestInvalidValuesRefused(t *testing.T) {
	r, store := newTestReceiver(t)
	req := export(testSpan{"ok", 10 * time.Second, 1}, testSpan{"neg", 11 * time.Second, 1}, testSpan{"inf", 12 * time.Second, 1},
		testSpan{"nan", 13 * time.Second, 1}, testSpan{"tokens", 14 * time.Second, 1}, testSpan{"text", 15 * time.Second, 1})
	spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(1).Attributes().PutDouble(AttrTTFT, -100)
	spans.At(2).Attributes().PutDouble(AttrE2E, math.Inf(1))
	spans.At(3).Attributes().PutDouble(AttrQueue, math.NaN())
	spans.At(4).Attributes().PutInt(AttrCompletionTokens, -5)
	spans.At(5).Attributes().PutStr(AttrDecode, "0.5")
	body, _ := req.MarshalProto()
	w := post(t, r, contentProtobuf, body)
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	resp := ptraceotlp.NewExportResponse()
	if err := resp.UnmarshalProto(w.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedSpans() != 5 || !strings.Contains(ps.ErrorMessage(), "invalid_value 5") {
		t.Errorf("partial success = %d %q, want 5 invalid_value", ps.RejectedSpans(), ps.ErrorMessage())
	}
	if got := testutil.ToFloat64(r.metrics.spanOutcomes.WithLabelValues(outcomeInvalidValue)); got != 5 {
		t.Errorf("invalid_value counted %v, want 5", got)
	}
	if n, _ := store.Retained(); n != 1 {
		t.Errorf("%d records stored, want the valid one", n)
	}
}

// TestSpanFromTheFuture: one span dated 2200 is refused as too_new (told to
// the sender, counted); the records kept stay, and the next spans are stored,
// not refused as too old.
func TestSpanFromTheFuture(t *testing.T) {
	r, store := newTestReceiver(t)
	var first []testSpan
	for i := range 100 {
		first = append(first, testSpan{string(rune('a'+i%26)) + string(rune('a'+i/26)), time.Duration(i) * time.Second, 1})
	}
	body, _ := export(first...).MarshalProto()
	post(t, r, contentProtobuf, body)
	future, _ := export(testSpan{"future", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Sub(t0), 1}).MarshalProto()
	w := post(t, r, contentProtobuf, future)
	resp := ptraceotlp.NewExportResponse()
	if err := resp.UnmarshalProto(w.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), "too_new 1") {
		t.Errorf("partial success = %d %q, want 1 too_new", ps.RejectedSpans(), ps.ErrorMessage())
	}
	if got := testutil.ToFloat64(r.metrics.spanOutcomes.WithLabelValues("too_new")); got != 1 {
		t.Errorf("too_new counted %v, want 1", got)
	}
	next, _ := export(testSpan{"next", 110 * time.Second, 1}).MarshalProto()
	post(t, r, contentProtobuf, next)
	if n, _ := store.Retained(); n != 101 {
		t.Errorf("%d records kept, want the 100 before the span from the future and the one after", n)
	}
}

// TestForwardQueueBytesBounded: exports wait to be forwarded within
// ForwardQueueBytes; beyond it they are dropped and counted, and the bytes
// leave the count as the queue drains.
func TestForwardQueueBytesBounded(t *testing.T) {
	f := NewForwarder("http://127.0.0.1:1/v1/traces", nil, time.Second, 1000, nil)
	dropped := 0
	f.count = func(outcome string) {
		if outcome == "dropped" {
			dropped++
		}
	}
	var spans []testSpan
	for i := range 20000 {
		spans = append(spans, testSpan{string(rune('a'+i%26)) + string(rune('a'+i/26%26)), time.Duration(i) * time.Millisecond, 1})
	}
	req := export(spans...)
	body, _ := req.MarshalProto()
	fits := ForwardQueueBytes / len(body)
	for range fits + 3 {
		f.Enqueue(req)
	}
	if dropped != 3 || len(f.queue) != fits {
		t.Errorf("%d queued, %d dropped; want %d queued (%d bytes each within %d) and 3 dropped", len(f.queue), dropped, fits, len(body), ForwardQueueBytes)
	}
	for len(f.queue) > 0 {
		f.hold(-int64(len(<-f.queue)))
	}
	if f.queued != 0 {
		t.Errorf("%d bytes counted in an empty queue", f.queued)
	}
}

// TestTokenAttributeNames: the token counts are read under today's names,
// under the GenAI conventions' input/output names (preferred when a span
// carries both), and the cache-read count beside them; each variant gives
// the same span, and a negative cache-read count refuses it.
func TestTokenAttributeNames(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		attrs                  map[string]int64
		prompt, output, cached int
		invalid                bool
	}{
		{"today's names", map[string]int64{AttrPromptTokens: 12, AttrCompletionTokens: 34}, 12, 34, -1, false},
		{"input and output", map[string]int64{AttrInputTokens: 12, AttrOutputTokens: 34, AttrCacheReadTokens: 8}, 12, 34, 8, false},
		{"both, the newer read", map[string]int64{AttrPromptTokens: 1, AttrCompletionTokens: 2, AttrInputTokens: 12, AttrOutputTokens: 34}, 12, 34, -1, false},
		{"negative cache read", map[string]int64{AttrInputTokens: 12, AttrOutputTokens: 34, AttrCacheReadTokens: -1}, 0, 0, 0, true},
	} {
		sp := ptrace.NewSpan()
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Second)))
		sp.Attributes().PutDouble(AttrE2E, 1)
		for k, v := range tc.attrs {
			sp.Attributes().PutInt(k, v)
		}
		got, err := spanOf(sp, Route{Target: "gpu0", Model: "m"}, DefaultAdapterAttribute)
		if tc.invalid {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil || got.PromptTokens != tc.prompt || got.CompletionTokens != tc.output || got.CachedTokens != tc.cached {
			t.Errorf("%s: %+v, %v; want prompt %d, output %d, cached %d", tc.name, got, err, tc.prompt, tc.output, tc.cached)
		}
	}
}
