package otlp

import (
	"bytes"
	"sync"
	"time"
)

// The receiver's memory budget. An export costs memory twice: its body while
// it is read, then the structures decoding builds from it, several times the
// body's size (8x for minimal spans, 25x for empty ones, 40x for spans
// stuffed with empty events). Unbounded, 40 concurrent 4 MiB exports took
// the process to 5.4 GB. Both costs are reserved before they are spent, from
// two pools that never wait: an export that finds its pool exhausted is
// refused at once with a retryable answer (HTTP 503 with Retry-After,
// gRPC UNAVAILABLE with RetryInfo, as OTLP specifies for throttling) and
// the sender retries later.
const (
	// ReadBudgetBodies is the default read budget, in exports of the
	// largest size (Options.MaxBodyBytes): the bodies being read or decoded
	// at once, 32 MiB at the default 4 MiB.
	ReadBudgetBodies = 8
	// DecodeBudgetBodies is the default decoding budget, in exports of the
	// largest size: what decoding the exports in flight allocates, as
	// decodeCost estimates it, 64 MiB at the default 4 MiB. An export of the
	// largest size fits unless its spans are far smaller than vLLM's (about
	// 16x expansion: 4 MiB of spans with nothing but a name and an end time
	// take 40 MB).
	DecodeBudgetBodies = 16
	// DefaultMaxInFlight caps the exports in flight per transport, whatever
	// their size.
	DefaultMaxInFlight = 64
	// RetryAfter is the delay a throttled sender is asked to wait.
	RetryAfter = time.Second
)

// pool is a weighted semaphore that never waits: tryAcquire takes n bytes if
// they are free. The zero value holds nothing; set limit.
type pool struct {
	mu          sync.Mutex
	limit, used int64
}

func (p *pool) tryAcquire(n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+n > p.limit {
		return false
	}
	p.used += n
	return true
}

func (p *pool) release(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used -= n
}

// reservation is bytes held in a pool for one export, shrunk once the
// export's real size is known, released once.
type reservation struct {
	p    *pool
	mu   sync.Mutex
	held int64
}

// shrink gives back what the export does not need beyond n bytes.
func (r *reservation) shrink(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < r.held {
		r.p.release(r.held - n)
		r.held = n
	}
}

// release gives back everything; later calls do nothing.
func (r *reservation) release() { r.shrink(0) }

// reserve takes n bytes from p, or returns nil.
func (p *pool) reserve(n int64) *reservation {
	if !p.tryAcquire(n) {
		return nil
	}
	return &reservation{p: p, held: n}
}

// Bytes one decoded message costs, from pdata's decoder: the allocation
// (runtime TotalAlloc, so slice growth included) measured per span, event,
// link and other message (resource and scope spans, resources, scopes,
// attributes, values), rounded up; TestDecodeCostBoundsAllocation checks
// that decodeCost bounds the real allocation of every shape, from empty
// spans to vLLM's.
const (
	costSpan  = 256
	costEvent = 96
	costLink  = 112
	costOther = 80
	// costChunkSpan is the receiver's own part, per span of the chunk of
	// decoded spans on their way to the store (at most decodeChunk).
	costChunkSpan = 256
)

// decodeCost estimates what decoding an export allocates, beyond its body:
// for protobuf from a scan of its messages (an error when the body is not
// even well-formed protobuf), for JSON from its objects (each at most one
// structure, of at most a span's size) since JSON cannot be scanned as
// cheaply.
func decodeCost(body []byte, json bool) (int64, error) {
	if json {
		objects := int64(bytes.Count(body, []byte("{")))
		return costChunkSpan*min(objects, decodeChunk) + 2*int64(len(body)) + costSpan*objects, nil
	}
	s, err := scanExport(body)
	if err != nil {
		return 0, err
	}
	spans := int64(s.spans)
	return costChunkSpan*min(spans, decodeChunk) + int64(len(body)) + costSpan*spans + costEvent*int64(s.events) + costLink*int64(s.links) + costOther*int64(s.others), nil
}
