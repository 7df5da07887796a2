package traces

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// CalibrationTotal is the calibration of one model's window of one length,
// summed over every evaluation since the exporter started: counters, so
// that a dashboard reads calibration over days from their rates.
type CalibrationTotal struct {
	Nominal time.Duration
	// Windows counts the evaluated windows whose spans numbered the
	// finished requests (covered or inconsistent: calibrated); Held those
	// in which every histogram bound held the spans' exact value.
	Windows, Held float64
	// AbsErrorSum sums |histogram estimate − exact attainment| over every
	// attainment compared (Calibration.AttainmentErrors), Errors counts
	// them: rate(AbsErrorSum) / rate(Errors) is the mean absolute error.
	AbsErrorSum, Errors float64
}

// HeldShare is Held / Windows, NaN before any calibrated window.
func (c CalibrationTotal) HeldShare() float64 {
	if c.Windows == 0 {
		return math.NaN()
	}
	return c.Held / c.Windows
}

// MeanAbsError is AbsErrorSum / Errors, NaN before any comparison.
func (c CalibrationTotal) MeanAbsError() float64 {
	if c.Errors == 0 {
		return math.NaN()
	}
	return c.AbsErrorSum / c.Errors
}

// Tally accumulates the calibration totals of a target's models. The zero
// value is ready; it is not safe for concurrent use (a target's
// evaluation holds its lock).
type Tally struct {
	models map[string][]CalibrationTotal
}

// Add counts one evaluation's trace results of a model and returns the
// model's totals, by window length in the results' order (windows no
// longer evaluated keep their totals). models lists the target's models
// now: the totals of the others are dropped, so that memory follows the
// models served.
func (t *Tally) Add(model string, results []Result, models []string) []CalibrationTotal {
	if t.models == nil {
		t.models = map[string][]CalibrationTotal{}
	}
	for name := range t.models {
		if !slices.Contains(models, name) {
			delete(t.models, name)
		}
	}
	totals := t.models[model]
	for _, r := range results {
		if !r.Covered && !r.Inconsistent {
			continue
		}
		i := slices.IndexFunc(totals, func(c CalibrationTotal) bool { return c.Nominal == r.Nominal })
		if i < 0 {
			totals = append(totals, CalibrationTotal{Nominal: r.Nominal})
			i = len(totals) - 1
		}
		c := &totals[i]
		c.Windows++
		if r.Calibration.Held() {
			c.Held++
		}
		for _, e := range r.Calibration.AttainmentErrors {
			if !math.IsNaN(e.Error) && !math.IsInf(e.Error, 0) {
				c.AbsErrorSum += math.Abs(e.Error)
				c.Errors++
			}
		}
	}
	slices.SortFunc(totals, func(a, b CalibrationTotal) int { return cmp.Compare(a.Nominal, b.Nominal) })
	t.models[model] = totals
	return slices.Clone(totals)
}
