package capacity

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Window is consecutive intervals pooled into one point of the
// attainment-against-load curve (Config.Window long).
type Window struct {
	Start, End time.Time
	// Arrivals sums the intervals' arrivals; WaitingStart and WaitingEnd
	// are the queue at the window's first and last scrapes.
	Arrivals, WaitingStart, WaitingEnd float64
	// Finished and Good are the judged requests and the bounds on the good
	// ones; Known is false when one interval could not be judged.
	Finished float64
	Good     slo.Bounded
	Known    bool
	// InFlight integrates running + waiting over time (request-seconds).
	InFlight float64
	// GeneratedTokens, PromptTokens and OutputTokens sum the intervals'.
	GeneratedTokens, PromptTokens, OutputTokens float64
	Mixed                                       bool
	TTFT, TPOT                                  Mean
	// Restarted is true when vLLM restarted inside the window.
	Restarted bool
	// Recent is the arrival rate averaged with exponentially decaying
	// weights over the windows up to this one (time constant Config.Memory),
	// set when the window closes.
	Recent float64
}

// Seconds is the window's length.
func (w Window) Seconds() float64 { return w.End.Sub(w.Start).Seconds() }

// Load is the load the window's attainment is placed at on the curve: the
// greater of its own demand (its arrivals plus the queue it started with,
// per second) and Recent, the load of the last minutes. A queue has
// memory: after a peak, windows at a lower rate still serve requests
// delayed by it, and placing their attainment at the rate that built the
// queue keeps it from pulling the curve down at loads that did no harm.
func (w Window) Load() float64 { return max(w.Demand(), w.Recent) }

// Demand is the window's arrivals plus the queue it started with, per
// second: the requests it had to serve.
func (w Window) Demand() float64 {
	s := w.Seconds()
	if s <= 0 {
		return 0
	}
	return (w.Arrivals + w.WaitingStart) / s
}

// Draining reports whether the window worked off a queue built before it:
// it started with more waiting than a tenth of its arrivals and ended with
// less than half of that. Its finishers waited behind an earlier load, so
// their attainment says nothing about its own, and at the end of a drain,
// when the queue is small, not even the queue counted in Load places them
// right. Under steady load below the knee the queue at a scrape is a few
// requests, far from a tenth of two minutes' arrivals; the window after a
// drain, whose smaller queue is the drain's remainder, is judged by
// continuesDrain.
func (w Window) Draining() bool {
	return w.WaitingStart > 0.1*w.Arrivals && w.WaitingEnd < 0.5*w.WaitingStart
}

// Attainment returns the window's share of good requests: estimate and bounds.
func (w Window) Attainment() slo.Bounded {
	if w.Finished <= 0 {
		return slo.Bounded{}
	}
	return slo.Bounded{Estimate: w.Good.Estimate / w.Finished, Lower: w.Good.Lower / w.Finished, Upper: w.Good.Upper / w.Finished}
}

// PromptMean and OutputMean are the finished requests' mean lengths.
func (w Window) PromptMean() float64 { return ratio(w.PromptTokens, w.Finished) }

// OutputMean is the finished requests' mean output length.
func (w Window) OutputMean() float64 { return ratio(w.OutputTokens, w.Finished) }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// add pools interval iv into w.
func (w *Window) add(iv Interval) {
	if w.Start.IsZero() {
		w.Start, w.WaitingStart, w.Known, w.Mixed = iv.Start, iv.WaitingStart, true, true
	}
	w.End, w.WaitingEnd = iv.End, iv.WaitingEnd
	w.Arrivals += iv.Arrivals()
	w.Finished += iv.Finished
	w.Good.Lower += iv.Good.Lower
	w.Good.Upper += iv.Good.Upper
	w.Good.Estimate += iv.Good.Estimate
	w.Known = w.Known && iv.GoodKnown
	w.InFlight += iv.InFlightMean * iv.Seconds()
	w.GeneratedTokens += iv.GeneratedTokens
	w.PromptTokens += iv.PromptTokens
	w.OutputTokens += iv.OutputTokens
	w.Mixed = w.Mixed && iv.Mixed
	w.TTFT.Sum, w.TTFT.Count = w.TTFT.Sum+iv.TTFT.Sum, w.TTFT.Count+iv.TTFT.Count
	w.TPOT.Sum, w.TPOT.Count = w.TPOT.Sum+iv.TPOT.Sum, w.TPOT.Count+iv.TPOT.Count
	w.Restarted = w.Restarted || iv.Restarted
}

