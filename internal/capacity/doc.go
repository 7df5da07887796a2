// Package capacity predicts the load at which an SLO breaks: the knee of
// the attainment-against-load curve of one server, model and workload mix,
// learned online from the per-interval ledger (arrivals, in flight, tokens
// and the bounds on each interval's good requests), and the headroom left
// at the current load.
//
// It is pure: plain structs of numbers in, an Estimate out; no I/O, no
// clock, no global state. It imports nothing of ours but slo. It never
// claims a bound it cannot support: when the load never came near the knee
// the answer is one-sided (LowerOnly), and with too little history it is
// Unknown, each with a Reason.
//
// # Method
//
// Consecutive scrape intervals are pooled into windows (Config.Window, two
// minutes). Each window is a point: its load and the attainment of the
// requests that finished in it (the ledger's estimate of its good
// requests over its finished ones; the bounds are kept beside). The load of
// a window is the greater of its demand (arrivals plus the queue it
// started with, per second) and Recent, the arrival rate averaged with
// exponentially decaying weights over the last minutes (Config.Memory):
// a queue has memory, and after a peak the windows at a falling rate still
// serve requests that waited behind it. Windows in which a large queue
// drained are left out (Window.Draining), with the window after each that
// goes on working off the queue the drain left (continuesDrain): their
// finishers waited behind an earlier load, and the curve assumes each
// window samples a stationary server at its own load. Arrivals are the
// first tokens plus the growth of the waiting queue.
//
// The windows are sorted by load and pooled into bins 4% wide (attainment
// over several windows is the ratio of their sums), and the bins are fitted
// by weighted isotonic regression (pool adjacent violators): on one server
// and mix, attainment does not rise with load, so a rise is noise. The knee
// is the highest load at which the fit is at least the goal, linear
// between the bins on either side of the crossing.
//
// The prediction interval is a moving-block bootstrap (Config.Block
// consecutive windows resampled together, keeping the correlation a shared
// queue gives neighbouring windows) of the whole fit, stratified by load
// (Config.Strata: below 0.7 of the knee, up to it and past it, each
// stratum drawn to its own count, so that every replicate keeps the day's
// design of loads and a breach seen in a few windows is in all of them),
// its central Config.Level share, widened to the two bins around the
// crossing and then by Config.Transient on either side. Replicates that never see the SLO
// break put the upper end at +Inf, and an answer whose upper end is
// infinite is reported LowerOnly, unless the curves fitted to the windows'
// upper bounds fall short of the goal at some load: there the SLO broke
// however the histograms are read, and that load caps the interval. The
// curves fitted to the lower and upper bounds give the Conservative and
// Optimistic knees, reported beside the estimate.
//
// Where the day leaves a gap in load around the crossing (a burst that
// jumps past the knee leaves no windows between), the isotonic interval
// spans the gap: it assumes no shape between observed loads. A shape
// bridges it: a Gumbel curve, attainment = exp(−exp(a + b·load)), fitted by
// binomial maximum likelihood to the bins from Config.ShapeFrom of the
// isotonic knee up, and refitted in every bootstrap replicate on the same
// resampled bins. With Config.ShapeFloor a second curve is fitted beside
// it, attainment = exp(−floor − exp(a + b·load)), whose floor is the share
// missed below ShapeFrom of the knee, where no queue forms: misses of the
// mix, which do not grow with the queue and which, left in the
// exponential term, flatten it below the knee so that it crosses the goal
// early across a gap. Both have two free parameters fitted to the same
// bins; the likelier one's crossing is the estimate. The interval (each
// curve's replicate crossings, their central Level share, widened by
// Config.Transient, spanning both curves) is cut to the isotonic one, so
// it never reaches beyond the loads that bracket the crossing, and is
// published where it is the narrower, around the estimate (the isotonic
// crossing where that falls outside). Estimate.Method says which
// answered.
//
// The capacity in tokens per second is the capacity times the mix's mean
// output length, and the concurrency at the knee (Little's law) the
// non-decreasing fit of the windows' mean running + waiting against load,
// read at the knee. Headroom is 1 − load/capacity over Config.LoadSpan;
// the time to breach extrapolates the least-squares trend of the load over
// Config.TrendSpan, when it rises.
//
// # Assumptions
//
// This is a prediction, not a bound like the rest of the exporter's
// figures, and it holds only under these assumptions:
//
//   - the same model, engine configuration and hardware over the learning
//     window (a new model is a new series; a caller resets the Learner on an
//     SLO change);
//   - a workload mix that is stationary over the learning window: the mean
//     prompt and output lengths are watched, and a change of more than
//     Config.MixTolerance over Config.MixSpan drops what was learned before
//     it (the Reason says so);
//   - the clients' arrival process: the knee is the highest sustained
//     Poisson-like arrival rate that keeps the SLO, as a `vllm bench serve`
//     rate sweep measures it; burstier clients break it sooner;
//   - the attainment judged is that of the finished requests (the ledger's
//     `all` good count over its finished count), whatever the SLO's
//     `abandoned` setting: the windows' abandoned counts are too loose at
//     the scale of two minutes to judge them;
//   - where Estimate.Method is Gumbel, the curve's shape near the knee:
//     the log of the share missing the SLO (log(−log attainment), less the
//     floor of the mix's misses when that curve is the likelier) rises
//     linearly in load between the loads seen (a queue's tail grows about
//     exponentially in load near its knee); far below the knee, where the
//     misses come from the mix, it is not fitted;
//   - the load varies slowly beside the queue's relaxation: the curve a day
//     traces lags the constant-rate one (on the simulator's days its knee
//     lay up to 3% above the sweep's, and a one-sided answer an hour after
//     a mix shift up to 3% above the new knee), which Config.Transient
//     covers.
//
// The coverage of the interval is measured, not assumed: against the
// simulator's true knee over days of varying load, bursts, a mix shift, two
// engines and cancellations (test/capacitydays, BENCHMARKS.md).
package capacity
