package scrape

import (
	"bytes"
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

// parseLE parses an `le` value, memoising the few distinct ones of an
// exposition so that buckets cost no allocation.
func (c *collector) parseLE(le []byte) (float64, error) {
	if v, ok := c.les[string(le)]; ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(le), 64)
	if err != nil {
		return 0, err
	}
	if c.les == nil {
		c.les = make(map[string]float64)
	}
	c.les[string(le)] = v
	return v, nil
}
