package otlp

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// exportMethod is OTLP/gRPC's trace export.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// The trace service, registered by hand rather than through pdata's
// generated one: gRPC hands its handler the export's bytes (rawCodec), and
// the handler decodes them only once the memory budget allows.
var traceService = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Export",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in rawMessage
			if err := dec(&in); err != nil {
				return nil, err
			}
			return srv.(*Receiver).exportGRPC(ctx, in.b)
		},
	}},
	Metadata: "opentelemetry/proto/collector/trace/v1/trace_service.proto",
}

// rawMessage is a message as it travels: bytes.
type rawMessage struct{ b []byte }

// rawCodec is the server's codec: it passes a rawMessage's bytes through
// and leaves every other message to protobuf. gRPC gives Unmarshal a copy
// of the message that it does not reuse, so keeping it is safe.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *rawMessage:
		return m.b, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("otlp gRPC codec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *rawMessage:
		m.b = data
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("otlp gRPC codec: cannot unmarshal into %T", v)
}

func (r *Receiver) grpcServer() *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(r.opts.MaxBodyBytes, 1<<30))),
		grpc.ConnectionTimeout(r.opts.Timeout),
		grpc.StatsHandler(grpcOutcomes{m: r.metrics}),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.InTapHandle(r.admitStream),
	}
	if r.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(r.opts.TLS)))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&traceService, r)
	return srv
}

// streamKey holds a stream's read reservation in its context.
type streamKey struct{}

// admitStream runs before gRPC reads an export: it reserves a slot and the
// largest body from the budget, or refuses the stream (UNAVAILABLE, with
// the retry delay) without reading it. What it reserves is given back when
// the stream ends, whatever the way.
func (r *Receiver) admitStream(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != exportMethod {
		return ctx, nil
	}
	slot := r.grpcInFlight.reserve(1)
	if slot == nil {
		r.metrics.export("grpc", "unavailable")
		return ctx, throttled(fmt.Sprintf("more than %d exports in flight", r.opts.MaxInFlight))
	}
	body := r.read.reserve(r.opts.MaxBodyBytes)
	if body == nil {
		slot.release()
		r.metrics.export("grpc", "unavailable")
		return ctx, throttled("the memory for exports being read is in use")
	}
	context.AfterFunc(ctx, func() {
		body.release()
		slot.release()
	})
	return context.WithValue(ctx, streamKey{}, body), nil
}

// throttled is OTLP's answer to a sender that must slow down: UNAVAILABLE
// (always retryable) with a RetryInfo saying when.
func throttled(why string) error {
	st := status.New(codes.Unavailable, "otlp receiver busy, retry later: "+why)
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryAfter)}); err == nil {
		st = withInfo
	}
	return st.Err()
}

// exportGRPC decodes an export's bytes within the budget and ingests it.
func (r *Receiver) exportGRPC(ctx context.Context, body []byte) (*rawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.Error(codes.Canceled, err.Error())
	}
	if res, ok := ctx.Value(streamKey{}).(*reservation); ok {
		res.shrink(int64(len(body)))
	}
	cost, err := r.reserveDecode(body, false)
	switch {
	case errors.Is(err, errOverBudget):
		return nil, status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, errBusy):
		return nil, throttled(err.Error())
	case err != nil:
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	defer cost.release()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("decode export: %v", err))
	}
	resp := r.ingest(req.Traces())
	r.forward(req)
	out, err := resp.MarshalProto()
	if err != nil {
		return nil, status.Error(codes.Internal, fmt.Sprintf("encode response: %v", err))
	}
	return &rawMessage{b: out}, nil
}

// Why reserveDecode refused an export.
var (
	// errOverBudget: decoding it would take more than the whole budget, so
	// it can never be admitted (not retryable).
	errOverBudget = errors.New("over the decoding budget")
	// errBusy: the budget is in use by other exports (retryable).
	errBusy = errors.New("the memory for decoding exports is in use")
)

// reserveDecode reserves what decoding body will allocate; an error that is
// neither errOverBudget nor errBusy means the body is not protobuf.
func (r *Receiver) reserveDecode(body []byte, json bool) (*reservation, error) {
	cost, err := decodeCost(body, json)
	if err != nil {
		return nil, fmt.Errorf("decode export: %w", err)
	}
	if cost > r.decodePool.limit {
		return nil, fmt.Errorf("export of %d bytes would take about %d bytes to decode: %w of %d bytes", len(body), cost, errOverBudget, r.decodePool.limit)
	}
	res := r.decodePool.reserve(cost)
	if res == nil {
		return nil, errBusy
	}
	return res, nil
}
