package capacity

import (
	"fmt"
	"math"
	"time"
)

// Kind says how much the history supports the capacity.
type Kind string

// The kinds of estimate.
const (
	// Bounded: the load crossed the knee, so the capacity has a two-sided
	// prediction interval.
	Bounded Kind = "bounded"
	// LowerOnly: the SLO was met at every load seen; the capacity is at
	// least the highest of them, and nothing says how much more.
	LowerOnly Kind = "lower_only"
	// Unknown: too little history, or the SLO was missed at every load seen.
	Unknown Kind = "unknown"
)

// Range is an estimate with the ends of its prediction interval. Upper is
// +Inf for a one-sided answer.
type Range struct {
	Estimate, Lower, Upper float64
}

// Estimate is what the learned curve predicts for the current server and mix.
type Estimate struct {
	Kind Kind
	// Goal is the SLO's goal the knee is the crossing of.
	Goal float64
	// Reason says why the kind is not bounded, or why learning started
	// over (a mix change), empty otherwise.
	Reason string
	// Method says which fit placed the knee and its interval (bounded
	// answers only; empty otherwise).
	Method Method
	// Since is the start of the windows learned from; Windows their number.
	Since   time.Time
	Windows int
	// Requests is the capacity in requests per second: the highest
	// sustained arrival rate at which the SLO's attainment stays at the goal.
	Requests Range
	// Tokens is the same point in generated tokens per second (capacity
	// times the mean output length of the mix).
	Tokens Range
	// Concurrency is the requests in flight at the knee (Little's law: the
	// mean running + waiting observed at that load).
	Concurrency Range
	// Conservative and Optimistic are the knees of the curves fitted to the
	// lower and the upper bounds on each window's good requests: what the
	// data allow at their extremes, before sampling noise (NaN when the
	// curve does not cross the goal).
	Conservative, Optimistic float64
	// Load is the arrival rate over the last LoadSpan, req/s.
	Load float64
	// Headroom is 1 − Load / capacity; Lower uses the capacity's lower
	// end, Upper its upper end.
	Headroom Range
	// TimeToBreach is when the load, growing at Trend req/s per second (the
	// least-squares slope over the last TrendSpan), reaches the capacity's
	// estimate (Lower: its lower end); HasBreach is false unless the answer
	// is bounded and the trend points there.
	TimeToBreach, TimeToBreachLower time.Duration
	HasBreach                       bool
	Trend                           float64
	// PromptMean and OutputMean describe the mix learned from.
	PromptMean, OutputMean float64
	// Curve is the learned curve and the operating point, for a chart.
	Curve Curve
}

// Estimate fits the curve to the windows learned and predicts the capacity.
func (l *Learner) Estimate(now time.Time) Estimate {
	return Fit(l.windows, l.cfg, now, l.reason)
}

