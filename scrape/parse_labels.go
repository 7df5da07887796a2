package scrape

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// rawLabel is one label pair of the current series, as bytes.
type rawLabel struct {
	name, value []byte
}

// scanLabels reads the label pairs of an already validated series
// (`name{a="b",c="d"}`) from its raw bytes, without the allocations of
// building a label set. It handles the plain form only and returns false for
// anything else (an escape, a quoted label name, an unexpected byte), so that
// the caller falls back to the parser's own label set.
func scanLabels(series []byte, out []rawLabel) ([]rawLabel, bool) {
	out = out[:0]
	if bytes.IndexByte(series, '\\') >= 0 {
		return out, false
	}
	i := bytes.IndexByte(series, '{')
	if i < 0 {
		return out, true // no labels at all
	}
	i++
	skip := func() {
		for i < len(series) && (series[i] == ' ' || series[i] == '\t') {
			i++
		}
	}
	for {
		skip()
		if i >= len(series) {
			return out, false
		}
		if series[i] == '}' {
			return out, true
		}
		start := i
		for i < len(series) && isLabelNameByte(series[i]) {
			i++
		}
		if i == start {
			return out, false
		}
		name := series[start:i]
		skip()
		if i >= len(series) || series[i] != '=' {
			return out, false
		}
		i++
		skip()
		if i >= len(series) || series[i] != '"' {
			return out, false
		}
		end := bytes.IndexByte(series[i+1:], '"')
		if end < 0 {
			return out, false
		}
		out = append(out, rawLabel{name: name, value: series[i+1 : i+1+end]})
		i += end + 2
		skip()
		if i < len(series) && series[i] == ',' {
			i++
		}
	}
}

func isLabelNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// fromLabelSet fills out from a parsed label set (the slow path), skipping
// the metric name.
func fromLabelSet(ls labels.Labels, out []rawLabel) []rawLabel {
	out = out[:0]
	ls.Range(func(l labels.Label) {
		if l.Name != labels.MetricName {
			out = append(out, rawLabel{name: []byte(l.Name), value: []byte(l.Value)})
		}
	})
	return out
}

// sortLabels orders pairs by name (insertion sort: a series has few labels),
// so that one child has one identity whatever order its labels were written in.
func sortLabels(ls []rawLabel) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && bytes.Compare(ls[j].name, ls[j-1].name) < 0; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// identity reads model_name and le from sorted pairs and fills c.key (every
// label but le) and c.group (the same without pid). Both are length-prefixed
// so that no label value can forge another identity.
func (c *collector) identity(ls []rawLabel) (model, le []byte, hasLE bool) {
	c.key, c.group = c.key[:0], c.group[:0]
	for _, l := range ls {
		switch string(l.name) {
		case labelLE:
			le, hasLE = l.value, true
			continue
		case labelModel:
			model = l.value
		}
		c.key = appendField(appendField(c.key, l.name), l.value)
		if string(l.name) != labelPID {
			c.group = appendField(appendField(c.group, l.name), l.value)
		}
	}
	return model, le, hasLE
}

func appendField(b, s []byte) []byte {
	// The decimal length, as strconv.AppendInt writes it, with the common
	// one- and two-digit cases written directly (they showed in profiles).
	switch n := len(s); {
	case n < 10:
		b = append(b, byte('0'+n))
	case n < 100:
		b = append(b, byte('0'+n/10), byte('0'+n%10))
	default:
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, ':')
	return append(b, s...)
}

// describe renders pairs without le, for messages: {engine="0", model_name="m"}.
func describe(ls []rawLabel) string {
	var b strings.Builder
	b.WriteByte('{')
	for _, l := range ls {
		if string(l.name) == labelLE {
			continue
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.Write(l.name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(string(l.value)))
	}
	b.WriteByte('}')
	return b.String()
}

// parseLE parses an `le` value exactly as strconv.ParseFloat does. The usual
// forms (`+Inf`, and short plain decimals such as `0.005` or `2500.0`) are
// read directly: a decimal whose digits form an integer m < 2^53 with k ≤ 22
// digits after the point is m / 10^k, both exact float64s, so the one
// correctly rounded division gives ParseFloat's result. Anything else goes
// to ParseFloat.
func parseLE(le []byte) (float64, error) {
	if string(le) == "+Inf" {
		return math.Inf(1), nil
	}
	if v, ok := parseShortDecimal(le); ok {
		return v, nil
	}
	return strconv.ParseFloat(string(le), 64)
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseShortDecimal reads `digits[.digits]` with at most 15 digits in all
// (so the mantissa is below 2^53), reporting false for any other form.
func parseShortDecimal(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot && i > 0 && i < len(b)-1:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac >= len(pow10) {
		return 0, false
	}
	return float64(m) / pow10[frac], true
}

// desc renders the child's labels without le for messages, as describe does,
// from its identity: built only when a message needs it.
func (ch *histChild) desc() string { return describeKey(ch.key) }

// describeKey renders an identity written by identity (length-prefixed
// name and value fields, sorted, without le) as describe renders the pairs.
func describeKey(key string) string {
	var b strings.Builder
	b.WriteByte('{')
	for key != "" {
		name, rest, ok := cutField(key)
		if !ok {
			break
		}
		value, rest, ok := cutField(rest)
		if !ok {
			break
		}
		key = rest
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(value))
	}
	b.WriteByte('}')
	return b.String()
}

// cutField splits one `len:bytes` field written by appendField off s.
func cutField(s string) (field, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 0 || n > len(s)-i-1 {
		return "", "", false
	}
	return s[i+1 : i+1+n], s[i+1+n:], true
}
