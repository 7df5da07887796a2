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
)

// ParseError is a failed Parse. Reason classifies it for the failure counter;
// the other fields locate it for the operator. No partial snapshot is ever
// returned alongside a ParseError.
type ParseError struct {
	// Reason is one of the Reason* constants.
	Reason string
	// Line is the 1-based line of the exposition the error was found on, or 0
	// when the error concerns a whole family rather than one line.
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
// `family "vllm:e2e_request_latency_seconds" model "m": invalid_histogram: no +Inf bucket`.
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
