package history

import (
	"bytes"
	"encoding/gob"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var stateRetention = Retention{Tiers: []Tier{{0, 3 * time.Minute}, {time.Minute, 20 * time.Minute}, {5 * time.Minute, 2 * time.Hour}}}

// stateHistory builds a history with restarts, thinned tiers and two models.
func stateHistory(t *testing.T, scrapes int) *History {
	t.Helper()
	h := New(stateRetention)
	g, g2 := newSynthetic(3, 41), newSynthetic(2, 0)
	for i := 0; i < scrapes; i++ {
		s := g.next(at(float64(15 * i)))
		if i%3 == 0 {
			s.Models["other"] = g2.next(at(float64(15 * i))).Models["m"]
		}
		if err := h.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// sameHistory fails unless a and b answer every question alike.
func sameHistory(t *testing.T, a, b *History) {
	t.Helper()
	if !slices.Equal(a.Models(), b.Models()) || a.Len() != b.Len() || a.Resets() != b.Resets() ||
		!a.Oldest().Equal(b.Oldest()) || !a.Newest().Equal(b.Newest()) {
		t.Fatalf("histories differ: models %v/%v len %d/%d resets %d/%d oldest %v/%v newest %v/%v",
			a.Models(), b.Models(), a.Len(), b.Len(), a.Resets(), b.Resets(), a.Oldest(), b.Oldest(), a.Newest(), b.Newest())
	}
	for _, m := range a.Models() {
		if a.ModelResets(m) != b.ModelResets(m) {
			t.Errorf("%s: resets %d/%d", m, a.ModelResets(m), b.ModelResets(m))
		}
		ta, la, _ := a.Latest(m)
		tb, lb, _ := b.Latest(m)
		if !ta.Equal(tb) || !reflect.DeepEqual(la, lb) {
			t.Errorf("%s: latest differs: %v %+v / %v %+v", m, ta, la, tb, lb)
		}
		for _, length := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour} {
			for _, warm := range []time.Duration{0, time.Minute} {
				wa, oka := a.Window(m, a.Newest(), length, Options{Warmup: warm})
				wb, okb := b.Window(m, b.Newest(), length, Options{Warmup: warm})
				if oka != okb || !reflect.DeepEqual(wa, wb) {
					t.Errorf("%s: window %v differs:\n%+v\n%+v", m, length, wa, wb)
				}
			}
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	h := stateHistory(t, 500)
	data, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got := New(stateRetention)
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, h, got)

	// Both continue identically, including across a restart.
	g := newSynthetic(3, 5)
	for i := 0; i < 60; i++ {
		s := g.next(h.Newest().Add(15 * time.Second))
		if err := h.Append(s); err != nil {
			t.Fatal(err)
		}
		if err := got.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	sameHistory(t, h, got)

	empty := New(stateRetention)
	data, _ = New(stateRetention).MarshalBinary()
	if err := empty.UnmarshalBinary(data); err != nil || empty.Len() != 0 || !empty.Newest().IsZero() {
		t.Errorf("empty round trip: err %v len %d newest %v", err, empty.Len(), empty.Newest())
	}
}

// TestStateGolden decodes a state file written by an earlier build, so that
// format changes that break existing state files are noticed. Run with
// -update to rewrite it (and bump stateVersion if the format changed).
func TestStateGolden(t *testing.T) {
	path := filepath.Join("testdata", "state_v1.gob")
	h := stateHistory(t, 300)
	if *update {
		data, err := h.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	got := New(stateRetention)
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	sameHistory(t, h, got)
}

func TestStateRejects(t *testing.T) {
	good, err := stateHistory(t, 200).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	encode := func(st stateFile) []byte {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(&st); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var valid stateFile
	if err := gob.NewDecoder(bytes.NewReader(good)).Decode(&valid); err != nil {
		t.Fatal(err)
	}
	mutated := func(f func(st *stateFile)) []byte {
		var st stateFile
		_ = gob.NewDecoder(bytes.NewReader(good)).Decode(&st)
		f(&st)
		return encode(st)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "decode state"},
		{"garbage", []byte("not a state file at all"), "decode state"},
		{"truncated", good[:len(good)/2], "decode state"},
		{"future version", encode(stateFile{Version: stateVersion + 1}), "state version 2"},
		{"no version", encode(stateFile{}), "state version 0"},
		{"segment out of range", mutated(func(st *stateFile) { st.Models[0].Points[3].Seg = 99 }), "segment 99 out of range"},
		{"time goes back", mutated(func(st *stateFile) { st.Models[0].Points[3].T = st.Models[0].Points[2].T }), "not after the previous point"},
		{"value vector misfits layout", mutated(func(st *stateFile) {
			p := &st.Models[0].Points[1]
			p.Vals = p.Vals[:5]
		}), "do not fit"},
		{"value decreases", mutated(func(st *stateFile) {
			ps := st.Models[0].Points
			last := len(ps) - 1
			ps[last].Vals[0] = -1
		}), "value 0 is -1"},
		{"tier order", mutated(func(st *stateFile) { st.Models[0].Points[0].Tier = 0 }), "tier 2 out of order"},
		{"duplicate model", mutated(func(st *stateFile) { st.Models[1].Name = st.Models[0].Name }), "listed twice"},
		{"point after state time", mutated(func(st *stateFile) { st.Now = 0 }), "after the state's time"},
		{"gauge integral", mutated(func(st *stateFile) { st.Models[0].Points[2].Gauges[0][1] = math.Inf(1) }), "gauge running aggregates"},
		{"family listed twice in a segment", mutated(func(st *stateFile) {
			sg := &st.Models[0].Segments[0]
			sg.Kinds, sg.Families, sg.Edges = append(sg.Kinds, sg.Kinds[0]), append(sg.Families, sg.Families[0]), append(sg.Edges, sg.Edges[0])
		}), "segment 0: family"},
		{"bad edges", mutated(func(st *stateFile) { st.Models[0].Segments[0].Edges[0] = []float64{1, 0} }), "invalid edges"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := stateHistory(t, 50)
			before := h.Len()
			err := h.UnmarshalBinary(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if h.Len() != before {
				t.Errorf("failed unmarshal changed the history: len %d, was %d", h.Len(), before)
			}
		})
	}
	// Every truncation and single-byte corruption: an error or a usable
	// history, never a panic.
	for i := 0; i < len(good); i += max(1, len(good)/300) {
		h := New(stateRetention)
		_ = h.UnmarshalBinary(good[:i])
		bad := slices.Clone(good)
		bad[i] ^= 0xa5
		if h.UnmarshalBinary(bad) == nil {
			for _, m := range h.Models() {
				h.Window(m, h.Newest(), time.Hour, Options{Warmup: time.Minute})
			}
		}
	}
}
