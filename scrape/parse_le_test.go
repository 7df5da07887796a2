package scrape

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseLEMatchesParseFloat checks that parseLE's direct reading of short
// decimals gives exactly strconv.ParseFloat's value and error, for the le
// values vLLM exposes, edge cases, and many random decimals.
func TestParseLEMatchesParseFloat(t *testing.T) {
	inputs := []string{
		"+Inf", "Inf", "inf", "-Inf", "NaN", "", ".", "1.", ".5", "-0.5", "+1", "0", "0.0", "00.10",
		"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
		"1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0",
		"1e-05", "1e3", "0x1p-2", "1_000", "1..2", "1.2.3", "12a",
		"999999999999999", "9999999999999999", "0.123456789012345", "0.1234567890123456",
		"9007199254740993", "123456789012345.0", "0.000000000000001", "17976931348623157",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := strconv.FormatUint(r.Uint64N(1_000_000_000_000), 10)
		if p := r.IntN(len(s) + 1); p > 0 && p < len(s) {
			s = s[:p] + "." + s[p:]
		}
		inputs = append(inputs, s)
	}
	for _, in := range inputs {
		got, gotErr := parseLE([]byte(in))
		want, wantErr := strconv.ParseFloat(in, 64)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("parseLE(%q) error %v, ParseFloat error %v", in, gotErr, wantErr)
		}
		if gotErr == nil && math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("parseLE(%q) = %v (%#x), ParseFloat %v (%#x)", in, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}
