package days

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// KneeSeeds are the seeds the true knees are swept over: six 30-minute
// runs per rate, three hours of requests, so that a knee's own sampling
// spread (about ±2% between pairs of seeds) is small beside the targets.
var KneeSeeds = []uint64{101, 102, 103, 104, 105, 106}

// SweepAll measures every server's knee over seeds.
func SweepAll(seeds []uint64) (Knees, map[string]Sweep, error) {
	k, sweeps := Knees{}, map[string]Sweep{}
	for _, s := range ServersUsed {
		g := Grids[s.Name]
		sw, err := TrueKnee(s, g[0], g[1], g[2], seeds)
		if err != nil {
			return nil, nil, err
		}
		if math.IsNaN(sw.Knee) || math.IsInf(sw.Knee, 0) {
			return nil, nil, fmt.Errorf("server %q: knee outside the grid %v (attainment %v)", s.Name, g, sw.Attainment)
		}
		k[s.Name], sweeps[s.Name] = sw.Knee, sw
	}
	return k, sweeps, nil
}

// ReadKnees reads knees written by WriteKnees.
func ReadKnees(path string) (Knees, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("knees: %w", err)
	}
	var k Knees
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("knees %s: %w", path, err)
	}
	for _, s := range ServersUsed {
		if _, ok := k[s.Name]; !ok {
			return nil, fmt.Errorf("knees %s: no knee for server %q", path, s.Name)
		}
	}
	return k, nil
}

// WriteKnees writes knees as indented JSON.
func WriteKnees(path string, k Knees) error {
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return fmt.Errorf("knees: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("knees: %w", err)
	}
	return nil
}

// Score is how one day's final estimate and the baseline fared against the
// true knee.
type Score struct {
	Day  string
	Seed uint64
	Knee float64
	// Kind, Method, Estimate, Lower and Upper are the published capacity.
	Kind, Method           string
	Estimate, Lower, Upper float64
	// Inside is true when the knee lies in [Lower, Upper] (for a one-sided
	// answer: Lower ≤ knee).
	Inside bool
	// Error is |estimate − knee| / knee for a bounded answer, NaN otherwise;
	// Width is (Upper − Lower) / knee.
	Error, Width float64
	// Baseline is the mean-based model's capacity and BaselineError its
	// relative error.
	Baseline, BaselineError float64
	// Within15 is true when the interval lies within ±15% of the knee.
	Within15 bool
	// PeakShare is the highest window demand learned from, over the knee.
	PeakShare float64
}

// ScoreOf judges a replayed day against the knees.
func ScoreOf(r Result, k Knees) Score {
	knee := r.Day.Knee(k)
	e := r.Final
	s := Score{Day: r.Day.Name, Seed: r.Seed, Knee: knee, Kind: string(e.Kind), Method: string(e.Method),
		Estimate: e.Requests.Estimate, Lower: e.Requests.Lower, Upper: e.Requests.Upper,
		Error: math.NaN(), Width: math.NaN(), Baseline: r.Baseline.Requests}
	s.Inside = e.Requests.Lower <= knee && knee <= e.Requests.Upper
	if e.Kind == "bounded" {
		s.Error = math.Abs(e.Requests.Estimate-knee) / knee
		s.Width = (e.Requests.Upper - e.Requests.Lower) / knee
	}
	s.Within15 = e.Requests.Lower >= 0.85*knee && e.Requests.Upper <= 1.15*knee
	s.BaselineError = math.Abs(s.Baseline-knee) / knee
	for _, w := range r.Windows {
		if !w.End.Before(e.Since) {
			s.PeakShare = math.Max(s.PeakShare, w.Demand()/knee)
		}
	}
	return s
}

// Table writes the scores as a markdown table, one row per day with the
// seeds' figures pooled: cases inside, mean error and width of the bounded
// answers, the baseline's mean error. A bounded answer whose interval the
// Gumbel shape placed is marked "(g)".
func Table(w io.Writer, scores []Score) {
	fmt.Fprintln(w, "| day | true knee (req/s) | ours: estimate [interval] per seed | inside | within ±15% | error | width | baseline (req/s) | baseline error |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, ss := range byDay(scores) {
		d := ss[0].Day
		var ests, bases []string
		inside, within, errs, widths, berr := 0, 0, meanOf{}, meanOf{}, meanOf{}
		for _, s := range ss {
			ests = append(ests, fmt.Sprintf("%.2f [%.2f, %s]%s", s.Estimate, s.Lower, upper(s.Upper), kindMark(s.Kind, s.Method)))
			bases = append(bases, fmt.Sprintf("%.2f", s.Baseline))
			if s.Inside {
				inside++
			}
			if s.Within15 {
				within++
			}
			errs.add(s.Error)
			widths.add(s.Width)
			berr.add(s.BaselineError)
		}
		fmt.Fprintf(w, "| %s | %.2f | %s | %d/%d | %d/%d | %s | %s | %s | %s |\n", d, ss[0].Knee, strings.Join(ests, "; "),
			inside, len(ss), within, len(ss), errs.pct(), widths.pct(), strings.Join(bases, ", "), berr.pct())
	}
}

func upper(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.2f", x)
}

func kindMark(k, method string) string {
	switch {
	case k == "bounded" && method == "gumbel":
		return " (g)"
	case k == "bounded":
		return ""
	}
	return " " + k
}

// meanOf averages the non-NaN values added.
type meanOf struct{ sum, n float64 }

func (m *meanOf) add(x float64) {
	if !math.IsNaN(x) && !math.IsInf(x, 0) {
		m.sum, m.n = m.sum+x, m.n+1
	}
}

func (m meanOf) pct() string {
	if m.n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*m.sum/m.n)
}

// Errors writes, per day, how the bounded answers' errors spread over the
// seeds: inside and within ±15% of all the seeds, then of the bounded
// answers the mean width, the mean and the largest error, and how many
// miss the 5% target.
func Errors(w io.Writer, scores []Score) {
	fmt.Fprintln(w, "| day | inside | within ±15% | bounded | mean width | mean error | largest error | over 5% |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, ss := range byDay(scores) {
		d := ss[0].Day
		inside, within, bounded, over := 0, 0, 0, 0
		widths, errs := meanOf{}, meanOf{}
		largest := math.NaN()
		for _, s := range ss {
			if s.Inside {
				inside++
			}
			if s.Within15 {
				within++
			}
			if math.IsNaN(s.Error) {
				continue
			}
			bounded++
			widths.add(s.Width)
			errs.add(s.Error)
			if !(s.Error <= largest) {
				largest = s.Error
			}
			if s.Error > 0.05 {
				over++
			}
		}
		top := "–"
		if bounded > 0 {
			top = fmt.Sprintf("%.1f%%", 100*largest)
		}
		fmt.Fprintf(w, "| %s | %d/%d | %d/%d | %d | %s | %s | %s | %d |\n", d, inside, len(ss), within, len(ss), bounded, widths.pct(), errs.pct(), top, over)
	}
}

// byDay groups the scores by day, in the order the days first appear.
func byDay(scores []Score) [][]Score {
	var order []string
	by := map[string][]Score{}
	for _, s := range scores {
		if _, ok := by[s.Day]; !ok {
			order = append(order, s.Day)
		}
		by[s.Day] = append(by[s.Day], s)
	}
	out := make([][]Score, len(order))
	for i, d := range order {
		out[i] = by[d]
	}
	return out
}
