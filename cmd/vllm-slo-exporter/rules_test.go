package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRulesQueryOffset: the rules command writes --query-offset on every
// group, leaves the field out without it, and refuses a negative offset.
func TestRulesQueryOffset(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	const file = "../../config.example.yaml"
	var plain, offset bytes.Buffer
	if code := printRules(&plain, logger, file, 0); code != 0 {
		t.Fatalf("rules: exit %d", code)
	}
	if code := printRules(&offset, logger, file, 30*time.Second); code != 0 {
		t.Fatalf("rules --query-offset=30s: exit %d", code)
	}
	groups := strings.Count(plain.String(), "\n  - name: ")
	if strings.Contains(plain.String(), "query_offset") || groups == 0 {
		t.Errorf("without the flag: %d groups, query_offset written: %v", groups, strings.Contains(plain.String(), "query_offset"))
	}
	if got := strings.Count(offset.String(), "\n    query_offset: 30s\n"); got != groups {
		t.Errorf("with the flag: query_offset on %d of %d groups", got, groups)
	}
	if code := printRules(io.Discard, logger, file, -time.Second); code == 0 {
		t.Error("a negative offset was taken")
	}
}
