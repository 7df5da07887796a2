// Package bench measures the exporter's cost against its floor and its
// alternatives: per-scrape time and allocations (parse, history append,
// window evaluation) next to textparse doing nothing but parsing and next to
// the same extraction built on prometheus/common's expfmt; the memory a
// pipeline holds once its history tiers are full; and the helpers the
// `perf` command (bench/cmd/perf) uses to print the tables of BENCHMARKS.md.
//
// It is measurement code only: nothing in the daemon imports it, and its
// tests stay fast (the heavy runs are behind -bench or the perf command).
package bench
