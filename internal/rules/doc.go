// Package rules generates Prometheus recording and alerting rules that
// evaluate a configuration's SLOs inside Prometheus (or Thanos, Mimir) from
// vLLM's raw histograms and gauges, for fleet-wide evaluation without the
// daemon's own history. It is the `rules` subcommand's generator.
//
// The rules use Prometheus 2.x-compatible PromQL only (no histogram_fraction,
// which returns nothing on classic histograms). An objective's attainment is
// the bucket count at a bucket edge over the histogram's count. The joint
// attainment of an SLO's objectives comes from a per-interval ledger, as in
// the daemon but coarser: each SLO group runs every scrape interval and
// records exact counter changes over one interval, brackets the finishers of
// the interval that met every objective (Fréchet over the same finishers,
// with the finishers of each TTFT kind bounded per server by the least of
// the kind's first tokens in the interval plus those in flight before it,
// and the decode-time reach: finishers with a decode time under an edge
// got their first token within the last k intervals; finisherRules), and
// windows sum those brackets with sum_over_time, intersected with the
// whole window's bracket. Requests
// abandoned after their first token are bounded by the conservation of the
// requests past their first token, and counted bad or left out as the SLO's
// `abandoned` setting says; requests turned away at admission
// (admission_rejections_total, exact) likewise under `rejected`. Each bound
// is proven on the function that writes it (intervalRules, windowRules).
// Windows longer than an hour sum a hierarchy of recorded sums
// (levelRules, windowSum), recorded with those windows' rules in a second
// group per SLO every minute, which reads the SLO group's series 30 s back
// and so records the one-group rules' numbers 30 s late (longgroup.go).
//
// The alerts page, as the daemon's do, when the burn rate's upper bound and
// its evidence both exceed the factor in both windows: the evidence is the
// larger of the burn rate's lower bound and the observed burn rate, the
// requests seen bad over the SLO's population (the joint's bad share from
// the objectives' bad shares taken as independent, 1 − Π(1 − b_i), plus the
// abandoned requests at their estimate and the rejected ones when the SLO
// counts them bad), the daemon's number to rounding;
// pipeline.BurnCheck.Active argues the choice.
//
// The package only builds text; it never scrapes, serves or evaluates
// anything, and it never changes the configuration it is given.
package rules
