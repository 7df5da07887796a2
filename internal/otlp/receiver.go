package otlp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// The defaults of the receiver.
const (
	DefaultGRPCAddress  = "127.0.0.1:4317"
	DefaultHTTPAddress  = "127.0.0.1:4318"
	DefaultMaxBodyBytes = 4 << 20
	DefaultTimeout      = 10 * time.Second
	// TracesPath is where OTLP/HTTP exporters post traces.
	TracesPath = "/v1/traces"
)

// Options configure a Receiver.
type Options struct {
	// GRPCAddress and HTTPAddress are the listen addresses; "" disables one.
	GRPCAddress, HTTPAddress string
	// TLS, when set, serves both with TLS.
	TLS *tls.Config
	// MaxBodyBytes bounds one export (after decompression); larger ones are
	// refused whole.
	MaxBodyBytes int64
	// Timeout bounds reading one request.
	Timeout time.Duration
	// Router routes spans to targets.
	Router *Router
	// Forward, when set, receives every accepted export.
	Forward *Forwarder
	Logger  *slog.Logger
	// ReadBudget and DecodeBudget bound the memory of the exports in
	// flight, in bytes (see ReadBudgetBodies, DecodeBudgetBodies);
	// MaxInFlight caps their number per transport. Zero means the default;
	// the read budget is raised to hold at least one export of MaxBodyBytes.
	ReadBudget, DecodeBudget int64
	MaxInFlight              int
}

// Receiver is the OTLP trace receiver. It runs as one actor: Run serves until
// its context is cancelled.
type Receiver struct {
	opts    Options
	store   *traces.Store
	metrics *metrics
	// read and decodePool are the memory budget of the exports in flight,
	// the in-flight pools their number per transport (see budget.go).
	read, decodePool           *pool
	httpInFlight, grpcInFlight *pool

	mu                 sync.Mutex
	grpcAddr, httpAddr string
	started            bool
	ready              chan struct{}
}

