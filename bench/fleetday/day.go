package fleetday

import (
	"math"
	"math/rand/v2"
	"time"
)

// Point is the arrival rate (req/s) at a time of the day.
type Point struct {
	At   time.Duration
	Rate float64
}

// Shift changes the clients' mix at a time of the day.
type Shift struct {
	At  time.Duration
	Mix Mix
}

// Day is a day of clients: a rate profile (linear between its points,
// constant past the last), the mix (DemoMix until a shift), replicas that
// fail, and the replicas ready when it starts.
type Day struct {
	Name   string
	Seed   uint64
	Length time.Duration
	Rate   []Point
	Shifts []Shift
	// Failures are when a ready replica's vLLM dies (its requests are
	// lost; it restarts and loads the model again).
	Failures []time.Duration
	// Initial is the replicas ready at the start.
	Initial int
}

// rate is the arrival rate at t seconds into the day.
func (d Day) rate(t float64) float64 {
	ps := d.Rate
	if len(ps) == 0 {
		return 0
	}
	if t <= ps[0].At.Seconds() {
		return ps[0].Rate
	}
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if t <= b.At.Seconds() {
			f := (t - a.At.Seconds()) / (b.At.Seconds() - a.At.Seconds())
			return a.Rate + f*(b.Rate-a.Rate)
		}
	}
	return ps[len(ps)-1].Rate
}

// peak is the highest rate of the profile.
func (d Day) peak() float64 {
	p := 0.0
	for _, x := range d.Rate {
		p = math.Max(p, x.Rate)
	}
	return p
}

// mix is the mix in force at t seconds into the day, base before the
// first shift.
func (d Day) mix(t float64, base Mix) Mix {
	m := base
	for _, s := range d.Shifts {
		if t >= s.At.Seconds() {
			m = s.Mix
		}
	}
	return m
}

// arrivals generates the day's Poisson arrivals by thinning candidates
// drawn at the peak rate.
type arrivals struct {
	d    Day
	rng  *rand.Rand
	peak float64
	t    float64
	seg  int // the rate profile's segment t lies in, for a scan from it
}

func newArrivals(d Day) *arrivals {
	return &arrivals{d: d, rng: rand.New(rand.NewPCG(d.Seed, 0x5851f42d4c957f2d)), peak: d.peak()}
}

// next is the time of the next arrival, +Inf past the day's end.
func (a *arrivals) next() float64 {
	end := a.d.Length.Seconds()
	if a.peak <= 0 {
		return math.Inf(1)
	}
	for {
		a.t += a.rng.ExpFloat64() / a.peak
		if a.t >= end {
			return math.Inf(1)
		}
		if a.rng.Float64()*a.peak < a.rate() {
			return a.t
		}
	}
}

// rate is the profile's rate at a.t, found from the last segment on (t
// only grows).
func (a *arrivals) rate() float64 {
	ps := a.d.Rate
	for a.seg+1 < len(ps) && a.t > ps[a.seg+1].At.Seconds() {
		a.seg++
	}
	if a.seg+1 >= len(ps) || a.t <= ps[0].At.Seconds() {
		return a.d.rate(a.t)
	}
	p, q := ps[a.seg], ps[a.seg+1]
	return p.Rate + (a.t-p.At.Seconds())/(q.At.Seconds()-p.At.Seconds())*(q.Rate-p.Rate)
}

// Diurnal is a raised-cosine day from trough to peak and back, the peak at
// the middle of length, as points every step.
func Diurnal(trough, peak float64, length, step time.Duration) []Point {
	var ps []Point
	for at := time.Duration(0); at <= length; at += step {
		x := at.Seconds() / length.Seconds()
		ps = append(ps, Point{At: at, Rate: trough + (peak-trough)*(1-math.Cos(2*math.Pi*x))/2})
	}
	return ps
}
