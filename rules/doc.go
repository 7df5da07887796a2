// Package rules generates Prometheus recording and alerting rules that
// evaluate a configuration's SLOs inside Prometheus (or Thanos, Mimir) from
// vLLM's raw histograms, for fleet-wide evaluation without the daemon's own
// history. It is the `rules` subcommand's generator.
//
// The rules follow the daemon's pessimistic paging logic with Prometheus
// 2.x-compatible PromQL only (no histogram_fraction, which returns nothing on
// classic histograms): an objective's attainment is the bucket count at a
// bucket edge over the histogram's count, the joint attainment of several
// objectives is its Fréchet lower bound, and the burn rate is computed from
// that bound, so a rule never hides a breach the histograms could show.
//
// The package only builds text; it never scrapes, serves or evaluates
// anything, and it never changes the configuration it is given.
package rules
