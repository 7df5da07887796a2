package slo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExactQuantilesEqualTheSortedOnes: selection finds, for every q, the
// value ExactQuantile finds in the sorted samples, bit for bit, on samples
// with ties, sorted and reversed runs (a median-of-three pivot's bad cases)
// and qs out of order, repeated or outside [0, 1].
func TestExactQuantilesEqualTheSortedOnes(t *testing.T) {
	qs := []float64{0.99, 0.5, 0, 1, 0.5, 0.9, -1, 0.999, math.NaN()}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]func(n int) []float64{
		"random": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.ExpFloat64()
			}
			return v
		},
		"ties": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(rng.IntN(4)) / 10
			}
			return v
		},
		"ascending": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(i)
			}
			return v
		},
		"descending": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(n - i)
			}
			return v
		},
		"organ pipe": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(min(i, n-i))
			}
			return v
		},
	}
	for name, gen := range cases {
		for _, n := range []int{0, 1, 2, 17, 100, 1000, 10007} {
			v := gen(n)
			sorted := slices.Clone(v)
			slices.Sort(sorted)
			got := exactQuantiles(v, qs)
			for i, q := range qs {
				want := ExactQuantile(q, sorted)
				if math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
					t.Errorf("%s n=%d q=%v: %v, sorted %v", name, n, q, got[i], want)
				}
			}
		}
	}
}

// FuzzExactQuantiles checks selection against the sort on any samples.
func FuzzExactQuantiles(f *testing.F) {
	f.Add([]byte{3, 1, 2, 2, 9, 0, 5}, 0.5)
	f.Fuzz(func(t *testing.T, data []byte, q float64) {
		v := make([]float64, len(data))
		for i, b := range data {
			v[i] = float64(b % 37)
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		got := exactQuantiles(v, []float64{q, 0.9, 0.1})
		for i, q := range []float64{q, 0.9, 0.1} {
			want := ExactQuantile(q, sorted)
			if got[i] != want && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
				t.Fatalf("q=%v: %v, sorted %v", q, got[i], want)
			}
		}
	})
}
