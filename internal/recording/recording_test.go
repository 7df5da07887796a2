package recording

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Date(2026, 11, 29, 8, 0, 0, 123456789, time.UTC)
			want := []Entry{
				{Time: t0, Target: "a", Status: 200, ContentType: "text/plain; version=0.0.4", Body: "x 1\n<script>\n"},
				{Time: t0.Add(15 * time.Second), Target: "a", Error: "connection refused"},
			}
			for _, e := range want {
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAll(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d", len(got), len(want))
			}
			for i := range want {
				if !got[i].Time.Equal(want[i].Time) || got[i].Body != want[i].Body || got[i].Error != want[i].Error ||
					got[i].ContentType != want[i].ContentType || got[i].Status != want[i].Status || got[i].Target != want[i].Target {
					t.Errorf("entry %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"not json", "{\"time\":\"2026-11-29T08:00:00Z\",\"target\":\"a\",\"body\":\"x 1\"}\nnope\n", "rec:2: malformed entry: invalid character"},
		{"no time", `{"target":"a","body":"x"}`, `rec:1: malformed entry: missing "time"`},
		{"no target", `{"time":"2026-11-29T08:00:00Z","body":"x"}`, `rec:1: malformed entry: missing "target"`},
		{"empty", `{"time":"2026-11-29T08:00:00Z","target":"a"}`, `rec:1: malformed entry: neither "body", "status" nor "error"`},
		{"bad time", `{"time":"yesterday","target":"a","body":"x"}`, `rec:1: malformed entry: parsing time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.input), "rec")
			var err error
			for err == nil {
				_, err = r.Next()
			}
			if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestOpenGzipThatLies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl.gz")
	if err := writeFile(path, "not gzip at all"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("want an error for a .gz file that is not gzip")
	}
}

func FuzzReader(f *testing.F) {
	f.Add(`{"time":"2026-11-29T08:00:00Z","target":"a","status":200,"body":"x 1"}`)
	f.Add(`{"time":"2026-11-29T08:00:00Z","target":"a","error":"timeout"}` + "\n\n{")
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader(strings.NewReader(s), "fuzz")
		for i := 0; i < 1000; i++ {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err == nil && e.Validate() != nil {
				t.Fatalf("Next returned an invalid entry %+v", e)
			}
		}
	})
}

// TestReaderContinuesPastMalformedLines: a bad line is ErrMalformed and the
// next good line is still read; an empty 200 body is a valid entry.
func TestReaderContinuesPastMalformedLines(t *testing.T) {
	in := "nope\n" + `{"time":"2026-11-29T08:00:00Z","target":"a","status":200}` + "\n"
	r := NewReader(strings.NewReader(in), "rec")
	if _, err := r.Next(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("first line: %v, want ErrMalformed", err)
	}
	e, err := r.Next()
	if err != nil || e.Status != 200 || e.Body != "" {
		t.Fatalf("second line: %+v, %v", e, err)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}

// NewReader reads a recording from r (uncompressed); name is used in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{name: name, sc: newScanner(r)}
}
