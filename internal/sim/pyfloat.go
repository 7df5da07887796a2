package sim

import (
	"math"
	"strconv"
	"strings"
)

// pyRepr formats v as Python's repr(float) does: the shortest digits that
// round-trip, fixed notation with at least one decimal when the decimal
// exponent is in [-4, 16), scientific ("1e-05", "1.5e+20") otherwise.
func pyRepr(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64) // "-1.2345e+06"
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				b.WriteString(digits)
				b.WriteString(strings.Repeat("0", exp+1-len(digits)))
				b.WriteString(".0")
			} else {
				b.WriteString(digits[:exp+1])
				b.WriteByte('.')
				b.WriteString(digits[exp+1:])
			}
		} else {
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -exp-1))
			b.WriteString(digits)
		}
		return b.String()
	}
	b.WriteString(digits[:1])
	if len(digits) > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:])
	}
	b.WriteByte('e')
	if exp < 0 {
		b.WriteByte('-')
		exp = -exp
	} else {
		b.WriteByte('+')
	}
	if exp < 10 {
		b.WriteByte('0')
	}
	b.WriteString(strconv.Itoa(exp))
	return b.String()
}

// nonFinite spells infinities and NaN as every exposition format does.
func nonFinite(v float64) (string, bool) {
	switch {
	case math.IsInf(v, 1):
		return "+Inf", true
	case math.IsInf(v, -1):
		return "-Inf", true
	case math.IsNaN(v):
		return "NaN", true
	}
	return "", false
}

// pyGoString formats v as prometheus_client's floatToGoString: Python's repr,
// except that positive numbers with more than six integer digits switch to a
// Go-like exponent ("7.557572e+06", "1e+06"), and infinities are "+Inf"/"-Inf".
func pyGoString(v float64) string {
	if s, ok := nonFinite(v); ok {
		return s
	}
	s := pyRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// goShort formats v in Go's shortest form ("1", "0.001", "1e+06"): integral
// edges without ".0", as other clients print them.
func goShort(v float64) string {
	if s, ok := nonFinite(v); ok {
		return s
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// rustFloat formats v as the Rust prometheus-client crate prints f64 values
// (shortest round-trip, always with a decimal point for integral values).
func rustFloat(v float64) string {
	if s, ok := nonFinite(v); ok {
		return s
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
