package sim

import (
	"math"
	"testing"
)

// TestPyGoString checks the number forms the expositions write:
// prometheus_client's floatToGoString, Go's shortest form and the Rust
// client's. The formatters are unexported, so the test stays in package sim.
func TestPyGoString(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{1, "1.0"},
		{27453, "27453.0"},
		{2560, "2560.0"},
		{0.001, "0.001"},
		{0.0001, "0.0001"},
		{100000, "100000.0"},
		{999999.5, "999999.5"},
		{1e6, "1e+06"},
		{7557572, "7.557572e+06"},
		{1.7537953269358883e+09, "1.7537953269358883e+09"},
		{12345678901.5, "1.23456789015e+010"}, // Python's quirk: "e+0" + str(exp)
		{9.75010481363281e-06, "9.75010481363281e-06"},
		{1.5e-5, "1.5e-05"},
		{1e16, "1e+16"},
		{0.3, "0.3"},
		{-2.5, "-2.5"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := pyGoString(tt.in); got != tt.want {
			t.Errorf("pyGoString(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in         float64
		goS, rustS string
	}{{1, "1", "1.0"}, {0.025, "0.025", "0.025"}, {2560, "2560", "2560.0"}, {1e6, "1e+06", "1e+06"}} {
		if got := goShort(tt.in); got != tt.goS {
			t.Errorf("goShort(%v) = %q, want %q", tt.in, got, tt.goS)
		}
		if got := rustFloat(tt.in); got != tt.rustS {
			t.Errorf("rustFloat(%v) = %q, want %q", tt.in, got, tt.rustS)
		}
	}
}
