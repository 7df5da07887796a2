package alertquality

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Process is a server this package (or a benchmark) started on 127.0.0.1:
// Prometheus, VictoriaMetrics, vmalert. Exited is closed once it has exited,
// with Err its exit.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// StartProcess starts name with args, its output to the file log.
func StartProcess(log, name string, args ...string) (*Process, error) {
	lf, err := os.Create(log)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	return p, nil
}

// Stop interrupts the process and waits for it, killing it after 30 s.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// WaitFor calls cond every 100 ms until it holds or fails, the process
// exits or limit passes; what names the wait in its error.
func (p *Process) WaitFor(limit time.Duration, what string, cond func() (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s: %s exited: %v", what, p.cmd.Path, p.err)
		case <-deadline:
			return fmt.Errorf("%s: not within %v", what, limit)
		case <-tick.C:
		}
	}
}

// Loopback is a free address on 127.0.0.1.
func Loopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// StartPrometheusOn starts Debian's prometheus on the TSDB under data with
// the configuration text config (written under dir), listening on
// 127.0.0.1, and waits up to ready for it to answer /-/ready (a large
// backfilled TSDB takes minutes to open). Queries may run 10 minutes
// instead of Prometheus's default 2: the harness's inlined rules over a
// 3-day window evaluate every per-interval rule at each of the window's
// 17,280 steps, which on a shared, loaded machine overran 2 minutes.
func StartPrometheusOn(dir, data, config string, ready time.Duration) (*Prometheus, error) {
	return StartPrometheusBinary("prometheus", dir, data, config, ready)
}

// StartPrometheusBinary is StartPrometheusOn with the server's binary
// named: Debian's prometheus (2.x) or prometheus3, which
// scripts/install-test-deps.sh builds; both take the same flags.
func StartPrometheusBinary(bin, dir, data, config string, ready time.Duration) (*Prometheus, error) {
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}
	addr, err := Loopback()
	if err != nil {
		return nil, err
	}
	proc, err := StartProcess(filepath.Join(dir, "prometheus.log"), bin, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=100y", "--query.timeout=10m", "--web.listen-address="+addr)
	if err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + addr, Process: proc}
	if err := proc.WaitFor(ready, "prometheus ready", func() (bool, error) { return HTTPOK(p.URL + "/-/ready"), nil }); err != nil {
		proc.Stop()
		return nil, err
	}
	return p, nil
}

// HTTPOK reports whether a GET of u answers 200.
func HTTPOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
