package otlp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// bytesCodec sends bytes as they are, to put garbage on the wire.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("bytesCodec: %T", v)
	}
	return *b, nil
}
func (bytesCodec) Unmarshal(data []byte, v any) error { return nil }
func (bytesCodec) Name() string                       { return "proto" }

// TestGRPCLimitsAndGarbage: an export within the limit is stored; one over
// it gets ResourceExhausted and a message that is not protobuf an error; all
// are counted by outcome, and the receiver keeps serving.
func TestGRPCLimitsAndGarbage(t *testing.T) {
	store := traces.NewStore(traces.Limits{Retain: time.Hour, Now: testNow})
	r, err := New(Options{GRPCAddress: "127.0.0.1:0", MaxBodyBytes: 4 << 10, Router: NewRouter(nil, "", []string{"gpu0"}, "")}, store)
	if err != nil {
		t.Fatal(err)
	}
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

	if _, err := client.Export(rctx, export(testSpan{"a", time.Second, 1})); err != nil {
		t.Fatalf("small export: %v", err)
	}
	var big []testSpan
	for i := range 200 {
		big = append(big, testSpan{fmt.Sprint(i), time.Duration(i) * time.Millisecond, 1})
	}
	_, err = client.Export(rctx, export(big...))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("export over the limit: %v, want ResourceExhausted", err)
	}
	garbage := []byte{0xff, 0xff, 0xff, 0x0f, 0x01}
	var reply []byte
	err = conn.Invoke(rctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &garbage, &reply, grpc.ForceCodec(bytesCodec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("garbage export: %v, want InvalidArgument (it does not unmarshal; not retryable)", err)
	}
	if n, _ := store.Retained(); n != 1 {
		t.Errorf("%d records stored, want the one valid span", n)
	}
	// The server counts an RPC when it ends, which may be just after the
	// client has its answer: stop the server (it waits for every RPC) first.
	conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	counted := func(outcome string) float64 {
		return testutil.ToFloat64(r.metrics.exports.WithLabelValues("grpc", outcome))
	}
	if counted("ok") != 1 || counted("resource_exhausted") != 1 || counted(snake(status.Code(err).String())) != 1 {
		t.Errorf("outcomes ok %v, resource_exhausted %v, %s %v", counted("ok"), counted("resource_exhausted"), status.Code(err), counted(snake(status.Code(err).String())))
	}
}
