// Package otlp is the OpenTelemetry trace receiver of exact mode: it accepts
// OTLP exports over gRPC and HTTP (protobuf or JSON), picks vLLM's
// `llm_request` spans, routes each to a configured target, and hands them to
// a traces.Store. It can forward what it received to a downstream OTLP/HTTP
// endpoint so that enabling exact mode costs nobody their traces.
//
// It never computes SLO numbers: package traces does, from the store. It
// never reads or decodes an export before reserving the memory that costs
// (budget.go): a sender that finds the budget in use is told to retry.
package otlp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// The span vLLM emits per finished request and the attributes read from it
// (vLLM's SpanAttributes, in vllm/tracing).
const (
	SpanName = "llm_request"

	AttrTTFT             = "gen_ai.latency.time_to_first_token"
	AttrE2E              = "gen_ai.latency.e2e"
	AttrQueue            = "gen_ai.latency.time_in_queue"
	AttrPrefill          = "gen_ai.latency.time_in_model_prefill"
	AttrDecode           = "gen_ai.latency.time_in_model_decode"
	AttrInference        = "gen_ai.latency.time_in_model_inference"
	AttrPromptTokens     = "gen_ai.usage.prompt_tokens"
	AttrCompletionTokens = "gen_ai.usage.completion_tokens"
	// AttrInputTokens and AttrOutputTokens are the OpenTelemetry GenAI
	// conventions' names for the same counts, which vLLM is moving to; a
	// span carrying either spelling is read, the newer first.
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
	// AttrCacheReadTokens is the prompt tokens read from the prefix cache.
	AttrCacheReadTokens = "gen_ai.usage.cache_read.input_tokens"
	AttrRequestID       = "gen_ai.request.id"
	AttrResponseModel   = "gen_ai.response.model"
	AttrFinishReasons   = "gen_ai.response.finish_reasons"
	// DefaultAdapterAttribute names the LoRA adapter a request asked for
	// (OpenTelemetry's GenAI convention for the requested model): vLLM
	// serves an adapter under its own model name.
	DefaultAdapterAttribute = "gen_ai.request.model"
)

// Span outcomes counted besides the store's.
const (
	outcomeUnknownTarget = "unknown_target"
	outcomeNoEndTime     = "no_end_time"
	outcomeOtherSpan     = "other_span"
	// outcomeInvalidValue is a span with a latency or token count that is
	// not a finite, non-negative number: refused whole, as the scrape path
	// refuses such a sample (its reason has the same name).
	outcomeInvalidValue = "invalid_value"
)

// errInvalidValue marks a span refused for one of its values.
var errInvalidValue = errors.New("invalid value")

// decodeChunk is how many decoded spans go to the store at once: the
// receiver's own memory per export stays this size, however many spans the
// export holds.
const decodeChunk = 1024

// decode extracts the llm_request spans of an export, routes them, and
// hands them to emit in chunks of at most decodeChunk (the slice is reused
// after emit returns). It returns the spans not emitted, by reason.
func decode(td ptrace.Traces, r *Router, emit func([]traces.Span)) map[string]int {
	skipped := map[string]int{}
	chunk := make([]traces.Span, 0, min(td.SpanCount(), decodeChunk))
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		route, ok := r.Route(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				switch {
				case sp.Name() != SpanName:
					skipped[outcomeOtherSpan]++
				case !ok:
					skipped[outcomeUnknownTarget]++
				default:
					s, err := spanOf(sp, route, r.adapterAttribute)
					switch {
					case errors.Is(err, errInvalidValue):
						skipped[outcomeInvalidValue]++
						continue
					case err != nil:
						skipped[outcomeNoEndTime]++
						continue
					}
					if chunk = append(chunk, s); len(chunk) == decodeChunk {
						emit(chunk)
						chunk = chunk[:0]
					}
				}
			}
		}
	}
	if len(chunk) > 0 {
		emit(chunk)
	}
	return skipped
}

