package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// The checker walks the YAML node tree alongside the Go type it will be decoded
// into, and reports the first unknown key or undecodable value with its line
// and field path. yaml.v3 alone cannot: errors raised by a type's own
// UnmarshalYAML (model.Duration, prometheus/common's HTTPClientConfig) come back
// without any position, and Node.Decode does not honour KnownFields.

// maxCheckNodes bounds the nodes visited, aliases included.
const maxCheckNodes = 100000

// obsoleteUnmarshaler is the yaml.v2-style interface prometheus/common uses.
type obsoleteUnmarshaler interface {
	UnmarshalYAML(unmarshal func(any) error) error
}

// checker holds the state of one walk: every key and list element is
// checked, and the errors of all of them are kept, so that one run names
// every problem of the file.
type checker struct {
	budget int
	errs   []*Error
}

// checkDocument checks the document's root node against Config and returns
// every error found.
func checkDocument(root *yaml.Node) []*Error {
	c := &checker{budget: maxCheckNodes}
	c.record(c.check(root, reflect.TypeFor[Config](), "", root.Line))
	return c.errs
}

// record keeps an error, if any.
func (c *checker) record(e *Error) {
	if e != nil {
		c.errs = append(c.errs, e)
	}
}

// check checks node n against type t at path; at is the line of the key that
// holds the node, where errors about the node as a whole are reported.
func (c *checker) check(n *yaml.Node, t reflect.Type, path string, at int) *Error {
	n = resolveAlias(n)
	if n == nil {
		return &Error{Line: at, Field: path, Msg: "alias nested too deeply"}
	}
	c.budget--
	if c.budget < 0 {
		return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("document too large (more than %d nodes after expanding aliases)", maxCheckNodes)}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) {
		return nil // null decodes to the zero value of any type
	}
	switch {
	case t == reflect.TypeFor[model.Duration]():
		if v, neg := strings.CutPrefix(n.Value, "-"); neg && n.Kind == yaml.ScalarNode {
			if _, err := model.ParseDuration(v); err == nil {
				return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("%s must be positive (a duration is never negative)", n.Value)}
			}
		}
		return checkScalar(n, path, "duration", func(s string) error {
			_, err := model.ParseDuration(s)
			return err
		}, "%q is not a valid duration (use e.g. 500ms, 15s, 1h30m, 30d)")
	case t == reflect.TypeFor[units.Base2Bytes]():
		return checkScalar(n, path, "size", func(s string) error {
			_, err := units.ParseBase2Bytes(s)
			return err
		}, "%q is not a valid size (use e.g. 512KiB, 10MiB, 1GiB)")
	}
	before := len(c.errs)
	if err := c.checkChildren(n, t, path); err != nil {
		return err
	}
	if len(c.errs) > before {
		return nil // decoding the whole would only repeat a child's error without its place
	}
	return decodeCheck(n, t, path, at)
}

// checkChildren checks the keys and elements of a mapping or sequence and
// that the node's shape fits the type.
func (c *checker) checkChildren(n *yaml.Node, t reflect.Type, path string) *Error {
	custom := hasCustomUnmarshal(t)
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if custom {
				return nil // e.g. config.URL, a struct written as a string
			}
			return shapeError(n, path, "a mapping")
		}
		fields, inline := yamlFields(t)
		return c.checkMapping(n, path, func(key string) (reflect.Type, bool) {
			if ft, ok := fields[key]; ok {
				return ft, true
			}
			if inline != nil {
				return inline.Elem(), true
			}
			return nil, false
		}, t)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			if custom {
				return nil
			}
			return shapeError(n, path, "a mapping")
		}
		return c.checkMapping(n, path, func(string) (reflect.Type, bool) { return t.Elem(), true }, t)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			if custom {
				return nil
			}
			return shapeError(n, path, "a list")
		}
		for i, e := range n.Content {
			c.record(c.check(e, t.Elem(), indexPath(path, i), e.Line))
		}
	default:
		if n.Kind != yaml.ScalarNode && !custom {
			return shapeError(n, path, "a single value")
		}
	}
	return nil
}

// checkMapping checks every key of a mapping node: known, not repeated, and
// its value fitting the key's type. Merge keys ("<<") are checked as if their
// mappings were written in place.
func (c *checker) checkMapping(n *yaml.Node, path string, field func(string) (reflect.Type, bool), t reflect.Type) *Error {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			for _, src := range mergeSources(v) {
				c.record(c.check(src, t, path, k.Line))
			}
			continue
		}
		p := joinPath(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			return &Error{Line: k.Line, Field: path, Msg: "mapping keys must be plain strings"}
		}
		if first, ok := seen[k.Value]; ok {
			c.record(&Error{Line: k.Line, Field: p, Msg: fmt.Sprintf("key %q is repeated (first at line %d)", k.Value, first)})
			continue
		}
		seen[k.Value] = k.Line
		ft, ok := field(k.Value)
		if !ok {
			c.record(&Error{Line: k.Line, Field: p, Msg: fmt.Sprintf("unknown field %q", k.Value)})
			continue
		}
		c.record(c.check(v, ft, p, k.Line))
	}
	return nil
}

// checkScalar checks a scalar with parse, reporting format with the value.
func checkScalar(n *yaml.Node, path, what string, parse func(string) error, format string) *Error {
	if n.Kind != yaml.ScalarNode {
		return shapeError(n, path, "a "+what)
	}
	if err := parse(n.Value); err != nil {
		return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf(format, n.Value)}
	}
	return nil
}

// decodeCheck decodes the node into a fresh value of type t, which runs the
// type's own UnmarshalYAML (and validation, for prometheus/common's types).
func decodeCheck(n *yaml.Node, t reflect.Type, path string, at int) *Error {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && n.Kind == yaml.ScalarNode {
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
			if quotedNumber(n) {
				return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("must be a number, not a string: write %s without quotes", n.Value)}
			}
			return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("%q is not a number", n.Value)}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("%q is not an integer", n.Value)}
		case reflect.Bool:
			return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("%q is not a boolean (true or false)", n.Value)}
		}
	}
	line, msg := at, err.Error()
	if te != nil && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	l, rest := splitYAMLLine(msg)
	if l > 0 { // yaml.v3 knew exactly where
		line = l
	}
	msg = rest
	return &Error{Line: line, Field: path, Msg: msg}
}

// quotedNumber reports whether a scalar is a number written in quotes
// ("0.99"), which YAML reads as a string.
func quotedNumber(n *yaml.Node) bool {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return false
	}
	_, err := strconv.ParseFloat(n.Value, 64)
	return err == nil
}

// shapeError reports a node of the wrong kind.
func shapeError(n *yaml.Node, path, want string) *Error {
	return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf("expected %s, got %s", want, kindName(n))}
}

// kindName names a node's kind for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

// isNull reports whether the node is YAML null (`~`, `null` or nothing).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// hasCustomUnmarshal reports whether *t decodes itself.
func hasCustomUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(reflect.TypeFor[obsoleteUnmarshaler]()) ||
		pt.Implements(reflect.TypeFor[yaml.Unmarshaler]()) ||
		pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// yamlFields returns the YAML keys of a struct type and their types, as
// yaml.v3 sees them: tag names, lower-cased field names when untagged, inline
// structs flattened. inline is the type of an inline map, which takes every
// other key, or nil.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, inline reflect.Type) {
	fields = map[string]reflect.Type{}
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		if depth > 10 {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",inline,") {
				switch f.Type.Kind() {
				case reflect.Struct:
					collect(f.Type, depth+1)
				case reflect.Map:
					inline = f.Type
				}
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
	}
	collect(t, 0)
	return fields, inline
}
