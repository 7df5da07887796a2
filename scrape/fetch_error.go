package scrape

import (
	"errors"
	"fmt"
)

// The reasons a Fetch can fail, label values of
// vllm_slo_target_scrape_failures_total{reason} next to the Parse reasons.
const (
	// ReasonTimeout: the scrape timeout (or the caller's deadline) expired.
	ReasonTimeout = "timeout"
	// ReasonConnection: no response (DNS, refused, TLS, proxy, redirect loop…).
	ReasonConnection = "connection"
	// ReasonHTTPStatus: a response other than 2xx.
	ReasonHTTPStatus = "http_status"
	// ReasonBodyTooLarge: the (decompressed) body exceeds the size limit.
	ReasonBodyTooLarge = "body_too_large"
	// ReasonDecompress: a compressed body that cannot be decompressed, or an
	// unsupported Content-Encoding.
	ReasonDecompress = "decompress"
	// ReasonRead: the connection failed while the body was being read.
	ReasonRead = "read"
	// ReasonUnknown is what FailureReason says of an error it does not know.
	ReasonUnknown = "unknown"
)

// FetchError is a failed Fetch, classified by Reason.
type FetchError struct {
	// Reason is one of the fetch Reason* constants.
	Reason string
	// Err carries the context (target, method, URL) and the cause.
	Err error
}

// Error returns the message of Err, which already names the target and URL.
func (e *FetchError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *FetchError) Unwrap() error { return e.Err }

// FailureReason classifies any error returned by Fetch, Parse or Scrape into a
// short reason for the failure counter, "unknown" if it is none of them.
func FailureReason(err error) string {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ReasonUnknown
}

// fetchErr builds a FetchError whose message names the target and request.
func (f *Fetcher) fetchErr(reason string, format string, args ...any) error {
	return &FetchError{Reason: reason, Err: fmt.Errorf("target %q: GET %s: "+format, append([]any{f.name, f.display}, args...)...)}
}
