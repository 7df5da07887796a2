package config

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Error is a configuration error located in the file: every loading and
// validation error is one, so that check-config and reload logs point the
// operator at the exact place to fix.
type Error struct {
	// File is the file name as given to Load or Parse.
	File string
	// Line is the 1-based line of the offending key or value; 0 if unknown.
	Line int
	// Field is the path of the offending field, e.g. "targets[0].url"; empty
	// for errors that concern the whole file (syntax, empty file).
	Field string
	// Msg says what is wrong, with the offending value.
	Msg string
}

// Error formats the error as "file:line: field: message", leaving out the
// parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// fieldError is a validation error before its line is known.
type fieldError struct {
	field string
	msg   string
}

// errorf builds a fieldError for a path. Durations are written as the
// configuration writes them, in days rather than weeks or years (7d, not
// 1w), so that a message echoes the value the operator wrote.
func errorf(field, format string, args ...any) *fieldError {
	for i, a := range args {
		if d, ok := a.(model.Duration); ok {
			args[i] = DurationText(d)
		}
	}
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// DurationText writes a duration in the units a configuration uses (d, h,
// m, s, ms): model.Duration's own String turns 7d into 1w and 365d into 1y,
// which reads as a different value from the one written.
func DurationText(d model.Duration) string {
	t := time.Duration(d)
	if t == 0 {
		return "0s"
	}
	sign := ""
	if t < 0 {
		sign, t = "-", -t
	}
	var b strings.Builder
	b.WriteString(sign)
	for _, u := range []struct {
		name string
		unit time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if t >= u.unit {
			b.WriteString(strconv.FormatInt(int64(t/u.unit), 10))
			b.WriteString(u.name)
			t %= u.unit
		}
	}
	return b.String()
}

// Errors are several configuration errors, in the order of the file; Parse
// returns every problem it finds, not only the first, so that one run of
// check-config lists what to fix.
type Errors []*Error

// Error writes one error per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, for errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// joinErrors returns nil for none, the error itself for one, and Errors
// sorted by line for more.
func joinErrors(es []*Error) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	slices.SortStableFunc(es, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return Errors(es)
}

// yamlLine matches the "line N: " that yaml.v3 puts in its messages.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// splitYAMLLine separates yaml.v3's "yaml: line N: msg" into N and msg; line
// is 0 when the message has no line.
func splitYAMLLine(msg string) (line int, rest string) {
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return 0, strings.TrimPrefix(msg, "yaml: ")
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, msg
	}
	return n, msg[len(m[0]):]
}
