// Package slo turns the increases of vLLM's cumulative histograms and counters
// over a window into the numbers operators act on: latency quantiles with the
// bracket that certainly holds them, SLO attainment, joint attainment and
// goodput with honest bounds, Little's-Law concurrency, burn rates, error budget
// and cost, and the evidence a burn-rate page rests on.
//
// It is pure: no I/O, no clock, no goroutines; time arrives inside the inputs.
// It imports nothing of this module, so every other package may depend on it.
// Every estimate that is not exact comes with a lower and an upper bound that the
// true value cannot leave.
//
// # Conventions
//
// Quantiles use the nearest rank: the q-quantile of n observations is the
// r-th smallest with r = ceil(q·n), at least 1 (q = 0 is the minimum, q = 1
// the maximum); q·n is rounded down by a relative 1e-9 first, so binary noise
// (0.07·100 = 7.000000000000001) cannot move the rank. [ExactQuantile] applies
// the same rank to samples; each [Quantile] also carries histogram_quantile's
// answer, reproduced for comparison.
//
// Latencies are non-negative, so the first bucket's lower edge is 0. A
// threshold equals an edge when they agree to a relative 1e-9 (a configured
// 0.05 equals le="0.05" and 0.30−0.25); objectives are inclusive (<=).
// Histogram counts that decrease from one edge to the next are raised to the
// running maximum, as Prometheus does. Invalid inputs give ok = false, NaN
// (for the functions that mirror Prometheus) or absent entries; nothing that
// [Evaluate] returns is NaN.
//
// # Bounds and why they hold
//
//   - Quantile bracket: fewer than r observations are <= the bucket's lower
//     edge and at least r are <= its upper edge ([Quantile], as [Evaluate]
//     brackets it).
//   - Good count below a threshold T: every observation <= the edge below T
//     is good and none above the edge above it is; exact on an edge
//     ([Estimator.GoodCount]).
//   - Moving a good count between populations A and B: good(B) lies in
//     [good(A) − |A\B|, good(A) + |B\A|], with |A\B| and |B\A| bounded by
//     the requests in flight at the window's end and start ([CarryGood]). TTFT
//     is observed at the first token, the other per-request histograms at the
//     finish; a request its client cancels after the first token reaches TTFT
//     and ITL, never a finish histogram.
//   - Meeting every objective: Fréchet bounds max(0, Σ lo_i − (m−1)·n) and
//     min hi_i ([JointGood]). ITL is per token gap and is not in "all".
//   - Per scrape interval: a finisher's decode time says which earlier
//     intervals can hold its first token; the most TTFT-bad and TTFT-good
//     first tokens an interval's finishers can draw from them, capped by the
//     requests in flight at every scrape between, bound their TTFT-good count
//     ([FinishersTTFTGood], [EvaluateInterval]); sums over a window are
//     tightened by its totals ([TightenWindow]).
//   - Abandoned requests: conservation of the requests past their first token,
//     Q_I + first tokens = finishes + abandoned + Q_J, with Q bounded by the
//     gauges ([Abandoned], [InFlightQueue], [InFlightSplit]); the population
//     of "all" includes them or not ([AttainmentOver]).
//   - Goodput tokens: the bad requests hold between the tokens of the k
//     smallest and of the k largest requests, read at bucket edges
//     ([GoodputTokens]).
//   - Little's Law: λ·W = Δsum/seconds of a stage's latency histogram, with no
//     bucket error; it equals the stage's mean concurrency in steady state,
//     which the gauges' time-average observes.
//   - Burn rate and cost invert: the pessimistic burn uses the lower
//     attainment, the lower cost the upper goodput ([BurnRate],
//     [CostPerMillion]).
//
// # Estimates
//
// Every estimate lies inside its bounds. Within a bucket, observations are
// placed by an [Estimator]; the default, [Density], tilts each bucket by the
// slope of its neighbours' densities and fits one shift so that the
// histogram's mean (Sum/count) is reproduced. accuracy_test.go measured it on
// skewed, bimodal and narrow latency workloads with vLLM's bucket edges: about
// 40% of histogram_quantile's mean relative error (`go test -run Accuracy -v
// ./slo` prints the table). A rank in the +Inf bucket has the estimate +Inf.
// The whole-window joint estimate assumes violations come together (between
// independence and the comonotone minimum); per scrape interval, where the
// time-dependence is already in each count, the shares multiply. Goodput
// tokens assume bad requests are of average length.
//
// The alert evidence ([EvidenceOf]) is neither an estimate nor a bound: it
// is the burn rate of what a window has seen bad, computed as the generated
// Prometheus rules compute it, so that both page on the same number.
package slo
