package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckConfig runs check-config on the shipped example and on broken
// files: errors name the file, the line and the field, and exit 1.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	example := filepath.Join(moduleRoot, "config.example.yaml")
	if out, stderr, code := runCmd(t, 10*time.Second, "check-config", "--config.file="+example); code != 0 {
		t.Errorf("check-config %s: exit %d\nstdout: %s\nstderr: %s", example, code, out, stderr)
	}

	valid := "global:\n  scrape_interval: 15s\ntargets:\n  - name: a\n    url: http://127.0.0.1:8000/metrics\nslos:\n  - name: s\n    objectives: {ttft: 500ms}\n    goal: 0.99\n    period: 1d\n"
	dir := t.TempDir()
	writeFile(t, dir, "valid.yaml", valid)
	for _, c := range []struct {
		name, content string
		line          string // ":<line>:" expected after the file name
		field         string
	}{
		{"unknown-key", strings.Replace(valid, "  scrape_interval: 15s\n", "  scrape_interval: 15s\n  scrape_intervall: 10s\n", 1), ":3:", "scrape_intervall"},
		{"bad-duration", strings.Replace(valid, "15s", "15 seconds", 1), ":2:", "scrape_interval"},
		{"empty-targets", "global:\n  scrape_interval: 15s\ntargets: []\nslos: []\n", ":3:", "targets"},
		{"nested-unknown", strings.Replace(valid, "    goal: 0.99\n", "    goal: 0.99\n    gaol: 0.9\n", 1), ":10:", "gaol"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, dir, c.name+".yaml", c.content)
			_, stderr, code := runCmd(t, 10*time.Second, "check-config", "--config.file="+file)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, file+c.line) || !strings.Contains(stderr, c.field) {
				t.Errorf("stderr %q does not name %s%s and field %q", stderr, file, c.line, c.field)
			}
		})
	}
	file := filepath.Join(dir, "valid.yaml")
	if out, stderr, code := runCmd(t, 10*time.Second, "check-config", "--config.file="+file); code != 0 || !strings.Contains(out, "OK") {
		t.Errorf("valid file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
