package capacity

import (
	"slices"
	"time"
)

// CurvePoint is one point of the attainment-against-load curve: a load
// (req/s) and an attainment with its ends.
type CurvePoint struct {
	Load       float64
	Attainment Range
}

// Curve is the learned curve as a chart draws it: every window the fit
// used, the fit itself and the current operating point. It holds numbers
// the estimate already computed, so that a page draws them without
// computing any.
type Curve struct {
	// Windows are the windows fitted, by load: each one's attainment is the
	// ledger's estimate of its good finished requests over its finished
	// ones, between the ledger's bounds (the truth cannot leave them).
	Windows []CurvePoint
	// Fit is the monotone fit at each load bin's mean load: its estimate
	// is the fit of the windows' estimates, its ends the fits of their
	// lower and upper bounds (the curves the Conservative and Optimistic
	// knees cross).
	Fit []CurvePoint
	// Operating is the load over the last LoadSpan and the attainment of
	// the windows that ended in it (pooled: their good over their
	// finished requests); Known is false when none of them was judged.
	Operating CurvePoint
	Known     bool
}

// curveOf builds the curve of the usable windows ws at now.
func curveOf(ws []Window, cfg Config, now time.Time, load float64) Curve {
	c := Curve{Windows: make([]CurvePoint, 0, len(ws))}
	for _, w := range ws {
		a := w.Attainment()
		c.Windows = append(c.Windows, CurvePoint{Load: w.Load(), Attainment: Range{Estimate: a.Estimate, Lower: a.Lower, Upper: a.Upper}})
	}
	sortCurve(c.Windows)
	c.Operating, c.Known = operatingPoint(ws, cfg, now, load)
	est, lo, hi := fitted(ws, cfg, estimateOf), fitted(ws, cfg, lowerOf), fitted(ws, cfg, upperOf)
	if len(est) == len(lo) && len(est) == len(hi) {
		c.Fit = make([]CurvePoint, len(est))
		for i := range est {
			c.Fit[i] = CurvePoint{Load: est[i].load, Attainment: Range{Estimate: est[i].good, Lower: lo[i].good, Upper: hi[i].good}}
		}
	}
	return c
}

// operatingPoint is load with the pooled attainment of the windows of ws
// that ended in the last LoadSpan before now; known is false when none did.
func operatingPoint(ws []Window, cfg Config, now time.Time, load float64) (p CurvePoint, known bool) {
	p.Load = load
	var good Range
	var n float64
	for _, w := range ws {
		if w.End.After(now.Add(-cfg.LoadSpan)) && !w.End.After(now) {
			good.Estimate, good.Lower, good.Upper = good.Estimate+w.Good.Estimate, good.Lower+w.Good.Lower, good.Upper+w.Good.Upper
			n += w.Finished
		}
	}
	if n > 0 {
		p.Attainment, known = scale(good, 1/n), true
	}
	return p, known
}

// fitted is the monotone fit of the windows' good requests by pick, as
// (mean load, fitted attainment) per bin. The three picks bin alike: the
// bins depend on the loads and the judged requests only.
func fitted(ws []Window, cfg Config, pick func(Window) float64) []bin {
	bs := binned(sortedPoints(ws, pick), cfg.BinWidth)
	f := monotone(bs)
	for i := range bs {
		bs[i].good = f[i]
	}
	return bs
}

func sortCurve(ps []CurvePoint) {
	slices.SortStableFunc(ps, func(a, b CurvePoint) int { return cmpFloat(a.Load, b.Load) })
}
