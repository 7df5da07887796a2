package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntaxErrorLine checks that a YAML syntax error is reported at the line
// where it is, not where yaml.v3 says (the start of the enclosing block, for
// parser errors one line early).
func TestSyntaxErrorLine(t *testing.T) {
	cases := []struct {
		name, doc string
		line      int
		msg       string
	}{
		{"key indented one space too little", "global:\n  scrape_interval: 15s\n windows: [1m]\n", 3, "did not find expected key"},
		{"key of a list item indented one space too much", "targets:\n  - name: a\n   url: http://x\n", 3, "did not find expected '-' indicator"},
		{"list item indented one space too much", "targets:\n- name: a\n  url: http://x\n - name: b\n", 4, "did not find expected key"},
		{"tab", "global:\n\tscrape_interval: 15s\n", 2, "a tab indents this line: YAML indents with spaces only (found character that cannot start any token)"},
		{"unclosed flow mapping", "slos:\n  - name: a\n    objectives: {ttft: 1s\n    goal: 0.9\n", 3, "did not find expected ',' or '}'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "c.yaml")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want a *config.Error", err)
			}
			if e.Line != c.line || e.Msg != c.msg {
				t.Errorf("got line %d %q, want line %d %q", e.Line, e.Msg, c.line, c.msg)
			}
		})
	}
}

// TestLoadMissingFileHint checks that a configuration file that does not
// exist gives the flag to name one and the example to start from.
func TestLoadMissingFileHint(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "config.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v, want one wrapping os.ErrNotExist", err)
	}
	for _, want := range []string{"--config.file=", ExampleFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", ExampleFile)); err != nil {
		t.Errorf("the hint names %s, which is not in the repository: %v", ExampleFile, err)
	}
}
