package daemon

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// countLines counts the log lines holding every one of subs.
func countLines(log string, subs ...string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// TestShutdownJoinsAndSavesOnce stops a daemon with SIGTERM: Run returns nil,
// the HTTP server has returned, no loop scrapes any more, a reload is
// refused, the state file is written exactly once (after the loops
// stopped, so it holds their last scrape), and the goroutines are back to
// what they were before the daemon started: its loops, actors and
// keep-alive connections are all gone, without waiting for the targets to
// close theirs.
func TestShutdownJoinsAndSavesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		state := filepath.Join(t.TempDir(), "state")
		synctest.Wait()
		goroutines := bubbleGoroutines()
		r := startRig(t, n, testConfig([]string{"a " + a.url()}, "state_file: "+state+"\n"))
		advance(5 * time.Minute)
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("state file written before the stop (save interval 1h): %v", err)
		}
		lastScrape := a.scrapedAt()[len(a.scrapedAt())-1]

		if err := r.stop(syscall.SIGTERM); err != nil {
			t.Fatalf("Run after SIGTERM: %v", err)
		}
		select {
		case <-r.served:
		default:
			t.Errorf("Run returned before the HTTP server")
		}
		r.web.CloseIdleConnections() // the test's own client to the daemon
		synctest.Wait()
		if got := bubbleGoroutines(); got != goroutines {
			t.Errorf("%d goroutines after Run returned, %d before the daemon started", got, goroutines)
		}
		if saves := testutil.ToFloat64(r.d.state.saves); saves != 1 {
			t.Errorf("state saved %v times, want 1", saves)
		}
		stoppedAt := time.Now()
		advance(time.Minute)
		if got := a.scrapedSince(stoppedAt); got != 0 {
			t.Errorf("target scraped %d times after Run returned", got)
		}
		if err := r.d.Reload(); !errors.Is(err, errShuttingDown) {
			t.Errorf("reload after the stop: %v, want %v", err, errShuttingDown)
		}

		data, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		p := pipeline.New(PipelineSpec(r.d.config.get()))
		section, _, _, _ := splitState(data) // the pipeline's section of the file
		if n, err := p.UnmarshalState(section); err != nil || n != 1 {
			t.Fatalf("state file restores %d targets (err %v), want 1", n, err)
		}
		tr := p.Evaluate(stoppedAt).Targets[0]
		if len(tr.Models) == 0 || len(tr.Models[0].Windows) == 0 {
			t.Fatalf("restored state has no window")
		}
		if got := tr.Models[0].Windows[0].Window.End; !got.Equal(lastScrape) {
			t.Errorf("saved state ends at the scrape of %v, want the last one at %v", got, lastScrape)
		}
	})
}

// TestStateCarriesOverRestart: a second daemon on the same state file
// carries on with the first one's history.
func TestStateCarriesOverRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		cfg := testConfig([]string{"a " + a.url()}, "state_file: "+filepath.Join(t.TempDir(), "state")+"\n")
		first := startRig(t, n, cfg)
		advance(5 * time.Minute)
		start := first.windowStart("a")
		if err := first.stop(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		second := startRig(t, n, cfg)
		if got := second.windowStart("a"); !got.Equal(start) {
			t.Errorf("after the restart the 1h window starts at %v, want %v (the first daemon's)", got, start)
		}
		if !strings.Contains(second.log.String(), "state restored") {
			t.Errorf("log does not say the state was restored:\n%s", second.log)
		}
	})
}

// TestPeriodicStateSave: the saver writes every state_save_interval, and Run
// once more at the end.
func TestPeriodicStateSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		cfg := strings.Replace(testConfig([]string{"a " + a.url()}, "state_file: "+filepath.Join(t.TempDir(), "state")+"\n"),
			"state_save_interval: 1h", "state_save_interval: 1m", 1)
		r := startRig(t, n, cfg)
		advance(3*time.Minute + time.Second)
		if saves := testutil.ToFloat64(r.d.state.saves); saves != 3 {
			t.Errorf("state saved %v times in 3 minutes at 1m, want 3", saves)
		}
		if err := r.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if saves, failures := testutil.ToFloat64(r.d.state.saves), testutil.ToFloat64(r.d.state.failures); saves != 4 || failures != 0 {
			t.Errorf("state saved %v times (%v failures) after the stop, want 4 (0)", saves, failures)
		}
	})
}

// TestServerFailureStopsAll: an HTTP server that cannot start (a port
// taken) stops every other actor, Run says why, and the state file (most
// likely the running daemon's) is left alone.
func TestServerFailureStopsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		dir := t.TempDir()
		file, state := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "state")
		if err := os.WriteFile(file, []byte(testConfig([]string{"a " + a.url()}, "state_file: "+state+"\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(state, []byte("the running daemon's state"), 0o600); err != nil {
			t.Fatal(err)
		}
		taken := errors.New("listen tcp :10042: bind: address already in use")
		d, err := New(Options{
			ConfigFile: file,
			Serve:      func(*http.Server) error { return taken },
			Signals:    make(chan os.Signal),
			Dial:       n.dial,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Run(context.Background()); !errors.Is(err, taken) {
			t.Errorf("Run = %v, want the server's error", err)
		}
		if data, err := os.ReadFile(state); err != nil || string(data) != "the running daemon's state" {
			t.Errorf("state file after a failed start: %q, %v; want it untouched", data, err)
		}
	})
}

// TestContextEndsRun: cancelling Run's context is a requested stop.
func TestContextEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		file := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(file, []byte(testConfig([]string{"a " + a.url()}, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		ln := n.listen("daemon:80")
		d, err := New(Options{ConfigFile: file, Serve: func(srv *http.Server) error { return srv.Serve(ln) }, Signals: make(chan os.Signal), Dial: n.dial})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() { result <- d.Run(ctx) }()
		advance(time.Minute)
		cancel()
		if err := <-result; err != nil {
			t.Errorf("Run after its context ended = %v, want nil", err)
		}
	})
}

// TestNewRefusesBadInput: a missing file or server is an error, not a panic.
func TestNewRefusesBadInput(t *testing.T) {
	serve := func(*http.Server) error { return nil }
	if _, err := New(Options{ConfigFile: filepath.Join(t.TempDir(), "absent.yaml"), Serve: serve}); err == nil || !strings.Contains(err.Error(), "load configuration") {
		t.Errorf("New with a missing file: %v, want a load error", err)
	}
	if _, err := New(Options{ConfigFile: "x.yaml"}); err == nil {
		t.Errorf("New without Serve: no error")
	}
}
