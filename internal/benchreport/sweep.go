package benchreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Load names what a sweep varies.
type Load string

// The offered-load axes of a sweep.
const (
	LoadRate        Load = "request_rate"
	LoadConcurrency Load = "max_concurrency"
)

// Sweep is several bench results ordered by offered load, with the knee.
type Sweep struct {
	// Load is the axis the points are sorted by: max_concurrency when the
	// files differ in it, request_rate otherwise.
	Load   Load          `json:"load"`
	Points []BenchResult `json:"points"`
	// Knee is the index of the goodput-maximal point (requests/s; ties go to
	// the lower load), -1 without goodput objectives or with a single point.
	Knee int `json:"knee"`
	// KneeReason says why the point after the knee is worse, or that the
	// sweep ends at the knee.
	KneeReason string `json:"knee_reason,omitempty"`
}

// NewSweep sorts results by offered load and finds the knee: the point of
// greatest request goodput. Its reason names what happens at the next
// load: goodput falls, and/or p99 TTFT or TPOT (the percentile 99 when
// computed, else the largest computed) breaks its objective.
func NewSweep(results []BenchResult) Sweep {
	s := Sweep{Load: LoadRate, Points: slices.Clone(results), Knee: -1}
	for _, r := range results[min(1, len(results)):] {
		if r.MaxConcurrency != results[0].MaxConcurrency {
			s.Load = LoadConcurrency
		}
	}
	slices.SortStableFunc(s.Points, func(a, b BenchResult) int {
		if s.Load == LoadConcurrency {
			return cmp.Compare(concurrencyKey(a), concurrencyKey(b))
		}
		return cmp.Compare(float64(a.RequestRate), float64(b.RequestRate))
	})
	for i, p := range s.Points {
		if p.Goodput == nil {
			return s
		}
		if s.Knee < 0 || p.Goodput.RequestsPerSecond > s.Points[s.Knee].Goodput.RequestsPerSecond {
			s.Knee = i
		}
	}
	if s.Knee < 0 || len(s.Points) < 2 {
		s.Knee = -1
		return s
	}
	if s.Knee == len(s.Points)-1 {
		s.KneeReason = "goodput is highest at the highest load measured: sweep further to find where it falls"
		return s
	}
	s.KneeReason = kneeReason(s.Points[s.Knee], s.Points[s.Knee+1], s.LoadLabel(s.Knee+1))
	return s
}

// concurrencyKey orders uncapped runs (0) after every cap.
func concurrencyKey(r BenchResult) float64 {
	if r.MaxConcurrency <= 0 {
		return math.Inf(1)
	}
	return float64(r.MaxConcurrency)
}

// LoadLabel names point i's offered load ("c=32", "rate=8", "rate=inf").
func (s Sweep) LoadLabel(i int) string {
	p := s.Points[i]
	if s.Load == LoadConcurrency {
		if p.MaxConcurrency <= 0 {
			return "c=none"
		}
		return fmt.Sprintf("c=%d", p.MaxConcurrency)
	}
	if math.IsInf(float64(p.RequestRate), 1) {
		return "rate=inf"
	}
	return "rate=" + fmtG(float64(p.RequestRate))
}

// kneeReason explains why next is past the knee.
func kneeReason(knee, next BenchResult, label string) string {
	var why []string
	g0, g1 := knee.Goodput.RequestsPerSecond, next.Goodput.RequestsPerSecond
	if g1 < g0 {
		why = append(why, fmt.Sprintf("goodput falls from %.2f to %.2f req/s", g0, g1))
	}
	for _, m := range []struct {
		key  string
		stat Stat
	}{{"ttft", next.TTFT}, {"tpot", next.TPOT}, {"e2el", next.E2EL}} {
		limit, ok := threshold(knee.Goodput.Objectives, m.key)
		p, v, have := tail(m.stat)
		if ok && have && v > limit {
			why = append(why, fmt.Sprintf("p%s %s %.1f ms breaks the %s ms objective", fmtG(p), upper(m.key), v*1000, fmtG(limit*1000)))
		}
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("goodput does not rise (%.2f req/s)", g1))
	}
	out := "at " + label + ": " + why[0]
	for _, w := range why[1:] {
		out += "; " + w
	}
	return out
}

// tail returns the 99th percentile when computed, else the largest computed.
func tail(s Stat) (p, v float64, ok bool) {
	if s.Count == 0 || len(s.Percentiles) == 0 {
		return 0, 0, false
	}
	if v, ok := s.Value(99); ok {
		return 99, v, true
	}
	best := s.Percentiles[0]
	for _, x := range s.Percentiles {
		if x.Q > best.Q {
			best = x
		}
	}
	return best.Q * 100, best.Value, true
}
