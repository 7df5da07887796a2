package daemon

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

// TestStaleTempsRemoved: the temporary files of saves killed mid-write (a
// minute old or more) are removed at start-up; a fresh one, which another
// daemon may be writing, the state file itself and files of other names are
// left.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.gob")
	now := time.Now()
	files := map[string]time.Duration{ // name -> age
		"state.gob":                 time.Hour,
		".state.gob.tmp-111":        time.Hour,
		".state.gob.tmp-222":        2 * time.Minute,
		".state.gob.tmp-333":        10 * time.Second,
		".other.gob.tmp-444":        time.Hour,
		"notes.txt":                 time.Hour,
		".state.gob.tmp-555-nested": time.Minute,
	}
	for name, age := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := removeStaleTemps(state, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{filepath.Join(dir, ".state.gob.tmp-111"), filepath.Join(dir, ".state.gob.tmp-222"), filepath.Join(dir, ".state.gob.tmp-555-nested")}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		gone := slices.Contains(want, filepath.Join(dir, name))
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, stat error %v", name, gone, err)
		}
	}
}

// TestStartupRemovesDebris: the daemon removes a stale temporary file at
// start-up and logs it.
func TestStartupRemovesDebris(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.gob")
	debris := filepath.Join(dir, ".state.gob.tmp-1234")
	if err := os.WriteFile(debris, make([]byte, 1<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(debris, old, old); err != nil {
		t.Fatal(err)
	}
	log := &testlog.Buffer{}
	d := newTestDaemon(t, testConfig([]string{"a http://a:80/metrics"}, "state_file: "+state+"\n"), log)
	d.loadState()
	if _, err := os.Stat(debris); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if got := countLines(log.String(), "removed temporary state files", ".state.gob.tmp-1234"); got != 1 {
		t.Errorf("%d log lines name the removed file, want 1:\n%s", got, log)
	}
}

// newTestDaemon builds a daemon on cfg, logging to log; it is not run.
func newTestDaemon(t *testing.T, cfg string, log *testlog.Buffer) *Daemon {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: file, Logger: slog.New(slog.NewTextHandler(log, nil)), Serve: func(*http.Server) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
