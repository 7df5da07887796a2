package benchreport

import (
	"fmt"
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

// f2 formats like vLLM's summary ("%.2f"), with "inf" for infinities and
// "-" for NaN.
func f2(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.2f", v)
}

// rng formats a bounded number scaled by k as "est [lower, upper]", or the
// single number when exact.
func rng(r Range, k float64) string {
	e, lo, hi := float64(r.Estimate)*k, float64(r.Lower)*k, float64(r.Upper)*k
	if r.isExact() {
		return f2(e)
	}
	return fmt.Sprintf("%s [%s, %s]", f2(e), short(lo), short(hi))
}

// ratio formats a bounded ratio with four decimals: "0.9812 [0.972, 0.985]".
func ratio(r Range) string {
	e, lo, hi := float64(r.Estimate), float64(r.Lower), float64(r.Upper)
	if r.isExact() {
		return fmt.Sprintf("%.4f", e)
	}
	return fmt.Sprintf("%.4f [%.4f, %.4f]", e, lo, hi)
}

// short formats a bound compactly: bucket edges read best as written.
func short(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	if math.IsInf(v, -1) {
		return "-Inf"
	}
	return fmtG(math.Round(v*1000) / 1000)
}
