package simtruth

import "math"

// Knee is the knee of a constant-rate sweep of the simulator: the highest
// rate whose attainment, measured at each of rates (ascending), is at
// least goal, linear between the two rates around the crossing of the
// measured curve made non-increasing (on one server and mix attainment
// does not rise with load, so a rise is the sweep's noise). NaN when the
// curve is below goal at the first rate, +Inf when it never falls below.
// The harnesses that judge a capacity against the simulator's truth
// (test/capacitydays, bench/fleetday) measure their knees with it.
func Knee(rates, attainment []float64, goal float64) float64 {
	return crossing(rates, nonIncreasing(attainment), goal)
}

// nonIncreasing is the equal-weight non-increasing least-squares fit of y
// (pool adjacent violators).
func nonIncreasing(y []float64) []float64 {
	type block struct{ sum, n float64 }
	var bs []block
	for _, v := range y {
		bs = append(bs, block{v, 1})
		for len(bs) > 1 && bs[len(bs)-2].sum/bs[len(bs)-2].n < bs[len(bs)-1].sum/bs[len(bs)-1].n {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			bs = append(bs[:len(bs)-2], block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(y))
	for _, b := range bs {
		for range int(b.n) {
			out = append(out, b.sum/b.n)
		}
	}
	return out
}

// crossing is the highest x at which the non-increasing f, linear between
// points, is at least goal: NaN when f[0] is below it, +Inf when f never is.
func crossing(x, f []float64, goal float64) float64 {
	if len(f) == 0 || f[0] < goal {
		return math.NaN()
	}
	for i := 1; i < len(f); i++ {
		if f[i] < goal {
			return x[i-1] + (f[i-1]-goal)/(f[i-1]-f[i])*(x[i]-x[i-1])
		}
	}
	return math.Inf(1)
}
