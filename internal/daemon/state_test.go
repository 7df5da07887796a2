package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestUnusableStateMovedAside: a state file the daemon cannot use (a flipped
// byte, truncated, empty, garbage) is moved aside to <file>.corrupt-<time>
// before the first save writes, the log names where, and the save writes a
// fresh file beside it. (TestServerFailureStopsAll: a start that fails
// before saving leaves it where it is.)
func TestUnusableStateMovedAside(t *testing.T) {
	damages := map[string]func(good []byte) []byte{
		"flipped byte": func(good []byte) []byte {
			b := bytes.Clone(good)
			b[len(b)/2] ^= 0xff
			return b
		},
		"truncated": func(good []byte) []byte { return good[:len(good)/2] },
		"empty":     func([]byte) []byte { return []byte{} },
		"garbage":   func([]byte) []byte { return []byte("not a state file\n") },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newMemNet()
				a := serveTarget(t, n, "a")
				state := filepath.Join(t.TempDir(), "state")
				cfg := strings.Replace(testConfig([]string{"a " + a.url()}, "state_file: "+state+"\n"),
					"state_save_interval: 1h", "state_save_interval: 1m", 1)
				first := startRig(t, n, cfg)
				advance(2 * time.Minute)
				if err := first.stop(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				good, err := os.ReadFile(state)
				if err != nil {
					t.Fatal(err)
				}
				damaged := damage(good)
				if err := os.WriteFile(state, damaged, 0o600); err != nil {
					t.Fatal(err)
				}

				r := startRig(t, n, cfg)
				advance(time.Minute + time.Second) // one periodic save
				if err := r.stop(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				aside, _ := filepath.Glob(state + ".corrupt-*")
				if len(aside) != 1 {
					t.Fatalf("files set aside: %q, want one", aside)
				}
				kept, err := os.ReadFile(aside[0])
				if err != nil || !bytes.Equal(kept, damaged) {
					t.Errorf("%s does not hold the damaged file (%d bytes, err %v), want its %d bytes", aside[0], len(kept), err, len(damaged))
				}
				if countLines(r.log.String(), "unusable state file moved aside", "moved_to="+aside[0]) != 1 {
					t.Errorf("no log line names where the file went (%s):\n%s", aside[0], r.log)
				}
				if fresh, err := os.ReadFile(state); err != nil || bytes.Equal(fresh, damaged) {
					t.Errorf("no fresh state file written beside it (err %v)", err)
				}
			})
		})
	}
}

// TestFailingSaveLoggedOnce: a state save that fails at every interval
// (the directory is missing) is counted every time but logged once, and
// once more when saving works again.
func TestFailingSaveLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		dir := filepath.Join(t.TempDir(), "missing")
		cfg := strings.Replace(testConfig([]string{"a " + a.url()}, "state_file: "+filepath.Join(dir, "state")+"\n"),
			"state_save_interval: 1h", "state_save_interval: 1m", 1)
		r := startRig(t, n, cfg)
		advance(10*time.Minute + time.Second)
		if got := testutil.ToFloat64(r.d.state.failures); got != 10 {
			t.Errorf("%v failed saves counted in 10 minutes at 1m, want 10", got)
		}
		if got := countLines(r.log.String(), "state not saved"); got != 1 {
			t.Errorf("%d log lines for 10 failed saves, want 1:\n%s", got, r.log)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		advance(3 * time.Minute)
		if got := countLines(r.log.String(), "state saved again"); got != 1 {
			t.Errorf("%d 'saved again' lines after the directory appeared, want 1:\n%s", got, r.log)
		}
		if got := countLines(r.log.String(), "state not saved"); got != 1 {
			t.Errorf("%d 'not saved' lines in all, want 1", got)
		}
	})
}

// TestStartWithoutTargetKeepsItsHistory: a start whose configuration lacks a
// target keeps that target's saved history (retired, saved again with the
// state, named in the log), and a later start that configures it again
// carries on with it.
func TestStartWithoutTargetKeepsItsHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		b := serveTarget(t, n, "b")
		state := "state_file: " + filepath.Join(t.TempDir(), "state") + "\n"
		both := testConfig([]string{"a " + a.url(), "b " + b.url()}, state)
		first := startRig(t, n, both)
		advance(5 * time.Minute)
		startB := first.windowStart("b")
		if err := first.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}

		onlyA := startRig(t, n, testConfig([]string{"a " + a.url()}, state))
		advance(4 * time.Second)
		if err := onlyA.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if countLines(onlyA.log.String(), "saved targets absent from the configuration", "targets=[b]") != 1 {
			t.Errorf("the start without b does not say its history is kept:\n%s", onlyA.log)
		}

		again := startRig(t, n, both)
		if got := again.windowStart("b"); !got.Equal(startB) {
			t.Errorf("b's 1h window starts at %v after a start without it, want %v (its saved history)", got, startB)
		}
	})
}
