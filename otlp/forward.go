package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// DefaultForwardQueue is how many exports may wait to be forwarded.
const DefaultForwardQueue = 64

// Forwarder sends the exports the receiver accepted on to a downstream
// OTLP/HTTP endpoint (a Collector, Jaeger, Tempo), as protobuf, so that
// enabling exact mode costs nobody their traces. It never blocks the
// receiver: when the queue is full an export is dropped and counted.
type Forwarder struct {
	url     string
	client  *http.Client
	timeout time.Duration
	queue   chan []byte
	logger  *slog.Logger
	count   func(outcome string)
}

// NewForwarder returns a forwarder to url (the full path, such as
// http://127.0.0.1:14318/v1/traces) using client, each post bounded by
// timeout. Call Run to start it.
func NewForwarder(url string, client *http.Client, timeout time.Duration, queue int, logger *slog.Logger) *Forwarder {
	if queue <= 0 {
		queue = DefaultForwardQueue
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Forwarder{url: url, client: client, timeout: timeout, queue: make(chan []byte, queue), logger: logger, count: func(string) {}}
}

// Enqueue marshals an export and queues it, dropping it when the queue is full.
func (f *Forwarder) Enqueue(req ptraceotlp.ExportRequest) {
	body, err := req.MarshalProto()
	if err != nil {
		f.count("failed")
		return
	}
	select {
	case f.queue <- body:
	default:
		f.count("dropped")
	}
}

// Run posts queued exports until ctx is cancelled.
func (f *Forwarder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case body := <-f.queue:
			if err := f.post(ctx, body); err != nil {
				f.count("failed")
				f.logger.Warn("forwarding OTLP export failed", "url", f.url, "err", err)
				continue
			}
			f.count("ok")
		}
	}
}

func (f *Forwarder) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("forward request: %w", err)
	}
	req.Header.Set("Content-Type", contentProtobuf)
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("forward: %s answered %s", f.url, resp.Status)
	}
	return nil
}