// Fit predicts the capacity from windows (oldest first) under cfg; reason
// is carried into the estimate (why learning last started over).
func Fit(all []Window, cfg Config, now time.Time, reason string) Estimate {
	ws := usable(all, cfg)
	e := Estimate{Kind: Unknown, Goal: cfg.Goal, Reason: reason, Windows: len(ws), Conservative: math.NaN(), Optimistic: math.NaN()}
	e.Requests = Range{Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
	if len(ws) > 0 {
		e.Since = ws[0].Start
		m := mixOf(ws)
		e.PromptMean, e.OutputMean = m.prompt, m.output
	}
	e.Load, e.Trend = loadNow(all, cfg, now)
	e.Curve = curveOf(ws, cfg, now, e.Load)
	if len(ws) < cfg.MinWindows {
		e.Reason = join(reason, fmt.Sprintf("%d windows of %v with judged requests, %d needed", len(ws), cfg.Window, cfg.MinWindows))
		return e
	}
	k := kneeOf(sortedPoints(ws, estimateOf), cfg.BinWidth, cfg.Goal)
	if c := kneeOf(sortedPoints(ws, lowerOf), cfg.BinWidth, cfg.Goal); !c.below && !c.above {
		e.Conservative = c.load
	}
	o := kneeOf(sortedPoints(ws, upperOf), cfg.BinWidth, cfg.Goal)
	if !o.below && !o.above {
		e.Optimistic = o.load
	}
	switch {
	case k.below:
		e.Reason = join(reason, fmt.Sprintf("the SLO was missed at the lowest load seen (%.3g req/s)", k.load))
		return e
	case k.above:
		e.Kind = LowerOnly
		e.Reason = join(reason, "the load never came near the knee: the capacity is at least the highest load seen with the SLO met")
		lo := k.load * (1 - cfg.Transient)
		e.Requests = Range{Estimate: lo, Lower: lo, Upper: math.Inf(1)}
	default:
		e.Kind = Bounded
		e.Requests, e.Method = boundedRange(ws, cfg, k, o)
		if math.IsInf(e.Requests.Upper, 1) {
			// Too many resamples never saw the SLO break: the history
			// supports a lower bound only, and that is the answer.
			e.Kind, e.Method = LowerOnly, ""
			e.Requests.Estimate = e.Requests.Lower
			e.Reason = join(reason, "the load crossed the knee too briefly to bound it from above")
		}
	}
	e.fill(ws, cfg)
	return e
}

// predictionInterval is the bootstrap's central Level interval around the
// knee, widened to the two bins around the crossing (the data place the
// knee no more finely) and then by Config.Transient on either side.
// Replicates that find the SLO met at every load they drew count at the
// top of the range (the knee is above their highest load), those that miss
// it everywhere at the bottom: either keeps the interval honest instead of
// dropping the awkward resamples. The replicates are returned for the
// shape's interval (shapeInterval).
func predictionInterval(ws []Window, cfg Config, k knee, sh shapeFit) (Range, replicates) {
	est := k.load
	rep := bootstrap(ws, cfg, sh, strataCuts(cfg, k))
	all := make([]float64, 0, len(rep.knees)+rep.below+rep.above)
	for range rep.below {
		all = append(all, math.Inf(-1))
	}
	all = append(all, rep.knees...)
	for range rep.above {
		all = append(all, math.Inf(1))
	}
	r := Range{Estimate: est, Lower: quantile(all, (1-cfg.Level)/2), Upper: quantile(all, (1+cfg.Level)/2)}
	r.Lower = math.Max(0, math.Min(r.Lower, k.good)*(1-cfg.Transient))
	r.Upper = math.Max(r.Upper, k.bad) * (1 + cfg.Transient)
	return r, rep
}

// strataCuts are the loads the bootstrap's strata are split at: each of
// Config.Strata times the knee k of the fit of all the windows (by default
// where the shape's fitted range begins and the knee itself), none when
// Strata is empty.
//
// Why stratify: the day's loads are the design of the experiment it ran,
// set by the clients and observed without error, while the knee is a
// property of the server at a fixed load; what the interval must carry is
// the uncertainty of the attainment at the loads seen, not of which loads
// a day happens to visit. A resample of the whole day also redraws the
// design: when only a few windows lie past the knee (a burst of ten
// minutes is five of them) one replicate in about seven draws none of
// them, answers for a day on which the SLO never broke, and puts the
// interval's upper end far past anything the day showed. Drawing each
// stratum to its own count keeps the breach in every replicate, through
// different windows of it, and the count of windows in the range the
// shape is fitted to. What it gives up: a stratum of no more windows than
// a block is drawn whole every time and adds no spread of its own (the
// interval does not say how another few windows there would have read),
// which is why the strata are few and each wide in load. The cuts are
// fixed before resampling; a replicate's knee may cross them.
func strataCuts(cfg Config, k knee) []float64 {
	cuts := make([]float64, 0, len(cfg.Strata))
	for _, f := range cfg.Strata {
		cuts = append(cuts, f*k.load)
	}
	return cuts
}

// shapeInterval is the Gumbel shape's answer, given the isotonic one iso
// (its upper end finite): the central Level interval of the replicates'
// crossings, widened by Config.Transient on either side, spanning those of
// each of the shape's curves (with and without the floor of misses), cut
// to iso (the shape is trusted only between the loads the isotonic fit
// already brackets the knee in, never beyond them), around the crossing of
// the likelier curve fitted to all the windows (sh.best) when it lies
// inside, else around iso's estimate. ok is false when the shape is off or
// did not fit, or when neither estimate lies inside the cut interval.
//
// The shape's crossing is preferred because it is the fit the interval
// comes from, and it reads every bin from ShapeFrom of the knee up, where
// the isotonic crossing is a line between the two bins around it. The
// interval spans both curves' because the likelihood that picks the
// estimate does not always tell them apart (on the simulator's mix-shift
// days the two log-likelihoods differ by a few units on a few thousand),
// and across a gap in the loads seen the choice of shape is the part of
// the prediction the windows do not test: the interval holds the knee
// under either. On the burst day, where the day leaves such a gap, the
// floor halved the mean error (BENCHMARKS.md).
func shapeInterval(cfg Config, sh shapeFit, rep replicates, iso Range) (Range, bool) {
	if !sh.on() {
		return Range{}, false
	}
	r := Range{Estimate: sh.best.crossing(cfg.Goal), Lower: math.Inf(1), Upper: math.Inf(-1)}
	for _, xs := range rep.shape {
		r.Lower = math.Min(r.Lower, quantile(xs, (1-cfg.Level)/2)*(1-cfg.Transient))
		r.Upper = math.Max(r.Upper, quantile(xs, (1+cfg.Level)/2)*(1+cfg.Transient))
	}
	r.Lower, r.Upper = math.Max(r.Lower, iso.Lower), math.Min(r.Upper, iso.Upper)
	if !(r.Lower <= r.Estimate && r.Estimate <= r.Upper) {
		// The curve's own crossing may fall outside its replicates'
		// central share cut to the isotonic interval; the isotonic
		// crossing is the estimate where that interval holds it.
		r.Estimate = iso.Estimate
	}
	if !(r.Lower <= r.Estimate && r.Estimate <= r.Upper) || math.IsInf(r.Upper, 1) {
		return Range{}, false
	}
	return r, true
}

// boundedRange is the capacity's interval when the load crossed the
// knee: the isotonic one (capped, when its upper end is infinite, where
// even the windows' upper bounds miss the goal: o, the knee of their fit),
// or the Gumbel shape's when that is narrower (shapeInterval, cut to the
// isotonic interval, or where that has no upper end to the first load bin
// that misses the goal).
func boundedRange(ws []Window, cfg Config, k, o knee) (Range, Method) {
	var sh shapeFit
	if cfg.ShapeFrom > 0 {
		sh = fitShapes(binned(sortedPoints(ws, estimateOf), cfg.BinWidth), cfg.ShapeFrom*k.load, cfg.Goal, cfg.ShapeFloor)
	}
	r, rep := predictionInterval(ws, cfg, k, sh)
	if math.IsInf(r.Upper, 1) && !o.below && !o.above {
		// The resamples that missed the breach do not undo it: at
		// o.bad even the upper bounds on the windows' good requests
		// fall short of the goal.
		r.Upper = math.Max(o.bad, k.bad) * (1 + cfg.Transient)
	}
	cut := r
	if math.IsInf(cut.Upper, 1) {
		// Too many resamples saw no breach for an isotonic upper end,
		// yet the windows did breach: the shape may bound the knee, up
		// to the first load bin that misses the goal, never past it.
		cut.Upper = k.bad * (1 + cfg.Transient)
	}
	if s, ok := shapeInterval(cfg, sh, rep, cut); ok && s.Upper-s.Lower < r.Upper-r.Lower {
		return s, Gumbel
	}
	return r, Isotonic
}

// fill derives tokens, concurrency, headroom and time to breach from the
// capacity in requests.
func (e *Estimate) fill(ws []Window, cfg Config) {
	e.Tokens = scale(e.Requests, e.OutputMean)
	fl := inFlightOf(ws, cfg)
	e.Concurrency = Range{Estimate: fl.at(e.Requests.Estimate), Lower: fl.at(e.Requests.Lower), Upper: fl.at(e.Requests.Upper)}
	e.fillLoad()
}

// Refresh returns prev, an estimate of this learner, with what depends on
// the current load brought to now: the load and its trend, the headroom,
// the time to breach and the curve's operating point. The knee, its
// interval and the curve's windows and fit stay prev's. It is what a
// learner publishes between fits (Config.RefitEvery), costing one pass
// over the windows instead of a fit with its bootstrap.
func (l *Learner) Refresh(prev Estimate, now time.Time) Estimate {
	e := prev
	e.Load, e.Trend = loadNow(l.windows, l.cfg, now)
	e.Curve.Operating, e.Curve.Known = operatingPoint(usable(l.windows, l.cfg), l.cfg, now, e.Load)
	if e.Kind != Unknown {
		e.TimeToBreach, e.TimeToBreachLower, e.HasBreach = 0, 0, false
		e.fillLoad()
	}
	return e
}

// fillLoad derives the headroom and the time to breach from the capacity
// and the load.
func (e *Estimate) fillLoad() {
	e.Headroom = Range{Estimate: 1 - e.Load/e.Requests.Estimate, Lower: 1 - e.Load/e.Requests.Lower, Upper: 1 - e.Load/e.Requests.Upper}
	if e.Kind == LowerOnly {
		e.Headroom.Estimate = e.Headroom.Lower
	}
	// A one-sided answer's capacity is only the highest load seen with the
	// SLO met: reaching it breaches nothing known.
	if e.Trend > 0 && e.Kind == Bounded {
		if gap := e.Requests.Estimate - e.Load; gap > 0 && !math.IsInf(gap, 1) {
			e.TimeToBreach, e.HasBreach = seconds(gap/e.Trend), true
		}
		if gap := e.Requests.Lower - e.Load; gap > 0 {
			e.TimeToBreachLower, e.HasBreach = seconds(gap/e.Trend), true
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(math.Min(s, 1e9) * float64(time.Second)) }

// scale multiplies a range by f.
func scale(r Range, f float64) Range {
	return Range{Estimate: r.Estimate * f, Lower: r.Lower * f, Upper: r.Upper * f}
}

// inFlightCurve is the non-decreasing fit of the windows' mean in flight
// (running + waiting) against their load, per load bin.
type inFlightCurve struct {
	bins []bin
	fit  []float64 // of −in flight: non-increasing
}

func inFlightOf(ws []Window, cfg Config) inFlightCurve {
	ps := make([]point, 0, len(ws))
	for _, w := range ws {
		// good holds the in-flight request-seconds; the fit is of good/n
		// with the window's seconds as weight.
		ps = append(ps, point{load: w.Load(), n: w.Seconds(), good: -w.InFlight})
	}
	sortPoints(ps)
	bs := binned(ps, cfg.BinWidth)
	return inFlightCurve{bins: bs, fit: monotone(bs)}
}

// at is the mean running + waiting at a load: the fit linear between
// bins (the first bin's below it, the last bin's beyond it, +Inf for an
// infinite load).
func (c inFlightCurve) at(load float64) float64 {
	if math.IsInf(load, 1) {
		return math.Inf(1)
	}
	bs, f := c.bins, c.fit
	if len(bs) == 0 {
		return math.NaN()
	}
	for i := range bs {
		if bs[i].load >= load {
			if i == 0 {
				return -f[0]
			}
			t := (load - bs[i-1].load) / (bs[i].load - bs[i-1].load)
			return -(f[i-1] + t*(f[i]-f[i-1]))
		}
	}
	return -f[len(f)-1]
}

// usable keeps the windows with judged requests enough to count, and
// leaves out those in which a queue left by an earlier, higher load
// drained (see Window.Draining), with the window after each that goes on
// working off what the drain left (see continuesDrain): neither measures
// the server at its own load.
func usable(ws []Window, cfg Config) []Window {
	out := make([]Window, 0, len(ws))
	for i, w := range ws {
		drain := w.Draining() || (i > 0 && ws[i-1].Draining() && continuesDrain(ws[i-1], w))
		if w.Known && w.Finished >= cfg.MinFinished && !drain {
			out = append(out, w)
		}
	}
	return out
}

// continuesDrain reports whether w goes on working off the queue that
// prev, a draining window, left: w begins where prev ended (no gap
// between them) with requests waiting, and works off more than half of
// them, as Window.Draining asks, only with fewer waiting than a tenth of
// its arrivals.
//
// The curve assumes that each window samples a stationary server at its
// own load, so that the requests finishing in it were served in the state
// that load holds. Draining's tenth of the arrivals tells a drain from the
// few requests a stationary server below the knee holds at a scrape; once
// a drain is under way, the queue the next window begins with is what the
// drain left, not the one its own load holds, whatever its size, and its
// requests and the window's own arrivals behind them waited behind the
// overload that built it. Its demand counts that queue, but a stationary
// server at that demand would not hold it. (A remainder of one or two is
// what a stationary window holds too; asking for more than three, the
// most that 99.9% of the simulator's windows between 0.7 and 0.9 of the
// knee began with, moved the truth table by 0.1 point at most.) On the
// simulator's burst day such a window follows the burst's drain on 21
// seeds of 70, beginning with 1 to 55 of the 91 to 347 requests the drain
// began with; where 9 or more were left (15 seeds) it missed 23 to 41% of
// its requests, was placed at the knee by Recent, and put the crossing up
// to 5.8% low (BENCHMARKS.md, section 10).
//
// A window after a drain that begins with no queue is kept. It finishes
// the batch admitted at the drain's end, whose requests may have waited,
// but on the burst day most such windows met the goal at Recent, about
// 1.03 of the knee, and leaving them out as well (measured) took from the
// day the windows nearest its knee: 38 of seeds 1 to 50 moved farther
// from it, most of them lower (BENCHMARKS.md). Nor is the window after a
// continuation tested: what is left then is under half of the drain's
// remainder, down to the one or two requests a stationary server holds at
// a scrape, and following the chain further (measured) left out windows
// that began with a single request waiting and met the goal.
func continuesDrain(prev, w Window) bool {
	return w.Start.Equal(prev.End) && w.WaitingStart > 0 && w.WaitingEnd < 0.5*w.WaitingStart
}

// loadNow is the arrival rate over the last LoadSpan before now and its
// least-squares slope (req/s per second) over the last TrendSpan.
func loadNow(ws []Window, cfg Config, now time.Time) (load, trend float64) {
	var arr, secs float64
	var sx, sy, sxx, sxy, n float64
	for _, w := range ws {
		if w.End.After(now.Add(-cfg.LoadSpan)) && !w.End.After(now) {
			arr, secs = arr+w.Arrivals, secs+w.Seconds()
		}
		if w.End.After(now.Add(-cfg.TrendSpan)) && !w.End.After(now) && w.Seconds() > 0 {
			x := w.End.Sub(now).Seconds()
			y := w.Arrivals / w.Seconds()
			sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
		}
	}
	if d := n*sxx - sx*sx; n >= 3 && d > 0 {
		trend = (n*sxy - sx*sy) / d
	}
	return ratio(arr, secs), trend
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
