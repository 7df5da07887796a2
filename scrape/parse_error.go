package scrape

import (
	"fmt"
	"strings"
)

// The reasons a Parse can fail. They are label values of
// vllm_slo_target_scrape_failures_total{reason}, so they are few and stable.
const (
	// ReasonInvalidExposition: the body is not a Prometheus or OpenMetrics
	// exposition (syntax error, unknown Content-Type).
	ReasonInvalidExposition = "invalid_exposition"
	// ReasonInvalidHistogram: a histogram the profile needs is malformed (no
	// +Inf bucket, a bad or duplicate `le`, non-monotonic buckets, no `_sum`,
	// engines of one model with different bucket layouts).
	ReasonInvalidHistogram = "invalid_histogram"
	// ReasonInvalidValue: a sample the profile needs has an impossible value
	// (NaN or infinite anywhere, a negative count or counter).
	ReasonInvalidValue = "invalid_value"
	// ReasonDuplicateSeries: the same series (name and label set) appears twice.
	ReasonDuplicateSeries = "duplicate_series"
	// ReasonLabelTooLong: a sample the profile needs carries a label name
	// or value over MaxLabelNameLength or MaxLabelValueLength.
	ReasonLabelTooLong = "label_too_long"
)

// ParseError is a failed Parse, or one family of one model rejected in a
// Snapshot (Snapshot.Rejected). Reason classifies it for the failure
// counters; the other fields locate it for the operator. Parse returns either
// a snapshot or a ParseError, never both.
type ParseError struct {
	// Reason is one of the Reason* constants.
	Reason string
	// Line is the 1-based line of the exposition that shows the fault (for a
	// histogram: the offending bucket, the highest bucket when +Inf is
	// missing, the child's first line otherwise), or 0 when the error is not
	// about a line (an unsupported Content-Type).
	Line int
	// Family is the exposed family (or sample) name concerned, if any.
	Family string
	// Model is the model_name concerned, if any.
	Model string
	// Err is the underlying cause.
	Err error
}

// Error renders the location and the cause, e.g.
// `line 12: invalid_exposition: expected label name, got "}"` or
// `line 40: family "vllm:e2e_request_latency_seconds" model "m": invalid_histogram: {engine="0", model_name="m"}: no +Inf bucket (highest le=10)`.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Family != "" {
		fmt.Fprintf(&b, "family %q", e.Family)
		if e.Model != "" || e.Line == 0 {
			fmt.Fprintf(&b, " model %q", e.Model)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *ParseError) Unwrap() error { return e.Err }
