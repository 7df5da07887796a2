package fleetday

import "time"

// The days' rates are in req/s for the fleet: one demo replica's knee is
// about 6 req/s (TrueKnee), so a peak of 40 needs 7 replicas at their
// knees.

// HeldOut are the days the table is made of: a diurnal day, a fast ramp, a
// burst, a mix shift to longer prompts and outputs, replicas failing; each
// twice, on two seeds (one day's answer rests on what its few windows near
// the top of its load happened to show).
func HeldOut() []Day {
	var out []Day
	for _, d := range heldOutShapes() {
		for _, s := range []uint64{0, 10} {
			e := d
			e.Seed = d.Seed + s
			out = append(out, e)
		}
	}
	return out
}

func heldOutShapes() []Day {
	h := time.Hour
	return []Day{
		{Name: "diurnal", Seed: 21, Length: 24 * h, Initial: 2, Rate: Diurnal(6, 40, 24*h, 10*time.Minute)},
		{Name: "fast ramp", Seed: 22, Length: 12 * h, Initial: 2, Rate: []Point{
			{0, 8}, {2 * h, 8}, {2*h + 10*time.Minute, 38}, {5 * h, 38}, {5*h + 30*time.Minute, 15},
			{8 * h, 15}, {8*h + 5*time.Minute, 35}, {10 * h, 35}, {12 * h, 8}}},
		{Name: "burst", Seed: 23, Length: 12 * h, Initial: 4, Rate: withBursts(Diurnal(14, 26, 12*h, 10*time.Minute), []burst{
			{3 * h, 10 * time.Minute, 1.6}, {6 * h, 5 * time.Minute, 2}, {9 * h, 20 * time.Minute, 1.4}})},
		{Name: "mix shift", Seed: 24, Length: 24 * h, Initial: 2, Rate: Diurnal(6, 36, 24*h, 10*time.Minute),
			Shifts: []Shift{{At: 10 * h, Mix: LongMix()}}},
		{Name: "replica failure", Seed: 25, Length: 12 * h, Initial: 6, Rate: []Point{{0, 28}, {6 * h, 32}, {12 * h, 28}},
			Failures: []time.Duration{3 * h, 3*h + time.Minute, 8 * h}},
	}
}

// Training are the days the thresholds are chosen on: other seeds and
// other shapes of the same kinds.
func Training() []Day {
	h := time.Hour
	return []Day{
		{Name: "diurnal (training)", Seed: 1001, Length: 24 * h, Initial: 2, Rate: Diurnal(8, 34, 24*h, 10*time.Minute)},
		{Name: "ramps and a burst (training)", Seed: 1002, Length: 12 * h, Initial: 2, Rate: withBursts([]Point{
			{0, 10}, {2 * h, 10}, {2*h + 20*time.Minute, 30}, {7 * h, 30}, {7*h + 30*time.Minute, 12},
			{8 * h, 12}, {8*h + 15*time.Minute, 36}, {11 * h, 36}, {12 * h, 20}}, []burst{{5 * h, 8 * time.Minute, 1.5}})},
		{Name: "mix shift and a failure (training)", Seed: 1003, Length: 12 * h, Initial: 4, Rate: []Point{
			{0, 20}, {9 * h, 20}, {9*h + 20*time.Minute, 28}, {12 * h, 28}},
			Shifts: []Shift{{At: 4 * h, Mix: LongMix()}}, Failures: []time.Duration{7 * h}},
	}
}

// burst multiplies the rate by factor for length from at.
type burst struct {
	at, length time.Duration
	factor     float64
}

// withBursts inserts the bursts (in time order, each within the profile)
// into the profile ps: steps up and down within a second.
func withBursts(ps []Point, bs []burst) []Point {
	d := Day{Rate: ps}
	var out []Point
	i := 0
	for _, b := range bs {
		for i < len(ps) && ps[i].At < b.at {
			out = append(out, ps[i])
			i++
		}
		end := b.at + b.length
		out = append(out, Point{b.at, d.rate(b.at.Seconds())}, Point{b.at + time.Second, d.rate(b.at.Seconds()) * b.factor},
			Point{end - time.Second, d.rate(end.Seconds()) * b.factor}, Point{end, d.rate(end.Seconds())})
		for i < len(ps) && ps[i].At <= end {
			i++
		}
	}
	return append(out, ps[i:]...)
}
