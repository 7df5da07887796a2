package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// DefaultForwardQueue is how many exports may wait to be forwarded.
const DefaultForwardQueue = 64

// ForwardQueueBytes bounds the bytes of the exports waiting to be
// forwarded: without it, 64 exports of the largest size would hold 256 MiB
// while the downstream is slow, outside the receiver's budget.
const ForwardQueueBytes = 16 << 20

// Forwarder sends the exports the receiver accepted on to a downstream
// OTLP/HTTP endpoint (a Collector, Jaeger, Tempo), as protobuf, so that
// enabling exact mode costs nobody their traces. It never blocks the
// receiver: when the queue is full an export is dropped and counted.
type Forwarder struct {
	url string
	// display is url as logs and errors show it: password and query
	// values hidden (scrape.RedactText), since a downstream's URL may carry
	// an API key.
	display string
	client  *http.Client
	timeout time.Duration
	queue   chan []byte
	logger  *slog.Logger
	count   func(outcome string)

	mu     sync.Mutex
	queued int64 // bytes in queue
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
	return &Forwarder{url: url, display: scrape.RedactText(url), client: client, timeout: timeout, queue: make(chan []byte, queue), logger: logger, count: func(string) {}}
}

// Enqueue marshals an export and queues it, dropping it when the queue is
// full (in number or in ForwardQueueBytes).
func (f *Forwarder) Enqueue(req ptraceotlp.ExportRequest) {
	body, err := req.MarshalProto()
	if err != nil {
		f.count("failed")
		return
	}
	if !f.hold(int64(len(body))) {
		f.count("dropped")
		return
	}
	select {
	case f.queue <- body:
	default:
		f.hold(-int64(len(body)))
		f.count("dropped")
	}
}

// hold adds n bytes to the queue's size if they fit (n < 0 removes them).
func (f *Forwarder) hold(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > 0 && f.queued+n > ForwardQueueBytes {
		return false
	}
	f.queued += n
	return true
}

// Run posts queued exports until ctx is cancelled.
func (f *Forwarder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case body := <-f.queue:
			f.hold(-int64(len(body)))
			if err := f.post(ctx, body); err != nil {
				f.count("failed")
				f.logger.Warn("forwarding OTLP export failed", "url", f.display, "err", err)
				continue
			}
			f.count("ok")
		}
	}
}

// post sends one export. Its errors show every URL they quote redacted
// (redactedError): net/http's repeats the request URL, query included, and
// an OAuth2 client's names its token_url.
func (f *Forwarder) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return redactedError{fmt.Errorf("forward request: %w", err)}
	}
	req.Header.Set("Content-Type", contentProtobuf)
	resp, err := f.client.Do(req)
	if err != nil {
		return redactedError{fmt.Errorf("forward to %s: %w", f.display, err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("forward: %s answered %s", f.display, resp.Status)
	}
	return nil
}

// redactedError is an error whose text has every URL in it redacted
// (scrape.RedactText), and which still unwraps to the cause.
type redactedError struct{ err error }

func (e redactedError) Error() string { return scrape.RedactText(e.err.Error()) }

func (e redactedError) Unwrap() error { return e.err }