// Config sets how the curve is learned and how sure the answer must be.
type Config struct {
	// Goal is the SLO's goal: the knee is where attainment falls below it.
	Goal float64
	// Window is the length of the pooled points (2m).
	Window time.Duration
	// History is how long windows are kept (24h).
	History time.Duration
	// MinWindows is the fewest windows a curve is fitted from (15).
	MinWindows int
	// MinFinished is the fewest judged requests a window needs (20).
	MinFinished float64
	// BinWidth is the relative width of the load bins the windows are
	// pooled in before the monotone fit (0.04: 4% of the load).
	BinWidth float64
	// Level is the prediction interval's nominal coverage (0.9).
	Level float64
	// Resamples is the number of bootstrap replicates (200).
	Resamples int
	// Block is the number of consecutive windows resampled together, so
	// that the bootstrap keeps their correlation in time (5).
	Block int
	// Strata are the loads, relative to the knee of the fit of all the
	// windows and ascending, that split the windows into the strata the
	// bootstrap resamples separately, each to its own count (0.7 and 1:
	// below the shape's fitted range, up to the knee, past it; see
	// strataCuts). Empty resamples the whole day at once.
	Strata []float64
	// MixSpan is how much recent history the mix is compared over (20m)
	// and MixTolerance the relative change in mean prompt or output length
	// that invalidates what was learned (0.2).
	MixSpan      time.Duration
	MixTolerance float64
	// LoadSpan is the span the current load is averaged over (10m) and
	// TrendSpan the span its trend is fitted over (30m).
	LoadSpan, TrendSpan time.Duration
	// Memory is the time constant of Window.Recent (5m): about how long a
	// queue built near the knee takes to drain.
	Memory time.Duration
	// Transient widens both ends of the interval, relatively (0.04), for
	// the difference between the curve a day traces and the one a
	// constant-rate sweep measures: under a varying load the queue lags
	// the rate, so a day's windows at a load are not in the state a
	// constant rate would hold. On the simulator's days the day's knee
	// lay up to 3% above the sweep's, and one hour after a mix shift a
	// one-sided lower end up to 3% above the new knee (BENCHMARKS.md); a
	// load that swings faster needs more.
	Transient float64
	// ShapeFrom turns on the Gumbel shape (Method Gumbel) when
	// positive: the curve is fitted to the windows whose load is at
	// least ShapeFrom times the isotonic knee (0.7), and its interval
	// replaces the isotonic one where it is narrower.
	ShapeFrom float64
	// ShapeFloor, with the shape on, takes the share of requests missed
	// below ShapeFrom times the knee as a floor of misses that do not come
	// from the queue, so that the shape's exponential term is the queue's
	// alone (true; see gumbelCurve and missFloor). False fits the queue's
	// term to every miss.
	ShapeFloor bool
	// Seed seeds the bootstrap, so that the same windows give the same answer.
	Seed uint64
	// RefitEvery is how often a learner that keeps learning is fitted
	// afresh (30m); between fits each closed window only refreshes what
	// depends on the current load (Learner.Refresh). A day's curve moves
	// slowly, and a fit of a day of windows with its bootstrap costs
	// milliseconds, many evaluations' worth (BENCHMARKS.md).
	RefitEvery time.Duration
}

// DefaultConfig returns the defaults named in Config for an SLO's goal.
func DefaultConfig(goal float64) Config {
	return Config{
		Goal: goal, Window: 2 * time.Minute, History: 24 * time.Hour,
		MinWindows: 15, MinFinished: 20, BinWidth: 0.04, Level: 0.9,
		Resamples: 200, Block: 5, Strata: []float64{0.7, 1}, MixSpan: 20 * time.Minute, MixTolerance: 0.2,
		LoadSpan: 10 * time.Minute, TrendSpan: 30 * time.Minute, Memory: 5 * time.Minute, Transient: 0.04, ShapeFrom: 0.7, ShapeFloor: true, Seed: 1,
		RefitEvery: 30 * time.Minute,
	}
}

// Learner keeps the windows of one target, model and SLO and says what
// they teach. It is not safe for concurrent use.
type Learner struct {
	cfg     Config
	windows []Window // closed, oldest first
	open    Window
	// reason says why learning last started over, and since when.
	reason  string
	resetAt time.Time
}

// NewLearner returns a learner with nothing learned.
func NewLearner(cfg Config) *Learner { return &Learner{cfg: cfg} }

// Windows returns the closed windows learned from, oldest first.
func (l *Learner) Windows() []Window { return l.windows }

// Config is the learner's configuration.
func (l *Learner) Config() Config { return l.cfg }

// Reason says why learning last started over ("" when it never did).
func (l *Learner) Reason() string { return l.reason }

// Clone returns a copy that shares nothing mutable with l: a fit can run
// on it while l keeps learning.
func (l *Learner) Clone() *Learner {
	c := *l
	c.windows = slices.Clone(l.windows)
	return &c
}

// Reset forgets every window: the server, the model or the SLO changed.
// reason is said by every estimate until the next reset.
func (l *Learner) Reset(at time.Time, reason string) {
	l.windows, l.open = nil, Window{}
	l.reason, l.resetAt = reason, at
}

