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
// interval again or reads back what was just written. The store passes the
// ledger what the history knows (the scrapes it holds, for thinning)
// instead of the ledger asking for it.
//
// A window is read with the same edges by every part of it: WindowEdges
// decides which scrapes a window runs between, and both the history's
// increases (Counts) and the ledger's joints (Joints) are read between
// those scrapes.
//
// What it must never do: read a clock (time comes with the snapshots and
// the queries), do I/O (package daemon reads and writes the state file),
// call back into its caller or let its parts call one another (the store
// calls down into the history and the ledgers and hands each what it needs
// of the other), judge an interval twice, or compute an SLO bound itself
// (package slo does). It is not safe for concurrent use: the pipeline
// holds the target's lock around every call.
package store
