package history

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Points of the coarse tiers (index ≥ 1) hold their values packed: each value
// as the whole-number increase over the same value of the segment's base
// vector (the values of the segment's first packed point), as a uvarint of
// increase<<1, or, when the value is not the base plus a whole number below
// 2^53 (a `_sum`, a fractional count), as the tag 1 followed by its 8 IEEE
// bytes. Cumulative counts only grow within a segment and most grow slowly,
// so a value takes 1–4 bytes instead of 8. Decoding is exact: a value is
// packed as an increase only when base + increase gives back its very bits.
// The packed form starts with the number of values as a uvarint.

// rawTag marks a value stored as its 8 IEEE-754 bytes.
const rawTag = 1

// maxExactInt is 2^53: every whole number below it is a float64 exactly.
const maxExactInt = 1 << 53

// pack encodes vals against base (values past base's end count against 0)
// into a slice of exactly the encoded length: packed points are held for
// days, so no spare capacity.
func pack(vals, base []float64) []byte {
	buf := make([]byte, 0, binary.MaxVarintLen64+(1+8)*len(vals))
	buf = binary.AppendUvarint(buf, uint64(len(vals)))
	for i, v := range vals {
		var b float64
		if i < len(base) {
			b = base[i]
		}
		if d, ok := wholeIncrease(v, b); ok {
			buf = binary.AppendUvarint(buf, d<<1)
			continue
		}
		buf = binary.AppendUvarint(buf, rawTag)
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return bytes.Clone(buf)
}

// wholeIncrease returns v - b when it is a whole number in [0, 2^53) and
// b + (v - b) reproduces v bit for bit.
func wholeIncrease(v, b float64) (uint64, bool) {
	d := v - b
	if !(d >= 0 && d < maxExactInt) || d != math.Trunc(d) {
		return 0, false
	}
	u := uint64(d)
	if math.Float64bits(b+float64(u)) != math.Float64bits(v) {
		return 0, false
	}
	return u, true
}

// unpack decodes a vector packed against base. The data was produced by pack
// in this process, so a malformed vector cannot occur; it decodes as far as
// it is well formed and leaves the rest zero rather than panic.
func unpack(enc []byte, base []float64) []float64 {
	n, k := binary.Uvarint(enc)
	if k <= 0 || n > uint64(len(enc)) {
		return nil
	}
	enc = enc[k:]
	vals := make([]float64, n)
	for i := range vals {
		x, k := binary.Uvarint(enc)
		if k <= 0 {
			break
		}
		enc = enc[k:]
		if x == rawTag {
			if len(enc) < 8 {
				break
			}
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(enc))
			enc = enc[8:]
			continue
		}
		var b float64
		if i < len(base) {
			b = base[i]
		}
		vals[i] = b + float64(x>>1)
	}
	return vals
}

// values returns the point's value vector: the stored slice for a raw point,
// a freshly decoded one for a packed point. Callers must not modify it.
func (p *point) values() []float64 {
	if p.enc == nil {
		return p.vals
	}
	return unpack(p.enc, p.seg.base)
}

// packPoint converts a raw point to the packed form, making its values the
// segment's base when the segment has none yet.
func (p *point) packPoint() {
	if p.enc != nil {
		return
	}
	if p.seg.base == nil {
		// Non-nil even for an empty vector: once a point is packed against
		// the base, the base must never change.
		p.seg.base = p.vals
		if p.seg.base == nil {
			p.seg.base = []float64{}
		}
	}
	p.enc = pack(p.vals, p.seg.base)
	p.vals = nil
}
