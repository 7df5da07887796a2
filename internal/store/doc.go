// Package store is the one owner of a target's recorded past: the history
// of its scrapes (package history holds the points), each model's ledger of
// scrape intervals (package ledger), the running totals of good requests,
// what the scrapes said about the target (its health) and the state-file
// format all of these are saved in. Package pipeline keeps one Store per
// target and talks to nothing else about that target's past.
//
// An append goes through the store once: the snapshot joins the history,
// and each scrape interval it closes is judged exactly once (judge): per
// SLO, the good requests of each objective over the interval's
// warm-up-free increase, and the ledger's record of the requests that met
// every objective. The judgement goes into the ledger and the totals and
// comes back to the caller with the interval (Closed), so nobody judges the
// interval again or reads back what was just written. An interval at
// either end of which the e2e family is missing (a family that appears or
// vanishes, as on llm-d-inference-sim) has no finish count: its finishers
// are left unjudged rather than counted from zero (markFinishCounts). The
// store passes the ledger what the history knows (the scrapes it holds,
// for thinning) instead of the ledger asking for it.
//
// A window is read with the same edges by every part of it: WindowEdges
// alone decides which two scrapes a window runs between (never before the
// ledger's first checkpoint), and the history's increases, counts and
// gauges (Counts), the ledger's joints, with the abandoned and rejected
// requests they bound (Joints), and the spans' coverage (SpansCoverage)
// are all read between those scrapes.
//
// What it must never do: read a clock (time comes with the snapshots and
// the queries), do I/O (package daemon reads and writes the state file),
// call back into its caller or let its parts call one another (the store
// calls down into the history and the ledgers and hands each what it needs
// of the other), judge an interval twice, or compute an SLO bound itself
// (package slo does). It is not safe for concurrent use: the pipeline
// holds the target's lock around every call.
package store
