package otlp

import (
	"context"
	"strings"

	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// grpcOutcomes counts every finished gRPC export by its status, including
// those that gRPC refuses before the handler runs (an oversized or
// undecodable message), so that garbage on gRPC is counted like on HTTP.
type grpcOutcomes struct {
	m *metrics
}

// TagRPC passes the context through.
func (g grpcOutcomes) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC counts the end of each RPC: "ok", or the gRPC code in snake case
// ("resource_exhausted" for a message over the size limit, "internal" or
// "invalid_argument" for one that does not decode).
func (g grpcOutcomes) HandleRPC(_ context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok || end.IsClient() {
		return
	}
	outcome := "ok"
	if end.Error != nil {
		outcome = snake(status.Code(end.Error).String())
	}
	g.m.export("grpc", outcome)
}

// TagConn passes the context through.
func (g grpcOutcomes) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn ignores connection events.
func (g grpcOutcomes) HandleConn(context.Context, stats.ConnStats) {}

// snake turns a gRPC code name ("ResourceExhausted") into a label value
// ("resource_exhausted").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
