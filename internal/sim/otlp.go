package sim

import (
	"context"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SpanProtocol is the OTLP transport a SpanEmitter exports with.
type SpanProtocol string

// The transports vLLM's exporter offers (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL).
const (
	SpanGRPC SpanProtocol = "grpc"
	SpanHTTP SpanProtocol = "http/protobuf"
)

// SpanOptions configure a SpanEmitter.
type SpanOptions struct {
	// Endpoint is the receiver's host:port.
	Endpoint string
	// Protocol is SpanGRPC (default) or SpanHTTP.
	Protocol SpanProtocol
	// ServiceName is the resource's service.name; "vllm" by default.
	ServiceName string
	// SampleRatio, in (0, 1), samples that share of the requests by trace
	// id, as OTEL_TRACES_SAMPLER=traceidratio does; 0 or 1 keeps every one.
	SampleRatio float64
	// Adapters lists LoRA adapters per model name. Request i of a model with
	// k adapters asks for adapter i mod (k+1), the last slot being the base
	// model: see SpanEmitter.Adapter.
	Adapters map[string][]string
}

// SpanEmitter sends one `llm_request` span per finished request through the
// OpenTelemetry Go SDK's OTLP exporter, with vLLM's attributes: what a vLLM
// started with --otlp-traces-endpoint sends. Requests lost in a restart get
// no span, as in vLLM. Set Hook as the sim's Config.OnDone.
type SpanEmitter struct {
	opts     SpanOptions
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// NewSpanEmitter connects an OTLP exporter to the endpoint (the connection is
// made lazily; an unreachable receiver loses spans, as it would for vLLM).
func NewSpanEmitter(ctx context.Context, opts SpanOptions) (*SpanEmitter, error) {
	if opts.ServiceName == "" {
		opts.ServiceName = "vllm"
	}
	var exp sdktrace.SpanExporter
	var err error
	switch opts.Protocol {
	case SpanGRPC, "":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(opts.Endpoint), otlptracegrpc.WithInsecure())
	case SpanHTTP:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(opts.Endpoint), otlptracehttp.WithInsecure())
	default:
		return nil, fmt.Errorf("span emitter: protocol %q: want %q or %q", opts.Protocol, SpanGRPC, SpanHTTP)
	}
	if err != nil {
		return nil, fmt.Errorf("span emitter: %w", err)
	}
	sampler := sdktrace.AlwaysSample()
	if opts.SampleRatio > 0 && opts.SampleRatio < 1 {
		sampler = sdktrace.TraceIDRatioBased(opts.SampleRatio)
	}
	res := resource.NewSchemaless(attribute.String("service.name", opts.ServiceName))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
		// Blocking: the simulator must not drop spans on its own; loss is
		// what the tests inject on purpose.
		sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
	)
	return &SpanEmitter{opts: opts, provider: tp, tracer: tp.Tracer("vllm.sim")}, nil
}

// Adapter returns the LoRA adapter request r asked for ("" for the base model).
func (e *SpanEmitter) Adapter(r Request) string {
	names := e.opts.Adapters[r.Model]
	if i := int(r.ID % int64(len(names)+1)); i < len(names) {
		return names[i]
	}
	return ""
}

// RequestID is the gen_ai.request.id the emitter gives request r.
func RequestID(r Request) string {
	return r.Model + "-" + strconv.FormatInt(r.ID, 10)
}

// Hook emits the span of a finished request; requests lost in a restart
// have none.
func (e *SpanEmitter) Hook(r Request) {
	if !r.Finished() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Float64("gen_ai.latency.time_to_first_token", r.TTFT()),
		attribute.Float64("gen_ai.latency.e2e", r.E2E()),
		attribute.Float64("gen_ai.latency.time_in_queue", r.QueueTime()),
		attribute.Float64("gen_ai.latency.time_in_model_prefill", r.PrefillTime()),
		attribute.Float64("gen_ai.latency.time_in_model_decode", r.DecodeTime()),
		attribute.Float64("gen_ai.latency.time_in_model_inference", r.InferenceTime()),
		attribute.Int("gen_ai.usage.prompt_tokens", r.PromptTokens),
		attribute.Int("gen_ai.usage.completion_tokens", r.OutputTokens),
		attribute.String("gen_ai.request.id", RequestID(r)),
		attribute.String("gen_ai.response.model", r.Model),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{r.FinishedReason}),
	}
	if a := e.Adapter(r); a != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", a))
	}
	_, span := e.tracer.Start(context.Background(), "llm_request",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(r.Arrival),
		trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(r.Finish))
}

// Shutdown flushes and closes the exporter.
func (e *SpanEmitter) Shutdown(ctx context.Context) error {
	if err := e.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("span emitter: shutdown: %w", err)
	}
	return nil
}