// spanOf reads one llm_request span. The end time is the span's end, or its
// start (vLLM's arrival time) plus e2e when the end is missing. A latency or
// token count that is present but not a finite, non-negative number refuses
// the span (errInvalidValue).
func spanOf(sp ptrace.Span, route Route, adapterAttr string) (traces.Span, error) {
	attrs := sp.Attributes()
	v := values{attrs: attrs}
	s := traces.Span{
		Target:           route.Target,
		Model:            str(attrs, AttrResponseModel),
		TTFT:             v.float(AttrTTFT),
		E2E:              v.float(AttrE2E),
		Queue:            v.float(AttrQueue),
		Prefill:          v.float(AttrPrefill),
		Decode:           v.float(AttrDecode),
		Inference:        v.float(AttrInference),
		PromptTokens:     v.integer(AttrInputTokens, AttrPromptTokens),
		CompletionTokens: v.integer(AttrOutputTokens, AttrCompletionTokens),
		CachedTokens:     v.integer(AttrCacheReadTokens),
		RequestID:        str(attrs, AttrRequestID),
		FinishReason:     firstReason(attrs),
	}
	if v.invalid != "" {
		return traces.Span{}, fmt.Errorf("span %s: %s: %w", sp.SpanID(), v.invalid, errInvalidValue)
	}
	if s.Model == "" {
		s.Model = route.Model
	}
	if adapterAttr != "" {
		if a := str(attrs, adapterAttr); a != s.Model {
			s.Adapter = a
		}
	}
	if s.RequestID == "" {
		s.RequestID = sp.TraceID().String() + "/" + sp.SpanID().String()
	}
	switch {
	case sp.EndTimestamp() != 0:
		s.End = sp.EndTimestamp().AsTime()
	case sp.StartTimestamp() != 0 && finite(s.E2E):
		s.End = sp.StartTimestamp().AsTime().Add(time.Duration(s.E2E * float64(time.Second)))
	default:
		return traces.Span{}, fmt.Errorf("span %s has neither an end time nor a start time and %s", sp.SpanID(), AttrE2E)
	}
	return s, nil
}

func str(m pcommon.Map, key string) string {
	v, ok := m.Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

// values reads a span's numeric attributes, noting the first that is
// present but not a valid value.
type values struct {
	attrs   pcommon.Map
	invalid string
}

func (v *values) refuse(key string, val pcommon.Value) {
	if v.invalid == "" {
		v.invalid = fmt.Sprintf("%s is %s %q, not a finite non-negative number", key, val.Type(), val.AsString())
	}
}

// float reads a latency attribute in seconds; NaN when absent.
func (v *values) float(key string) float64 {
	val, ok := v.attrs.Get(key)
	if !ok {
		return math.NaN()
	}
	f := math.NaN()
	switch val.Type() {
	case pcommon.ValueTypeDouble:
		f = val.Double()
	case pcommon.ValueTypeInt:
		f = float64(val.Int())
	}
	if !(f >= 0) || math.IsInf(f, 0) {
		v.refuse(key, val)
		return math.NaN()
	}
	return f
}

// integer reads a count attribute, the first of keys present; -1 when none is.
func (v *values) integer(keys ...string) int {
	var key string
	var val pcommon.Value
	ok := false
	for _, key = range keys {
		if val, ok = v.attrs.Get(key); ok {
			break
		}
	}
	if !ok {
		return -1
	}
	switch val.Type() {
	case pcommon.ValueTypeInt:
		if n := val.Int(); n >= 0 && n <= math.MaxInt32 {
			return int(n)
		}
	case pcommon.ValueTypeDouble:
		if f := val.Double(); f >= 0 && f <= math.MaxInt32 && f == math.Trunc(f) {
			return int(f)
		}
	}
	v.refuse(key, val)
	return -1
}

func firstReason(m pcommon.Map) string {
	v, ok := m.Get(AttrFinishReasons)
	if !ok {
		return ""
	}
	if v.Type() == pcommon.ValueTypeSlice {
		if s := v.Slice(); s.Len() > 0 {
			return s.At(0).AsString()
		}
		return ""
	}
	return v.AsString()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
