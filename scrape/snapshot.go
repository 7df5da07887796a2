// Package scrape is the input side of the pipeline: it fetches a target's
// /metrics, parses the exposition with Prometheus's own parser (textparse,
// label sets and all), and keeps only the families an engine profile names,
// as a Snapshot per scrape (engines summed, models kept apart).
//
// A scrape fails whole or in part. A body textparse cannot read (a syntax
// error, an unknown format) fails the whole scrape, and the error names the
// line. A family that parses but fails validation for one model (a histogram
// cut off before its +Inf bucket, a NaN, a duplicate series, engines with
// different buckets) rejects that model only: the model, every family of it,
// is absent from the snapshot, Snapshot.Rejected names the family, the model,
// the line and the reason, and the other models are used. When no model is
// left, the scrape fails with the first rejection. Prometheus drops the whole
// scrape on any error; a sidecar serving several models would then lose them
// all for one model's fault.
//
// Whole models, not single families: the SLO math combines a model's
// families over one interval (the joint attainment of TTFT, TPOT and e2e,
// bounded with the running and waiting gauges), so a family missing while
// its siblings advance would pair counts of different intervals and the
// bounds could break. A model absent from one scrape only loses resolution:
// its next window reaches back to its previous scrape, exact at both ends.
//
// It never stores history (package history), never computes SLO numbers
// (package slo) and never serves anything (package exporter).
package scrape

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Family is a logical metric family, independent of any engine's naming.
type Family string

// The logical families a profile can map. Latency histograms reuse the slo
// metric names so that the history can hand them to slo unchanged.
const (
	TTFT      = Family(slo.TTFT)
	TPOT      = Family(slo.TPOT)
	ITL       = Family(slo.ITL)
	E2E       = Family(slo.E2E)
	Queue     = Family(slo.Queue)
	Prefill   = Family(slo.Prefill)
	Decode    = Family(slo.Decode)
	Inference = Family(slo.Inference)

	PromptTokensHist     Family = "prompt_tokens_per_request"     // histogram, observed at finish
	GenerationTokensHist Family = "generation_tokens_per_request" // histogram, observed at finish
	PromptTokens         Family = "prompt_tokens"                 // counter
	GenerationTokens     Family = "generation_tokens"             // counter
	RequestSuccess       Family = "request_success"               // counter, summed over finished_reason
	RequestAborted       Family = "request_aborted"               // counter, the engine's own count of aborted requests
	Running              Family = "running"                       // gauge
	Waiting              Family = "waiting"                       // gauge
	KVCacheUsage         Family = "kv_cache_usage"                // gauge, 0..1

	// Families of the newest servers only (see Optional): read where the
	// server has them, never reported missing where it does not.
	RequestRejected      Family = "request_rejected"        // counter, admission rejections summed over reason
	WaitingCapacity      Family = "waiting_capacity"        // gauge, waiting for scheduler capacity
	WaitingDeferred      Family = "waiting_deferred"        // gauge, waiting on something else (grammar, remote KV)
	Preemptions          Family = "preemptions"             // counter, preemptions of running requests
	PreemptionsHist      Family = "preemptions_per_request" // histogram, observed at finish; le="1" holds 0 and 1
	PromptTokensComputed Family = "prompt_tokens_computed"  // counter, prompt tokens prefilled here
	PromptTokensCached   Family = "prompt_tokens_cached"    // counter, prompt tokens from the local prefix cache
	PromptTokensExternal Family = "prompt_tokens_external"  // counter, prompt tokens from a KV transfer
)

// Optional reports whether a family exists only on some servers of a
// profile (vLLM's admission control, waiting by reason, preemption and
// prefix-cache counters are recent): its absence is then no defect, and it
// is left out of Snapshot.Missing.
func (f Family) Optional() bool {
	switch f {
	case RequestRejected, WaitingCapacity, WaitingDeferred, Preemptions, PreemptionsHist,
		PromptTokensComputed, PromptTokensCached, PromptTokensExternal:
		return true
	}
	return false
}

// Kind is the Prometheus type a family must have.
type Kind int

// The kinds of family a profile can name.
const (
	KindHistogram Kind = iota
	KindCounter
	KindGauge
)

// String returns the kind's Prometheus type name.
func (k Kind) String() string {
	switch k {
	case KindHistogram:
		return "histogram"
	case KindCounter:
		return "counter"
	default:
		return "gauge"
	}
}

// Snapshot is one successful scrape of one target, reduced to the families of
// its profile, per model_name (engines summed, pid-labelled gauges aggregated).
type Snapshot struct {
	// Time is when the scrape was taken (recorded time in replay).
	Time time.Time
	// Models maps model_name to that model's values.
	Models map[string]*ModelSample
	// Found maps each logical family present to the exposed family name it was
	// read from (so an operator can see which vLLM generation was found).
	Found map[Family]string
	// Missing lists the profile's families absent from the exposition, in
	// profile order, leaving out the optional ones (Family.Optional).
	Missing []Family
	// Rejected lists the families that failed validation for one model, in
	// profile order, then model order. Each rejected model is absent from
	// Models for this scrape, all of its families with it.
	Rejected []Rejection
}

// Rejection is one family of one model that failed validation in a scrape
// whose other models were used.
type Rejection struct {
	// Family is the logical family.
	Family Family
	// Model is the model_name rejected.
	Model string
	// Err is the first error found in that family for that model: the
	// exposed name, the line and the reason.
	Err *ParseError
}

// ModelSample holds one model's cumulative values at one scrape.
type ModelSample struct {
	// Histograms holds each histogram family, summed over engines. All engines
	// of a model must share one bucket layout; a mismatch is a parse error.
	Histograms map[Family]slo.Histogram
	// Counters holds each counter family, summed over engines and other labels.
	Counters map[Family]float64
	// Gauges holds each gauge family: summed over engines; over pid labels of
	// one engine the maximum is taken (vLLM's multi-process "mostrecent" mode
	// writes the same value from every process).
	Gauges map[Family]float64
	// Created is the largest `_created` value among this model's counters and
	// histograms (the process start, in Unix seconds), 0 when absent. A new value
	// means vLLM restarted.
	Created float64
	// TTFTAtFinish is true when a TTFT series of the model carries vLLM's
	// `priority` label: the change that adds it (vllm#58078) moves TTFT's
	// observation from the first token to the request's finish, which
	// released vLLM's TTFT, without the label, never does. TTFT then
	// observes the finished requests and no others (a stream its client
	// cancels leaves none), which the per-interval ledger's first-token
	// timing does not assume (see docs/engines.md). The label itself is
	// summed over like every other.
	TTFTAtFinish bool
}
