package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
)

// point is one window on the curve: its load, judged requests and good
// requests (by estimate, lower or upper bound, as the fit asks).
type point struct {
	load, n, good float64
}

// bin is points pooled over a narrow range of load.
type bin struct {
	load float64 // the judged-request-weighted mean load
	n    float64
	good float64
}

// binned pools sorted points into bins whose loads lie within a factor of
// 1+width of the bin's first load. Pooling sums good and judged requests,
// which is what attainment over those windows means.
func binned(ps []point, width float64) []bin {
	var out []bin
	var lo float64
	for _, p := range ps {
		if len(out) == 0 || p.load > lo*(1+width) {
			out = append(out, bin{})
			lo = p.load
		}
		b := &out[len(out)-1]
		b.load += p.load * p.n
		b.n += p.n
		b.good += p.good
	}
	for i := range out {
		out[i].load /= out[i].n
	}
	return out
}

// monotone returns the attainment of each bin under the weighted
// least-squares non-increasing fit (pool adjacent violators, weights the
// judged requests): attainment cannot rise with load on one server and mix,
// so a rise is noise and is pooled away.
func monotone(bs []bin) []float64 {
	type block struct{ good, n float64 }
	blocks := make([]block, 0, len(bs))
	sizes := make([]int, 0, len(bs))
	for _, b := range bs {
		blocks, sizes = append(blocks, block{b.good, b.n}), append(sizes, 1)
		for k := len(blocks) - 1; k > 0 && blocks[k-1].good*blocks[k].n < blocks[k].good*blocks[k-1].n; k-- {
			blocks[k-1] = block{blocks[k-1].good + blocks[k].good, blocks[k-1].n + blocks[k].n}
			sizes[k-1] += sizes[k]
			blocks, sizes = blocks[:k], sizes[:k]
		}
	}
	out := make([]float64, 0, len(bs))
	for k, b := range blocks {
		for range sizes[k] {
			out = append(out, b.good/b.n)
		}
	}
	return out
}

// knee is the highest load at which the fitted attainment is at least
// goal, linear between the centres of the last bin that meets it and the
// first that does not. below is true when even the lowest bin misses the
// goal, above when no bin does.
type knee struct {
	load         float64
	below, above bool
	// good and bad are the loads of the bins on either side of the
	// crossing: the data cannot place the knee more finely than that.
	good, bad float64
}

func kneeOf(ps []point, width, goal float64) knee {
	return kneeOfBins(binned(ps, width), goal)
}

// kneeOfBins is kneeOf of points already binned.
func kneeOfBins(bs []bin, goal float64) knee {
	if len(bs) == 0 {
		return knee{below: true}
	}
	f := monotone(bs)
	if f[0] < goal {
		return knee{load: bs[0].load, below: true}
	}
	for i := 1; i < len(f); i++ {
		if f[i] < goal {
			x := bs[i-1].load + (f[i-1]-goal)/(f[i-1]-f[i])*(bs[i].load-bs[i-1].load)
			return knee{load: x, good: bs[i-1].load, bad: bs[i].load}
		}
	}
	return knee{load: bs[len(bs)-1].load, above: true}
}

