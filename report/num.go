package report

import (
	"math"
	"strconv"
	"strings"
)

// Num is a float64 that survives JSON: +Inf and -Inf are written as the
// strings "+Inf" and "-Inf" (as Prometheus writes them) and NaN as null,
// where encoding/json would fail. Bounds from histograms can be infinite.
type Num float64

// MarshalJSON writes finite values in Go's shortest form.
func (n Num) MarshalJSON() ([]byte, error) {
	v := float64(n)
	switch {
	case math.IsNaN(v):
		return []byte("null"), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// fmtG formats a number in its shortest form.
func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// upper spells a metric key as vLLM prints it (TTFT, E2EL).
func upper(s string) string { return strings.ToUpper(s) }
