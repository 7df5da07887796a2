package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

var update = flag.Bool("update", false, "rewrite the recordings and golden files under testdata/")

// binary is the path of the vllm-slo-exporter built by TestMain.
var binary string

// moduleRoot is the directory holding go.mod.
var moduleRoot string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "vllm-slo-exporter-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	moduleRoot = root
	binary = filepath.Join(dir, "vllm-slo-exporter")
	build := exec.Command("go", "build", "-o", binary, "./cmd/vllm-slo-exporter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build the binary: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// proc is a running instance of the binary.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *testlog.Buffer
	done           chan struct{}
	exit           int // valid after done is closed
}

// start runs the binary with args; the test's cleanup kills it if it still runs.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.exit = 0
		if err != nil {
			p.exit = -1
			if ee, ok := err.(*exec.ExitError); ok {
				p.exit = ee.ExitCode()
			}
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(binary), tail(p.stderr.String(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// stop sends sig and waits up to timeout for the exit code.
func (p *proc) stop(t *testing.T, sig os.Signal, timeout time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
		return p.exit
	case <-time.After(timeout):
		t.Fatalf("process did not exit within %v after %v", timeout, sig)
		return -1
	}
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// runCmd runs the binary to completion (bounded by timeout) and returns its
// stdout, stderr and exit code.
func runCmd(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %v", args, timeout)
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		return out.String(), errb.String(), ee.ExitCode()
	}
	return out.String(), errb.String(), 0
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// waitFor polls cond every 50ms until it is true or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually(t, timeout, what, func() (string, bool) { return "", cond() })
}

// eventually polls check every 50ms until it holds or timeout passes; the
// failure then quotes what check said last.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (why string, ok bool)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		why, ok := check()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, why)
		case <-poll.C:
		}
	}
}

// waitReady polls base+"/-/ready" until it answers 200, failing early if the
// process exits.
func waitReady(t *testing.T, p *proc, client *http.Client, base string) {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	waitFor(t, 20*time.Second, base+"/-/ready", func() bool {
		if !p.running() {
			t.Fatalf("process exited with %d before ready; stderr:\n%s", p.exit, tail(p.stderr.String(), 4000))
		}
		resp, err := client.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// get fetches url and returns the status and body.
func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return path
}

// sigterm and friends keep the signal names short in tests.
var (
	sigterm = syscall.SIGTERM
	sighup  = syscall.SIGHUP
	sigint  = os.Interrupt
)

// contains reports whether s contains every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// readBody reads a response body into b.
func readBody(b *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(b, resp.Body)
}
