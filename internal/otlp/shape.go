package otlp

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// exportShape counts the messages of an OTLP/protobuf trace export whose
// decoding allocates a structure each: what the receiver's memory budget
// weighs before decoding (see decodeCost).
type exportShape struct {
	// spans, events and links are the largest structures.
	spans, events, links int
	// others counts every other message: resource and scope spans, resources,
	// scopes, attributes and their values.
	others int
}

// The messages scanExport descends into, with the fields of each that hold
// another (from opentelemetry-proto's trace, resource and common protos).
type messageKind uint8

const (
	kindRequest messageKind = iota
	kindResourceSpans
	kindResource
	kindScopeSpans
	kindScope
	kindSpan
	kindEvent
	kindLink
	kindKeyValue
	kindAnyValue
	kindArrayValue
	kindKeyValueList
)

var children = [...]map[protowire.Number]messageKind{
	kindRequest:       {1: kindResourceSpans},
	kindResourceSpans: {1: kindResource, 2: kindScopeSpans},
	kindResource:      {1: kindKeyValue},
	kindScopeSpans:    {1: kindScope, 2: kindSpan},
	kindScope:         {3: kindKeyValue},
	kindSpan:          {9: kindKeyValue, 11: kindEvent, 13: kindLink},
	kindEvent:         {3: kindKeyValue},
	kindLink:          {5: kindKeyValue},
	kindKeyValue:      {2: kindAnyValue},
	kindAnyValue:      {5: kindArrayValue, 6: kindKeyValueList},
	kindArrayValue:    {1: kindAnyValue},
	kindKeyValueList:  {1: kindKeyValue},
}

// maxNesting bounds how deep attribute values may nest (arrays of arrays,
// lists of lists); deeper exports are refused.
const maxNesting = 64

var errMalformed = errors.New("malformed protobuf")

// scanExport counts the messages of an ExportTraceServiceRequest without
// decoding it: one pass over the wire format, allocating nothing, reading
// tags and lengths exactly as pdata's decoder does. It fails on what that
// decoder refuses (a truncated tag, varint or length), on
// groups (a deprecated wire type OTLP never uses) and on nesting deeper
// than maxNesting; fields it does not know are skipped.
func scanExport(b []byte) (exportShape, error) {
	var s exportShape
	err := s.scan(b, kindRequest, 0)
	return s, err
}

func (s *exportShape) scan(b []byte, kind messageKind, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("attributes nested more than %d deep", maxNesting)
	}
	for len(b) > 0 {
		tag, n := varint(b)
		if n == 0 {
			return fmt.Errorf("%w: bad tag", errMalformed)
		}
		b = b[n:]
		// As pdata's decoder reads a tag: the number truncated to 32 bits.
		num, typ := int32(tag>>3), protowire.Type(tag&7)
		if num <= 0 {
			return fmt.Errorf("%w: field number %d", errMalformed, num)
		}
		var size int
		switch typ {
		case protowire.VarintType:
			_, size = varint(b)
		case protowire.Fixed64Type:
			size = fixed(b, 8)
		case protowire.Fixed32Type:
			size = fixed(b, 4)
		case protowire.BytesType:
			l, m := varint(b)
			if m > 0 && l <= uint64(len(b)-m) {
				size = m + int(l)
			}
		default:
			// Groups (deprecated, never in OTLP: decoders disagree on them,
			// so the count could differ from what is decoded) and illegal
			// wire types.
			return fmt.Errorf("%w: field %d has wire type %d, which OTLP does not use", errMalformed, num, typ)
		}
		if size == 0 {
			return fmt.Errorf("%w: field %d truncated", errMalformed, num)
		}
		field := b[:size]
		b = b[size:]
		child, ok := children[kind][protowire.Number(num)]
		if typ != protowire.BytesType || !ok {
			continue
		}
		_, m := varint(field)
		switch child {
		case kindSpan:
			s.spans++
		case kindEvent:
			s.events++
		case kindLink:
			s.links++
		default:
			s.others++
		}
		if err := s.scan(field[m:], child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// varint reads a varint as pdata's decoder does (bits past 64 ignored, no
// overflow check on the tenth byte); n is 0 when b ends first or the varint
// runs past ten bytes.
func varint(b []byte) (v uint64, n int) {
	for shift := uint(0); shift < 64; shift += 7 {
		if n >= len(b) {
			return 0, 0
		}
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, n
		}
	}
	return 0, 0
}

// fixed is the size of a fixed-width field, 0 when b is shorter.
func fixed(b []byte, size int) int {
	if len(b) < size {
		return 0
	}
	return size
}