// sortedPoints returns the windows' points by load, with good taken by pick.
func sortedPoints(ws []Window, pick func(Window) float64) []point {
	ps := make([]point, 0, len(ws))
	for _, w := range ws {
		ps = append(ps, point{load: w.Load(), n: w.Finished, good: pick(w)})
	}
	sortPoints(ps)
	return ps
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// replicates is what a bootstrap's resamples found: the isotonic knees of
// those that found one, sorted, how many found none below or above, and
// when a shape is fitted, every resample's crossing of each of its curves
// (shape[i] for shapeFit.curves[i]), sorted (+Inf where the fit failed or
// does not fall with load).
type replicates struct {
	knees        []float64
	below, above int
	shape        [][]float64
}

// shapeFit says whether and how the bootstrap fits the Gumbel shape: from
// the bins at load from up, each of curves (the fits of all the windows:
// without a floor of misses and, with Config.ShapeFloor, with one) refitted
// to every resample, started at the fit of all the windows, the floored
// one with the resample's own floor (missFloor of its bins below from).
// best is the curve of the higher likelihood, whose crossing is the
// estimate. It is off (no curves) when the shape is off or no fit
// succeeded.
type shapeFit struct {
	from   float64
	curves []gumbelCurve
	best   gumbelCurve
}

// on says whether the shape answers at all.
func (sh shapeFit) on() bool { return len(sh.curves) > 0 }

// fitShapes fits the Gumbel curve to bins bs from load from up without a
// floor and, when floored, with missFloor's; best is the one of the higher
// log-likelihood. The two have the same two free parameters, fitted to the
// same bins (the floor is measured on the bins below from, which neither
// fits), so their likelihoods compare as they stand: the criterion is
// Akaike's with equal penalties.
func fitShapes(bs []bin, from, goal float64, floored bool) shapeFit {
	sh := shapeFit{from: from}
	if l, ok := fitGumbel(bs, from, 0, gumbelCurve{}); ok {
		sh.curves = append(sh.curves, l)
	}
	if f := missFloor(bs, from, goal); floored && f > 0 {
		if l, ok := fitGumbel(bs, from, f, gumbelCurve{}); ok {
			sh.curves = append(sh.curves, l)
		}
	}
	for i, l := range sh.curves {
		if i == 0 || l.ll > sh.best.ll {
			sh.best = l
		}
	}
	return sh
}

// refit is the crossing of goal by each of sh's curves refitted to the
// resampled bins bs, appended to xs[i]; sb is the scratch the curves
// share.
func (sh shapeFit) refit(bs []bin, goal float64, sb *standardBins, xs [][]float64) {
	ok := sb.set(bs, sh.from)
	floor := 0.0
	if ok && len(sh.curves) > 1 {
		floor = missFloor(bs, sh.from, goal)
	}
	for i, start := range sh.curves {
		x := math.Inf(1)
		f := 0.0
		if start.floor > 0 {
			f = floor
		}
		if ok {
			if l, fitted := sb.fit(f, start, replicateTolerance); fitted {
				x = l.crossing(goal)
			}
		}
		xs[i] = append(xs[i], x)
	}
}

// bootstrap refits the knee on resamples of whole blocks of consecutive
// windows (a moving-block bootstrap: windows close in time share a queue
// and are not independent), stratified by load at cuts (see strataCuts):
// each stratum's windows, in time order, are drawn in blocks of their own
// until the replicate holds as many of them as the stratum has, so every
// replicate keeps the day's design of loads. With sh on it refits the
// Gumbel shape's curves to the same resampled bins.
//
// The windows are sorted by load once: a replicate only counts how often
// it drew each window (the last block of a stratum cut at the stratum's
// count, as a sample of that many windows would be), and a window drawn c
// times enters its bin
// with c times its judged and good requests, which is what c copies of it
// would add; so no replicate sorts or copies windows.
func bootstrap(ws []Window, cfg Config, sh shapeFit, cuts []float64) replicates {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(len(ws))))
	order := make([]int, len(ws))
	loads := make([]float64, len(ws))
	for i, w := range ws {
		order[i], loads[i] = i, w.Load()
	}
	groups := stratify(loads, cuts)
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(loads[a], loads[b]) })
	counts := make([]float64, len(ws))
	ps := make([]point, 0, len(ws))
	rep := replicates{shape: make([][]float64, len(sh.curves))}
	var sb standardBins
	for range cfg.Resamples {
		clear(counts)
		for _, g := range groups {
			block := max(1, min(cfg.Block, len(g)))
			starts := len(g) - block + 1
			for drawn := 0; drawn < len(g); {
				s := rng.IntN(starts)
				for j := s; j < s+block && drawn < len(g); j++ {
					counts[g[j]]++
					drawn++
				}
			}
		}
		ps = ps[:0]
		for _, i := range order {
			if c := counts[i]; c > 0 {
				ps = append(ps, point{load: loads[i], n: c * ws[i].Finished, good: c * estimateOf(ws[i])})
			}
		}
		bs := binned(ps, cfg.BinWidth)
		k := kneeOfBins(bs, cfg.Goal)
		switch {
		case k.below:
			rep.below++
		case k.above:
			rep.above++
		default:
			rep.knees = append(rep.knees, k.load)
		}
		sh.refit(bs, cfg.Goal, &sb, rep.shape)
	}
	slices.Sort(rep.knees)
	for _, xs := range rep.shape {
		slices.Sort(xs)
	}
	return rep
}

// quantile is the q-quantile of sorted xs (linear between order statistics).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	h := q * float64(len(xs)-1)
	i := int(math.Floor(h))
	f := h - float64(i)
	switch {
	case i+1 >= len(xs) || f == 0:
		return xs[i]
	case math.IsInf(xs[i], 0) || math.IsInf(xs[i+1], 0):
		// An infinite neighbour (a replicate without a crossing) wins:
		// the interval widens rather than making up a finite end.
		if q < 0.5 {
			return xs[i]
		}
		return xs[i+1]
	}
	return xs[i] + f*(xs[i+1]-xs[i])
}

func estimateOf(w Window) float64 { return w.Good.Estimate }
func lowerOf(w Window) float64    { return w.Good.Lower }
func upperOf(w Window) float64    { return w.Good.Upper }

// sortPoints sorts points by load.
func sortPoints(ps []point) {
	slices.SortFunc(ps, func(a, b point) int { return cmpFloat(a.load, b.load) })
}

// stratify splits the indices of loads (in time order) into the strata
// the ascending cuts bound, [0, cuts[0]), [cuts[0], cuts[1]), …, leaving
// out the empty ones. Every index lands in exactly one stratum, so a
// replicate that fills each stratum draws len(loads) windows in all.
func stratify(loads, cuts []float64) [][]int {
	out := make([][]int, len(cuts)+1)
	for i, x := range loads {
		s := 0
		for s < len(cuts) && x >= cuts[s] {
			s++
		}
		out[s] = append(out[s], i)
	}
	return slices.DeleteFunc(out, func(g []int) bool { return len(g) == 0 })
}
