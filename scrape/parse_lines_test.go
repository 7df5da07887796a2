package scrape

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// checkEntryLines walks textparse over body as Parse does and checks that the
// line lineCounter gives each entry is where that entry is written: a sample
// line starts with the sample's series, a HELP, TYPE, UNIT or comment line
// with '#', and the numbers grow. It reports how many entries it checked.
// In OpenMetrics it stops at the first exemplar (see lineCounter).
func checkEntryLines(t *testing.T, body []byte, contentType string) int {
	t.Helper()
	if isProtobuf(contentType) {
		return 0 // Parse refuses it before parsing
	}
	p, _ := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
	if p == nil {
		return 0
	}
	_, openMetrics := p.(*textparse.OpenMetricsParser)
	lines := strings.Split(string(body), "\n")
	lc := newLineCounter(body, !openMetrics)
	prev, checked := 0, 0
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return checked
		}
		text := entryText(p, et)
		n := lc.entry(text)
		if n <= prev || n > len(lines) {
			t.Fatalf("entry %q numbered %d after %d, body has %d lines", text, n, prev, len(lines))
		}
		prev = n
		line := lines[n-1]
		if et != textparse.EntrySeries {
			if !strings.HasPrefix(strings.TrimLeft(line, " \t"), "#") {
				t.Fatalf("comment entry numbered %d, which is %q", n, line)
			}
			checked++
			continue
		}
		first, _, _ := strings.Cut(string(text), "\n")
		if !strings.HasPrefix(strings.TrimLeft(line, " \t"), strings.TrimLeft(first, " \t")) {
			t.Fatalf("series %q numbered %d, which is %q", text, n, line)
		}
		checked++
		if openMetrics && strings.Contains(line[len(first):], "#") {
			return checked
		}
	}
}

// TestLineCounterFollowsParser checks the numbering on every golden
// exposition and on bodies with blank and whitespace lines, comments, leading
// whitespace, raw line feeds inside quoted values and names, no final line
// feed, and OpenMetrics UNIT lines and exemplars.
func TestLineCounterFollowsParser(t *testing.T) {
	for _, tc := range expositions {
		t.Run(tc.file, func(t *testing.T) {
			body := readTestdata(t, tc.file)
			want := 0
			for _, l := range strings.Split(string(body), "\n") {
				if strings.TrimSpace(l) != "" && l != "# EOF" {
					want++
				}
			}
			if n := checkEntryLines(t, body, tc.contentType); n != want {
				t.Errorf("checked %d entries, want every one of the %d", n, want)
			}
		})
	}
	for _, tc := range []struct {
		name, body, contentType string
		entries                 int
	}{
		{"blank and whitespace lines", "\n\n# HELP a x\n  \t\n# TYPE a gauge\n\n   a{b=\"1\"} 1\n# just a comment\n#\n\t\na 2\n", ctText004, 6},
		{"raw line feed in a label value", "a{b=\"x\ny\"} 1\n\na{b=\"z\"} 2\n# TYPE c gauge\nc{d=\"1\n2\n3\"} 3\nc 4\n", ctText004, 5},
		{"raw line feed in a quoted name", "# TYPE \"we\nird\" gauge\n{\"we\nird\",b=\"1\"} 1\nc 2\n", ctText004, 3},
		{"no final line feed", "a 1\n\nb 2", ctText004, 2},
		{"openmetrics", "# HELP a_seconds x\n# TYPE a_seconds gauge\n# UNIT a_seconds seconds\na_seconds{b=\"1\"} 1\na_seconds{b=\"2\"} 2\n# EOF\n", ctOM, 5},
		{"openmetrics exemplar", "# TYPE a counter\na_total{b=\"1\"} 1 # {t=\"x\"} 1\na_created{b=\"1\"} 2\n# EOF\n", ctOM, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := checkEntryLines(t, []byte(tc.body), tc.contentType); n != tc.entries {
				t.Errorf("checked %d entries, want %d", n, tc.entries)
			}
		})
	}
}

// TestParseErrorLines checks the line of errors the parser itself reports,
// which is the line after the last entry (the next non-blank one in the text
// format, where blank lines are allowed).
func TestParseErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		line                    int
	}{
		{"after blank lines", "a 1\n\n  \n\nb{c=} 2\n", ctText004, 5},
		{"first line", "{{\n", ctText004, 1},
		{"after a raw line feed in a value", "a{b=\"x\ny\"} 1\nc d e\n", ctText004, 3},
		{"openmetrics blank line", "# TYPE a gauge\n\na 1\n# EOF\n", ctOM, 2},
		{"openmetrics without EOF", "# TYPE a gauge\na 1\n", ctOM, 3},
		{"openmetrics bad value", "# TYPE a gauge\na{b=\"1\"} 1\na{b=\"2\"} x\n# EOF\n", ctOM, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), tc.contentType, VLLM, scrapeTime)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Reason != ReasonInvalidExposition {
				t.Fatalf("err %v, want an invalid_exposition ParseError", err)
			}
			if pe.Line != tc.line {
				t.Errorf("line %d, want %d (%v)", pe.Line, tc.line, err)
			}
		})
	}
}
