package fleetday

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// GridPoint is one threshold tried on the training days: the lowest of
// their attainments and their replica-hours summed.
type GridPoint struct {
	Threshold, MinAttainment, ReplicaHours float64
	Meets                                  bool
}

// Result is a signal's threshold chosen on the training days and its
// scores on the held-out days.
type Result struct {
	Kind      string
	Threshold float64
	Grid      []GridPoint
	HeldOut   []Score
	// Error is the replica signal's own error on the held-out days (the
	// replica signal's kinds only).
	Error *SignalError
}

// job is one day played with one signal.
type job struct {
	kind      int
	threshold float64
	day       Day
	out       *Score
	trace     *[]TickRecord
}

// runAll plays the jobs on workers goroutines; the first error is returned.
func runAll(cfg Config, kinds []Kind, jobs []job, workers int) error {
	var mu sync.Mutex
	var first error
	ch := make(chan job)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for j := range ch {
				sc, tr, err := Run(cfg, j.day, kinds[j.kind].New(j.threshold))
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				*j.out = sc
				if j.trace != nil {
					*j.trace = tr
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return first
}

// choose is the threshold of the grid that meets the goal on every
// training day with the fewest replica-hours; when none meets it, the one
// whose worst day comes nearest.
func choose(grid []GridPoint) float64 {
	best := -1
	for i, g := range grid {
		if best < 0 {
			best = i
			continue
		}
		b := grid[best]
		switch {
		case g.Meets && (!b.Meets || g.ReplicaHours < b.ReplicaHours):
			best = i
		case !g.Meets && !b.Meets && g.MinAttainment > b.MinAttainment:
			best = i
		}
	}
	return grid[best].Threshold
}

// Evaluate chooses each kind's threshold by a grid search on the training
// days and plays the held-out days at it, on workers goroutines; knees
// give the true per-replica knee by mix and fleet size for the replica
// signal's own error.
func Evaluate(cfg Config, kinds []Kind, training, heldOut []Day, knees Knees, workers int) ([]Result, error) {
	res := make([]Result, len(kinds))
	scores := make([][][]Score, len(kinds)) // kind, threshold, day
	var jobs []job
	for k, kd := range kinds {
		res[k].Kind = kd.Name
		scores[k] = make([][]Score, len(kd.Grid))
		for t, th := range kd.Grid {
			scores[k][t] = make([]Score, len(training))
			for d, day := range training {
				jobs = append(jobs, job{kind: k, threshold: th, day: day, out: &scores[k][t][d]})
			}
		}
	}
	if err := runAll(cfg, kinds, jobs, workers); err != nil {
		return nil, fmt.Errorf("training days: %w", err)
	}
	jobs = jobs[:0]
	traces := make([][][]TickRecord, len(kinds))
	for k, kd := range kinds {
		for t, th := range kd.Grid {
			g := GridPoint{Threshold: th, MinAttainment: math.Inf(1), Meets: true}
			for _, sc := range scores[k][t] {
				g.MinAttainment = math.Min(g.MinAttainment, sc.Attainment)
				g.ReplicaHours += sc.ReplicaHours
				g.Meets = g.Meets && sc.Attainment >= SLO.Goal
			}
			res[k].Grid = append(res[k].Grid, g)
		}
		res[k].Threshold = choose(res[k].Grid)
		res[k].HeldOut = make([]Score, len(heldOut))
		traces[k] = make([][]TickRecord, len(heldOut))
		for d, day := range heldOut {
			jobs = append(jobs, job{kind: k, threshold: res[k].Threshold, day: day, out: &res[k].HeldOut[d], trace: &traces[k][d]})
		}
	}
	if err := runAll(cfg, kinds, jobs, workers); err != nil {
		return nil, fmt.Errorf("held-out days: %w", err)
	}
	for k := range kinds {
		if _, ours := kinds[k].New(1).(*ours); !ours || knees == nil {
			continue
		}
		e := signalError(cfg, heldOut, traces[k], knees)
		res[k].Error = &e
	}
	return res, nil
}

// Knees are the true per-replica knees (req/s) of a fleet, by mix name and
// fleet size (FleetKnee); between two sizes measured the smaller's counts.
type Knees map[string]map[int]float64

// at is the knee of n replicas under mix (the largest size measured not
// above n; NaN when none).
func (k Knees) at(mix string, n int) float64 {
	best, out := 0, math.NaN()
	for size, v := range k[mix] {
		if size <= n && size > best {
			best, out = size, v
		}
	}
	return out
}

// MeasureKnees measures FleetKnee for each mix and size: first over a
// coarse grid (0.7 to 1.6 times guess, the single replica's knee of the
// mix, in steps of 0.1 of it, on the first two seeds), then over all seeds
// on a fine one (steps of 0.02 of guess, 0.12 of it either side of the
// coarse knee).
func MeasureKnees(cfg Config, mixes []Mix, guess map[string]float64, sizes []int, seeds []uint64) (Knees, error) {
	k := Knees{}
	steps := func(from, to, step float64) []float64 {
		var out []float64
		for r := from; r <= to+1e-9; r += step {
			out = append(out, r)
		}
		return out
	}
	for _, m := range mixes {
		k[m.Name] = map[int]float64{}
		g := guess[m.Name]
		for _, n := range sizes {
			coarse := FleetKnee(cfg, m, n, steps(0.7*g, 1.6*g, 0.1*g), seeds[:min(2, len(seeds))])
			if math.IsNaN(coarse.Knee) || math.IsInf(coarse.Knee, 0) {
				return nil, fmt.Errorf("mix %s, %d replicas: knee outside %.2f–%.2f req/s (attainment %v)", m.Name, n, 0.7*g, 1.6*g, coarse.Attainment)
			}
			fine := FleetKnee(cfg, m, n, steps(coarse.Knee-0.12*g, coarse.Knee+0.12*g, 0.02*g), seeds)
			if math.IsNaN(fine.Knee) || math.IsInf(fine.Knee, 0) {
				return nil, fmt.Errorf("mix %s, %d replicas: knee outside the fine grid around %.2f (attainment %v)", m.Name, n, coarse.Knee, fine.Attainment)
			}
			k[m.Name][n] = fine.Knee
		}
	}
	return k, nil
}

// SignalError is how the replica signal's own recommendation fared: at
// every tick where it had one, would ⌈Replicas⌉ replicas have carried the
// load that came (the arrival rate over the capacity's LoadSpan from Lead
// on) within the fleet's true knee (Knees, at that size and the mix then)?
// And did the capacity it counted per replica lie above that knee?
type SignalError struct {
	// Evaluations counts the ticks with a recommendation; Breached those
	// whose recommendation would have been past the knee.
	Evaluations, Breached int
	// Bounded counts the ticks whose capacity came from a bounded answer
	// (the lower end of a 90% interval, nominally above the truth in 5%
	// of them) and AboveBounded those where it lay above the knee;
	// LowerOnly and AboveLowerOnly the same for lower_only answers.
	Bounded, AboveBounded, LowerOnly, AboveLowerOnly int
	// Intervals counts the ready replicas' bounded answers over the
	// ticks, Covered those whose 90% prediction interval held the fleet's
	// knee at its ready size, Below those whose interval lay wholly below
	// it.
	Intervals, Covered, Below int
}

// signalError scores the recommendations of traces against knees.
func signalError(cfg Config, days []Day, traces [][]TickRecord, knees Knees) SignalError {
	var e SignalError
	tick := cfg.Tick.Seconds()
	lead, span := int(cfg.Policy.Lead.Seconds()/tick), int(cfg.Capacity.LoadSpan.Seconds()/tick)
	for d, tr := range traces {
		base := DemoMix()
		for i, r := range tr {
			if math.IsNaN(r.Need.Replicas) || i+lead+span > len(tr) {
				continue
			}
			n := max(1, int(math.Ceil(r.Need.Replicas)))
			at := r.At.Seconds() + float64(lead)*tick
			mix := days[d].mix(at, base).Name
			k := knees.at(mix, n)
			arr := 0.0
			for _, x := range tr[i+lead : i+lead+span] {
				arr += x.Arrivals
			}
			e.Evaluations++
			if arr/(float64(span)*tick)/float64(n) > k {
				e.Breached++
			}
			kNow := knees.at(days[d].mix(r.At.Seconds(), base).Name, n)
			kReady := knees.at(days[d].mix(r.At.Seconds(), base).Name, max(1, r.Ready))
			for _, iv := range r.Intervals {
				e.Intervals++
				switch {
				case iv.Lower <= kReady && kReady <= iv.Upper:
					e.Covered++
				case iv.Upper < kReady:
					e.Below++
				}
			}
			switch r.Need.Kind {
			case capacity.Bounded:
				e.Bounded++
				if r.Need.PerReplica > kNow {
					e.AboveBounded++
				}
			case capacity.LowerOnly:
				e.LowerOnly++
				if r.Need.PerReplica > kNow {
					e.AboveLowerOnly++
				}
			}
		}
	}
	return e
}

// ReadKnees reads knees written by WriteKnees.
func ReadKnees(path string) (Knees, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("knees: %w", err)
	}
	var raw map[string]map[string]float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("knees %s: %w", path, err)
	}
	k := Knees{}
	for mix, bySize := range raw {
		k[mix] = map[int]float64{}
		for size, v := range bySize {
			n, err := strconv.Atoi(size)
			if err != nil || n < 1 || !(v > 0) {
				return nil, fmt.Errorf("knees %s: mix %s: size %q knee %v", path, mix, size, v)
			}
			k[mix][n] = v
		}
	}
	return k, nil
}

// WriteKnees writes knees as indented JSON.
func WriteKnees(path string, k Knees) error {
	raw := map[string]map[string]float64{}
	for mix, bySize := range k {
		raw[mix] = map[string]float64{}
		for n, v := range bySize {
			raw[mix][strconv.Itoa(n)] = v
		}
	}
	b, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return fmt.Errorf("knees: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("knees: %w", err)
	}
	return nil
}
