package history

import (
	"math"
	"testing"
	"time"
)

// TestPackRoundTrip checks that packing is exact bit for bit, whatever the
// values: whole increases, sums, fractions, -0, huge values, vectors longer
// or shorter than the base.
func TestPackRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		vals, base []float64
		maxBytes   int // 0: no size check
	}{
		{name: "empty", vals: []float64{}, base: nil, maxBytes: 1},
		{name: "equal to base", vals: []float64{5, 7, 9}, base: []float64{5, 7, 9}, maxBytes: 4},
		{name: "small increases", vals: []float64{10, 70, 1000}, base: []float64{5, 7, 9}, maxBytes: 6},
		{name: "longer than base", vals: []float64{5, 7, 9, 11}, base: []float64{5}, maxBytes: 5},
		{name: "shorter than base", vals: []float64{5}, base: []float64{5, 7, 9}, maxBytes: 2},
		{name: "sum is raw", vals: []float64{3, 12.375}, base: []float64{1, 2.5}, maxBytes: 11},
		{name: "negative zero", vals: []float64{math.Copysign(0, -1)}, base: []float64{0}},
		{name: "decrease", vals: []float64{3}, base: []float64{4}},
		{name: "fractional base", vals: []float64{2.5}, base: []float64{0.5}},
		{name: "beyond 2^53", vals: []float64{1 << 60, 1<<53 + 2}, base: []float64{0, 0}},
		{name: "just below 2^53", vals: []float64{1<<53 - 1}, base: []float64{0}},
		{name: "tiny", vals: []float64{math.SmallestNonzeroFloat64, 1e-300}, base: []float64{0, 0}},
		{name: "large base small step", vals: []float64{1e15 + 3}, base: []float64{1e15}, maxBytes: 2},
		{name: "max float", vals: []float64{math.MaxFloat64}, base: []float64{1}},
		{name: "infinite", vals: []float64{math.Inf(1)}, base: []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := pack(tt.vals, tt.base)
			got := unpack(enc, tt.base)
			if len(got) != len(tt.vals) {
				t.Fatalf("unpacked %d values, packed %d", len(got), len(tt.vals))
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(tt.vals[i]) {
					t.Errorf("value %d: got %v (%#x), want %v (%#x)", i, got[i], math.Float64bits(got[i]), tt.vals[i], math.Float64bits(tt.vals[i]))
				}
			}
			if tt.maxBytes > 0 && len(enc) > tt.maxBytes {
				t.Errorf("packed into %d bytes, want at most %d", len(enc), tt.maxBytes)
			}
		})
	}
}

// TestUnpackMalformed checks that truncated or garbled data never panics.
func TestUnpackMalformed(t *testing.T) {
	base := []float64{1, 2, 3}
	good := pack([]float64{1, 2.5, 1e300}, base)
	for n := 0; n <= len(good); n++ {
		unpack(good[:n], base)
	}
	for _, b := range [][]byte{nil, {0xff}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, {200, 1}} {
		if got := unpack(b, base); len(got) > len(b) {
			t.Errorf("unpack(%v) gave %d values from %d bytes", b, len(got), len(b))
		}
	}
}

// TestCoarsePointsPacked fills several days and checks that every point of
// the coarse tiers is packed, every raw point is not, and that every
// retained point reads back the values it was appended with.
func TestCoarsePointsPacked(t *testing.T) {
	h := New(NewRetention(5*time.Minute, 3*24*time.Hour))
	g := newSynthetic(3, 97)
	want := map[int64][]float64{}
	now := t0
	for end := t0.Add(3*24*time.Hour + 2*time.Hour); now.Before(end); now = now.Add(time.Minute) {
		if err := h.Append(g.next(now)); err != nil {
			t.Fatal(err)
		}
		sr := h.models["m"]
		p := sr.last()
		want[p.t] = append([]float64(nil), p.values()...)
	}
	sr := h.models["m"]
	packed := 0
	for k, tier := range sr.tiers {
		for i := range tier {
			p := &tier[i]
			if (k == 0) != (p.enc == nil) {
				t.Fatalf("tier %d point %d: packed %v", k, i, p.enc != nil)
			}
			if p.enc != nil {
				packed++
			}
			got, w := p.values(), want[p.t]
			if len(got) != len(w) {
				t.Fatalf("tier %d point %d: %d values, want %d", k, i, len(got), len(w))
			}
			for j := range got {
				if math.Float64bits(got[j]) != math.Float64bits(w[j]) {
					t.Fatalf("tier %d point %d value %d: %v, want %v", k, i, j, got[j], w[j])
				}
			}
		}
	}
	if packed < 100 {
		t.Errorf("only %d packed points after 3 days", packed)
	}
}
