// Package recording takes, writes and reads timestamped scrapes of targets,
// so that replay and report run the daemon's pipeline over recorded data
// with recorded time.
//
// A recording is JSON Lines, one scrape per line: an object with "time"
// (RFC 3339 with nanoseconds), "target" (the configured target name), and
// either the response ("status", "content_type", "body": the exposition as
// served) or "error" (why the scrape failed; "status" too when an HTTP
// status arrived). Blank lines are allowed. A file whose name ends in ".gz"
// is gzip-compressed. Record is the one recording loop, used by the record
// command and by a live report.
//
// It never interprets the exposition bodies; that is package scrape's job.
package recording

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// MaxLineBytes bounds one recorded scrape, so a corrupt file cannot make the
// reader buffer without limit.
const MaxLineBytes = 64 << 20

// Entry is one recorded scrape of one target.
type Entry struct {
	// Time is when the scrape was taken.
	Time time.Time `json:"time"`
	// Target is the configured target name.
	Target string `json:"target"`
	// Status is the HTTP status code; 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// ContentType is the response's Content-Type; empty means Prometheus text 0.0.4.
	ContentType string `json:"content_type,omitempty"`
	// Body is the exposition text; empty for a failed scrape.
	Body string `json:"body,omitempty"`
	// Error describes a failed scrape; empty on success.
	Error string `json:"error,omitempty"`
}

// Validate reports whether the entry is usable.
func (e Entry) Validate() error {
	switch {
	case e.Time.IsZero():
		return errors.New(`missing "time"`)
	case e.Target == "":
		return errors.New(`missing "target"`)
	case e.Error == "" && e.Body == "" && e.Status == 0:
		// A scrape answered with an empty body has its status; only an
		// entry with nothing at all is meaningless.
		return errors.New(`neither "body", "status" nor "error"`)
	}
	return nil
}

// Writer appends entries to a recording.
type Writer struct {
	f   *os.File
	gz  *gzip.Writer
	buf *bufio.Writer
	enc *json.Encoder
}

// Create opens a new recording file, gzip-compressed when the name ends in ".gz".
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	w := &Writer{f: f}
	var out io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		w.gz = gzip.NewWriter(f)
		out = w.gz
	}
	w.buf = bufio.NewWriter(out)
	w.enc = json.NewEncoder(w.buf)
	w.enc.SetEscapeHTML(false)
	return w, nil
}

// Write appends one entry and flushes it through to the file, so that an
// interrupted recording keeps every complete scrape.
func (w *Writer) Write(e Entry) error {
	if err := w.enc.Encode(e); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return fmt.Errorf("write recording: %w", err)
		}
	}
	return nil
}

// Close finishes the file.
func (w *Writer) Close() error {
	if err := w.buf.Flush(); err != nil {
		w.f.Close()
		return fmt.Errorf("close recording: %w", err)
	}
	if w.gz != nil {
		if err := w.gz.Close(); err != nil {
			w.f.Close()
			return fmt.Errorf("close recording: %w", err)
		}
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return fmt.Errorf("close recording: %w", err)
	}
	return w.f.Close()
}

// Reader reads entries one at a time.
type Reader struct {
	name    string
	closers []io.Closer
	sc      *bufio.Scanner
	line    int
}

// Open opens a recording file for reading, gunzipping a ".gz" name.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	r := &Reader{name: path, closers: []io.Closer{f}}
	var in io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open recording %s: %w", path, err)
		}
		r.closers = append(r.closers, gz)
		in = gz
	}
	r.sc = newScanner(in)
	return r, nil
}

func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	return sc
}

// ErrMalformed marks a line that is not a valid entry; the reader can
// continue past it. Other errors (an unreadable file, a line over
// MaxLineBytes) end the reading.
var ErrMalformed = errors.New("malformed entry")

// Next returns the next entry, or io.EOF after the last one. Blank lines are
// skipped. A malformed line is an error wrapping ErrMalformed and naming the
// file and line; the reader can continue past it.
func (r *Reader) Next() (Entry, error) {
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return Entry{}, fmt.Errorf("%s:%d: %w: %w", r.name, r.line, ErrMalformed, err)
		}
		if err := e.Validate(); err != nil {
			return Entry{}, fmt.Errorf("%s:%d: %w: %w", r.name, r.line, ErrMalformed, err)
		}
		return e, nil
	}
	if err := r.sc.Err(); err != nil {
		return Entry{}, fmt.Errorf("%s:%d: %w", r.name, r.line+1, err)
	}
	return Entry{}, io.EOF
}

// Close releases the file.
func (r *Reader) Close() error {
	var first error
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Scan calls visit with every entry of a recording file, in order, without
// holding more than one in memory. A malformed line goes to skip, and the
// reading goes on; with a nil skip it ends the reading with its error. An
// error of visit ends the reading and is returned as it is.
func Scan(path string, visit func(Entry) error, skip func(error)) error {
	r, err := Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		e, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ErrMalformed) && skip != nil:
			skip(err)
		case err != nil:
			return err
		default:
			if err := visit(e); err != nil {
				return err
			}
		}
	}
}

// ReadAll reads every entry of a recording file. Malformed lines are errors.
func ReadAll(path string) ([]Entry, error) {
	var out []Entry
	err := Scan(path, func(e Entry) error {
		out = append(out, e)
		return nil
	}, nil)
	return out, err
}
