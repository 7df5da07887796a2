// Package history keeps, per target, a bounded time-ordered record of the
// cumulative values scraped from a vLLM server and answers window questions
// with them: how much did every histogram and counter of a model increase
// over (start, end], and what did the running/waiting gauges do meanwhile.
//
// Storage is reset-aware and segment-based. A segment is one run of a model's
// process: a new one starts when any cumulative value decreases, when the
// model's `_created` start time changes, or when a histogram's bucket layout
// changes. Values of a new segment count from zero (everything in them
// happened after the restart), so windows spanning restarts stay exact, with
// Prometheus increase() semantics. Old points are thinned into coarser tiers
// (see Retention) while every segment's last point is kept, so reads stay
// exact at every retained point and memory stays bounded however long the
// daemon runs. A target that restarts at every scrape leaves a segment per
// scrape; a window over many of them is summed from running sums kept
// along such runs, at a cost that does not grow with them (runs.go: the
// counts come out the same to the bit, a _sum may differ in its last bits).
//
// Package store owns each target's history, beside the target's ledgers;
// Edges decides which points a window runs between, so that every part of
// a window can be read between the same scrapes.
//
// The package does no I/O, reads no clock (time arrives with the snapshots and
// queries) and computes no SLO numbers: that is package slo's job.
package history
