// Package alertquality measures how far the burn-rate alerts can be trusted.
// It runs a library of simulated scenarios (healthy load, blips, slow and fast
// burns, restarts, outages, cancellations, scrape failures, a clock step)
// through the pipeline on a virtual clock, and computes from the simulator's
// per-request records which workbook alert should have fired and when: the
// true burn rate over each alert's long and short windows. Comparing the two
// gives false pages, missed pages, detection delay and time to resolve. The
// same scrapes can be replayed into Debian's Prometheus to score the
// generated rules the same way.
//
// It is a measuring instrument for tests: it never opens a network
// connection except to a Prometheus it starts itself on 127.0.0.1.
package alertquality
