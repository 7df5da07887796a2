package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// ExampleFile is the repository's complete, commented example configuration,
// named in the hint when a configuration file does not exist.
const ExampleFile = "config.example.yaml"

// Load reads, decodes, defaults and validates the configuration file. Every
// error it returns about the content is an *Error naming file, line and field.
func Load(filename string) (*Config, error) {
	data, err := os.ReadFile(filename)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read config file %q: %w (name one with --config.file=FILE; %s in the repository is a complete, commented example)",
			filename, err, ExampleFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read config file %q: %w", filename, err)
	}
	return Parse(data, filename)
}

// Parse decodes, defaults and validates a configuration held in memory;
// filename is used in error messages only.
//
// Decoding is strict: unknown keys (at any depth, http_client_config
// included), repeated keys, values of the wrong type, an empty file and more
// than one YAML document are all errors.
func Parse(data []byte, filename string) (*Config, error) {
	root, err := parseDocument(data, filename)
	if err != nil {
		return nil, err
	}
	if es := checkDocument(root); len(es) > 0 {
		for _, e := range es {
			e.File = filename
		}
		return nil, joinErrors(es)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		// The checker should have caught everything; this keeps the
		// decoder as the final word without losing the error.
		return nil, yamlError(filename, err)
	}
	ix := newLineIndex(root)
	applyDefaults(&c, ix.present)
	if fes := validate(&c); len(fes) > 0 {
		es := make([]*Error, len(fes))
		for i, fe := range fes {
			es[i] = &Error{File: filename, Line: ix.line(fe.field), Field: fe.field, Msg: fe.msg}
		}
		return nil, joinErrors(es)
	}
	var warnings []*Error
	for _, w := range plausibility(&c) {
		warnings = append(warnings, &Error{File: filename, Line: ix.line(w.field), Field: w.field, Msg: w.msg})
	}
	slices.SortStableFunc(warnings, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	for _, w := range warnings {
		c.Warnings = append(c.Warnings, w.Error())
	}
	return &c, nil
}

// parseDocument parses the data into its single YAML document and returns the
// document's top-level mapping.
func parseDocument(data []byte, filename string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: filename, Msg: "configuration is empty"}
		}
		e := yamlError(filename, err)
		e.Line = syntaxErrorLine(data, e.Msg, e.Line)
		nameTab(data, e)
		return nil, e
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{File: filename, Line: next.Line, Msg: "more than one YAML document; a configuration is exactly one"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(filename, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: filename, Msg: "configuration is empty"}
	}
	root := resolveAlias(doc.Content[0])
	if root == nil || isNull(root) {
		return nil, &Error{File: filename, Line: doc.Line, Msg: "configuration is empty"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: filename, Line: root.Line, Msg: fmt.Sprintf("configuration must be a mapping of keys to values, got %s", kindName(root))}
	}
	return root, nil
}

// nameTab says so when a syntax error's line is indented with a tab: YAML
// allows only spaces there, and yaml.v3's "found character that cannot
// start any token" does not say which character.
func nameTab(data []byte, e *Error) {
	lines := bytes.Split(data, []byte("\n"))
	if e.Line < 1 || e.Line > len(lines) {
		return
	}
	l := lines[e.Line-1]
	indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
	if bytes.ContainsRune(indent, '\t') {
		e.Msg = "a tab indents this line: YAML indents with spaces only (" + e.Msg + ")"
	}
}

// yamlError turns an error of yaml.v3 into an *Error, moving its "line N"
// into the position.
func yamlError(filename string, err error) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line, rest := splitYAMLLine(msg)
	return &Error{File: filename, Line: line, Msg: rest}
}

// maxSyntaxSearch bounds the file size for which syntaxErrorLine searches.
const maxSyntaxSearch = 64 << 10

// syntaxErrorLine returns the line at which a YAML syntax error shows: the
// first line such that the document up to and including it already fails
// with the same message. yaml.v3 reports instead the line where the
// enclosing block starts, for parser errors counted from 0 (so a list item
// indented wrongly on line 6 under "targets:" on line 3 is reported at line
// 3, or at 2 when the list starts on 3). The problem cannot lie before the
// reported line, so the search starts there; when no prefix fails the same
// way (an error that needs the whole document), reported is returned. The
// search parses one prefix per line, so it is done only for files up to
// maxSyntaxSearch bytes (a configuration is a few KiB); larger ones keep
// yaml.v3's line.
func syntaxErrorLine(data []byte, msg string, reported int) int {
	if len(data) > maxSyntaxSearch {
		return reported
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var prefix []byte
	for i, l := range lines {
		prefix = append(prefix, l...)
		if i+1 < reported {
			continue
		}
		var doc yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(prefix)).Decode(&doc)
		if err == nil || errors.Is(err, io.EOF) {
			continue
		}
		if _, rest := splitYAMLLine(err.Error()); rest == msg {
			return i + 1
		}
	}
	return reported
}