// New returns a receiver feeding store. It listens only when Run is called.
func New(opts Options, store *traces.Store) (*Receiver, error) {
	if opts.Router == nil {
		return nil, errors.New("otlp receiver: no router")
	}
	if opts.GRPCAddress == "" && opts.HTTPAddress == "" {
		return nil, errors.New("otlp receiver: neither a gRPC nor an HTTP listen address")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReadBudget <= 0 {
		opts.ReadBudget = ReadBudgetBodies * opts.MaxBodyBytes
	}
	opts.ReadBudget = max(opts.ReadBudget, opts.MaxBodyBytes)
	if opts.DecodeBudget <= 0 {
		opts.DecodeBudget = DecodeBudgetBodies * opts.MaxBodyBytes
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	m := newMetrics(store)
	if opts.Forward != nil {
		opts.Forward.count = func(outcome string) { m.forwarded.WithLabelValues(outcome).Inc() }
	}
	return &Receiver{opts: opts, store: store, metrics: m, ready: make(chan struct{}),
		read: &pool{limit: opts.ReadBudget}, decodePool: &pool{limit: opts.DecodeBudget},
		httpInFlight: &pool{limit: int64(opts.MaxInFlight)}, grpcInFlight: &pool{limit: int64(opts.MaxInFlight)},
	}, nil
}

// Collector returns the receiver's own series: exports and spans by outcome,
// forwarding, and the requests retained.
func (r *Receiver) Collector() prometheus.Collector { return r.metrics }

// Ready is closed once Run listens on every address.
func (r *Receiver) Ready() <-chan struct{} { return r.ready }

// Addrs returns the addresses listened on (useful with port 0); empty before
// Ready.
func (r *Receiver) Addrs() (grpcAddr, httpAddr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grpcAddr, r.httpAddr
}

// Run listens and serves until ctx is cancelled, then stops both servers
// (letting exports in progress finish, for at most the timeout) and returns
// nil; it returns an error when an address cannot be listened on or a server
// fails. A receiver runs once.
func (r *Receiver) Run(ctx context.Context) error {
	r.mu.Lock()
	again := r.started
	r.started = true
	r.mu.Unlock()
	if again {
		return errors.New("otlp receiver: Run called twice")
	}
	var lc net.ListenConfig
	var grpcLn, httpLn net.Listener
	var err error
	if r.opts.GRPCAddress != "" {
		if grpcLn, err = lc.Listen(ctx, "tcp", r.opts.GRPCAddress); err != nil {
			return fmt.Errorf("otlp gRPC: %w", err)
		}
	}
	if r.opts.HTTPAddress != "" {
		if httpLn, err = lc.Listen(ctx, "tcp", r.opts.HTTPAddress); err != nil {
			if grpcLn != nil {
				_ = grpcLn.Close()
			}
			return fmt.Errorf("otlp HTTP: %w", err)
		}
	}
	r.mu.Lock()
	if grpcLn != nil {
		r.grpcAddr = grpcLn.Addr().String()
	}
	if httpLn != nil {
		r.httpAddr = httpLn.Addr().String()
	}
	r.mu.Unlock()
	close(r.ready)

	errs := make(chan error, 2)
	var stops []func()
	if grpcLn != nil {
		srv := r.grpcServer()
		go func() { errs <- serveErr("otlp gRPC", srv.Serve(grpcLn)) }()
		stops = append(stops, func() { stopGRPC(srv, r.opts.Timeout) })
	}
	if httpLn != nil {
		srv := r.httpServer()
		if r.opts.TLS != nil {
			httpLn = tls.NewListener(httpLn, r.opts.TLS)
		}
		go func() { errs <- serveErr("otlp HTTP", srv.Serve(httpLn)) }()
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
	}
	r.opts.Logger.Info("OTLP trace receiver listening", "grpc", r.grpcAddr, "http", r.httpAddr)
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	for _, stop := range stops {
		stop()
	}
	return runErr
}

func serveErr(what string, err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// stopGRPC stops gracefully, cutting connections still open after timeout.
func stopGRPC(srv *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		srv.Stop()
	}
}

// ingest decodes an export, stores its spans and counts every outcome. The
// response reports spans that were not stored as rejected, with the reasons.
func (r *Receiver) ingest(td ptrace.Traces) ptraceotlp.ExportResponse {
	var got traces.Outcome
	skipped := decode(td, r.opts.Router, func(spans []traces.Span) {
		o := r.store.Add(spans)
		got.Added += o.Added
		got.Duplicates += o.Duplicates
		got.TooOld += o.TooOld
		got.TooNew += o.TooNew
		got.Invalid += o.Invalid
		got.Refused += o.Refused
	})
	r.metrics.spans("stored", got.Added)
	r.metrics.spans("duplicate", got.Duplicates)
	r.metrics.spans("too_old", got.TooOld)
	r.metrics.spans("too_new", got.TooNew)
	r.metrics.spans(outcomeInvalidValue, got.Invalid)
	r.metrics.spans("refused", got.Refused)
	rejected := got.TooOld + got.TooNew + got.Invalid + got.Refused
	for reason, n := range skipped {
		r.metrics.spans(reason, n)
		if reason != outcomeOtherSpan {
			rejected += n
		}
	}
	resp := ptraceotlp.NewExportResponse()
	if rejected > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(rejected))
		ps.SetErrorMessage(rejectionMessage(rejected, skipped, got))
	}
	return resp
}

func (r *Receiver) forward(req ptraceotlp.ExportRequest) {
	if r.opts.Forward == nil {
		return
	}
	r.opts.Forward.Enqueue(req)
}

// rejectionMessage says why spans were not stored.
func rejectionMessage(rejected int, skipped map[string]int, got traces.Outcome) string {
	msg := fmt.Sprintf("%d llm_request spans not stored:", rejected)
	for _, reason := range slices.Sorted(maps.Keys(skipped)) {
		if reason != outcomeOtherSpan {
			msg += fmt.Sprintf(" %s %d", reason, skipped[reason])
		}
	}
	if got.TooOld > 0 {
		msg += fmt.Sprintf(" too_old %d (ended before the retention)", got.TooOld)
	}
	if got.TooNew > 0 {
		msg += fmt.Sprintf(" too_new %d (ended more than the allowed clock skew after the receiver's clock)", got.TooNew)
	}
	if got.Invalid > 0 {
		msg += fmt.Sprintf(" %s %d (a negative or infinite latency)", outcomeInvalidValue, got.Invalid)
	}
	if got.Refused > 0 {
		msg += fmt.Sprintf(" refused %d (over the model or adapter cap)", got.Refused)
	}
	return msg
}
