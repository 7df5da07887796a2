package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// Load reads, decodes, defaults and validates the configuration file. Every
// error it returns about the content is an *Error naming file, line and field.
func Load(filename string) (*Config, error) {
	data, err := os.ReadFile(filename)
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
	if e := checkDocument(root); e != nil {
		e.File = filename
		return nil, e
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
	if fe := validate(&c); fe != nil {
		return nil, &Error{File: filename, Line: ix.line(fe.field), Field: fe.field, Msg: fe.msg}
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
		return nil, yamlError(filename, err)
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