// Add pools the next interval. An interval that does not follow the
// previous one (a gap in the scrapes) closes the open window first.
func (l *Learner) Add(iv Interval) {
	if !iv.End.After(iv.Start) {
		return
	}
	if !l.open.Start.IsZero() && (!iv.Start.Equal(l.open.End) || iv.End.Sub(l.open.Start) > l.cfg.Window) {
		l.close()
	}
	l.open.add(iv)
	if l.open.End.Sub(l.open.Start) >= l.cfg.Window {
		l.close()
	}
}

// close keeps the open window when it covers at least half the window
// length, checks the mix and drops windows past the history.
func (l *Learner) close() {
	w := l.open
	l.open = Window{}
	if w.End.Sub(w.Start) < l.cfg.Window/2 {
		return
	}
	l.recent(&w)
	if len(l.windows) == cap(l.windows) {
		// Grow by an eighth, exactly, not by append's rule (double, or a
		// quarter past 256): a day of windows is most of a learner's
		// memory, and what growth leaves unused stays for good.
		grown := make([]Window, len(l.windows), len(l.windows)+max(16, len(l.windows)/8))
		copy(grown, l.windows)
		l.windows = grown
	}
	l.windows = append(l.windows, w)
	l.checkMix(w.End)
	cut := 0
	for cut < len(l.windows) && l.windows[cut].End.Before(w.End.Add(-l.cfg.History)) {
		cut++
	}
	l.windows = append(l.windows[:0], l.windows[cut:]...)
}

// recent sets w.Recent from the previous window's: the decay over the time
// between their ends, restarted after a gap of more than Memory.
func (l *Learner) recent(w *Window) {
	rate := ratio(w.Arrivals, w.Seconds())
	w.Recent = rate
	if len(l.windows) == 0 || l.cfg.Memory <= 0 {
		return
	}
	prev := l.windows[len(l.windows)-1]
	gap := w.End.Sub(prev.End)
	if gap > l.cfg.Window+l.cfg.Memory {
		return
	}
	keep := math.Exp(-gap.Seconds() / l.cfg.Memory.Seconds())
	w.Recent = keep*prev.Recent + (1-keep)*rate
}

// checkMix compares the mean prompt and output lengths of the last MixSpan
// with those of everything learned before it; a relative change beyond
// MixTolerance means the curve learned describes another workload, so the
// windows before the change are dropped and the estimate says why.
func (l *Learner) checkMix(now time.Time) {
	split := len(l.windows)
	for split > 0 && l.windows[split-1].End.After(now.Add(-l.cfg.MixSpan)) {
		split--
	}
	if split == 0 || split == len(l.windows) {
		return
	}
	old, recent := mixOf(l.windows[:split]), mixOf(l.windows[split:])
	if !old.known || !recent.known {
		return
	}
	for _, c := range []struct {
		name     string
		old, new float64
	}{{"prompt", old.prompt, recent.prompt}, {"output", old.output, recent.output}} {
		if c.old > 0 && math.Abs(c.new-c.old)/c.old > l.cfg.MixTolerance {
			at := l.changePoint(split, old)
			before, since := mixOf(l.windows[:at]), mixOf(l.windows[at:])
			b, a := before.prompt, since.prompt
			if c.name == "output" {
				b, a = before.output, since.output
			}
			l.windows = append([]Window(nil), l.windows[at:]...)
			l.reason = fmt.Sprintf("the mix changed: mean %s tokens %.0f before, %.0f since", c.name, b, a)
			l.resetAt = l.windows[0].Start
			return
		}
	}
}

// changePoint is where the mix changed: the split of the windows from
// (split minus the recent span's length) to the newest into two runs of
// constant mean prompt and output length that fits them best (least
// squares, each window weighted by its finished requests, each length
// relative to the old mix's). The recent span may begin before the change.
func (l *Learner) changePoint(split int, old mix) int {
	lo := max(0, 2*split-len(l.windows))
	best, bestCost := split, math.Inf(1)
	for k := lo + 1; k < len(l.windows); k++ {
		if c := mixCost(l.windows[lo:k], old) + mixCost(l.windows[k:], old); c < bestCost {
			best, bestCost = k, c
		}
	}
	return best
}

// mixCost is the weighted squared deviation of the windows' mean lengths
// from their pooled means, relative to ref's.
func mixCost(ws []Window, ref mix) float64 {
	m := mixOf(ws)
	c := 0.0
	for _, w := range ws {
		if !w.Mixed || w.Finished <= 0 || ref.prompt <= 0 || ref.output <= 0 {
			continue
		}
		dp, do := (w.PromptMean()-m.prompt)/ref.prompt, (w.OutputMean()-m.output)/ref.output
		c += w.Finished * (dp*dp + do*do)
	}
	return c
}

// mix is the pooled mean lengths of some windows.
type mix struct {
	prompt, output float64
	known          bool
}

func mixOf(ws []Window) mix {
	var p, o, n float64
	for _, w := range ws {
		if !w.Mixed {
			continue
		}
		p, o, n = p+w.PromptTokens, o+w.OutputTokens, n+w.Finished
	}
	return mix{prompt: ratio(p, n), output: ratio(o, n), known: n > 0}
}
