package slo

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

// hist builds a histogram from edges (the last must be +Inf) and cumulative counts.
func hist(sum float64, edges []float64, counts ...float64) Histogram {
	return Histogram{Edges: edges, Counts: counts, Sum: sum}
}

// near compares floats with a relative 1e-12, NaN equal to NaN and
// infinities exactly: the expected values in the tables are exact up to the
// last bits of float arithmetic.
func near(got, want float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0) || want == 0:
		return got == want || (want == 0 && math.Abs(got) < 1e-15)
	}
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

// nearB compares two Bounded with near.
func nearB(got, want Bounded) bool {
	return near(got.Estimate, want.Estimate) && near(got.Lower, want.Lower) && near(got.Upper, want.Upper)
}

// checkBounded fails when b breaks Lower <= Estimate <= Upper or holds NaN.
func checkBounded(t *testing.T, what string, b Bounded) {
	t.Helper()
	if math.IsNaN(b.Estimate) || math.IsNaN(b.Lower) || math.IsNaN(b.Upper) {
		t.Fatalf("%s: NaN in %+v", what, b)
	}
	if !(b.Lower <= b.Estimate && b.Estimate <= b.Upper) {
		t.Fatalf("%s: bounds out of order: %+v", what, b)
	}
}
