package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
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

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// errorf builds a fieldError for a path.
func errorf(field, format string, args ...any) *fieldError {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
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
