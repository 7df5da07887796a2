package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// fleetServer serves n simulated vLLM targets at /t/{i}/metrics and records
// when each was scraped. Targets share a few simulators (each target still
// gets its own history in the daemon), so the server's own cost stays small.
type fleetServer struct {
	mu    sync.Mutex
	times [][]time.Time
	sims  []*sim.Sim
}

func newFleetServer(n, sims int) (*fleetServer, error) {
	fs := &fleetServer{times: make([][]time.Time, n)}
	for i := range sims {
		cfg := bench.Realistic.SimConfig(uint64(i + 1))
		cfg.Start = time.Now().Add(-10 * time.Minute)
		s, err := sim.New(cfg)
		if err != nil {
			return nil, err
		}
		fs.sims = append(fs.sims, s)
	}
	return fs, nil
}

func (fs *fleetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "t" || parts[2] != "metrics" {
		http.NotFound(w, r)
		return
	}
	i, err := strconv.Atoi(parts[1])
	if err != nil || i < 0 || i >= len(fs.times) {
		http.NotFound(w, r)
		return
	}
	fs.mu.Lock()
	fs.times[i] = append(fs.times[i], now)
	fs.mu.Unlock()
	s := fs.sims[i%len(fs.sims)]
	s.AdvanceTo(now)
	body, ct := s.Exposition()
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(body)
}

// cpuTicks reads utime+stime of a process, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command: state is field 3; utime 14, stime 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return u + s, nil
}

const clockTicks = 100 // USER_HZ on Linux

// runFleet is the fleet measurement: a daemon binary scraping n simulated
// targets served by one process for --duration; it prints one table row of
// the daemon's CPU share and memory, the scrape schedule's lag and the
// /metrics render time and size.
func runFleet(args []string) error {
	fl := flag.NewFlagSet("fleet", flag.ContinueOnError)
	n := fl.Int("targets", 500, "simulated targets")
	dur := fl.Duration("duration", 5*time.Minute, "how long the daemon runs")
	warm := fl.Duration("warmup", time.Minute, "excluded from the CPU share")
	bin := fl.String("binary", "", "daemon binary (default: go build ./cmd/vllm-slo-exporter)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "perf-fleet")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		*bin = filepath.Join(dir, "vllm-slo-exporter")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/vllm-slo-exporter").CombinedOutput(); err != nil {
			return fmt.Errorf("build daemon: %v: %s", err, out)
		}
	}
	srv, err := newFleetServer(*n, 20)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Shutdown(context.Background())

	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(fleetConfig(*n, ln.Addr().String())), 0o600); err != nil {
		return err
	}
	cmd, daemonAddr, err := startDaemon(*bin, cfgFile)
	if err != nil {
		return err
	}
	pid := cmd.Process.Pid
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	start := time.Now()

	time.Sleep(*warm)
	t0, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	w0 := time.Now()
	renders, size, err := sampleMetrics(daemonAddr, start, *dur)
	if err != nil {
		return err
	}
	t1, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	share := float64(t1-t0) / clockTicks / time.Since(w0).Seconds()
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))

	early, late, gaps, scrapes := srv.lags(start, *dur)
	fmt.Printf("| targets | run | daemon CPU (share of one core) | daemon RSS | scrapes served | lag ms p50/p99/max, minute 1-2 | lag ms p50/p99/max, last minute | interval s min/max | /metrics render ms (median, max) | /metrics bytes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %s | %.3f | %s MiB | %d | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.3f / %.3f | %.0f, %.0f | %d |\n",
		*n, *dur, share, mb(bench.ProcStatusBytes(status, "VmRSS:")), scrapes,
		pct(early, 0.5), pct(early, 0.99), pct(early, 1), pct(late, 0.5), pct(late, 0.99), pct(late, 1),
		pct(gaps, 0), pct(gaps, 1), bench.Median(renders), pct(renders, 1), size)
	return nil
}

// fleetConfig is the daemon's configuration for n targets served at addr:
// the default windows and quantiles, one SLO and a GPU price.
func fleetConfig(n int, addr string) string {
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 15s\n  scrape_timeout: 10s\n  windows: [1m, 5m, 30m, 1h]\n  quantiles: [0.5, 0.9, 0.95, 0.99]\n")
	cfg.WriteString("slos:\n  - name: interactive\n    objectives: {ttft: 500ms, tpot: 50ms}\n    goal: 0.99\n    period: 30d\ncost:\n  gpu_hourly_cost: 2.0\n  currency: USD\ntargets:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: t%d\n    url: http://%s/t/%d/metrics\n", i, addr, i)
	}
	return cfg.String()
}

// startDaemon starts the daemon binary with cfgFile on a free loopback port
// and returns the process and its address.
func startDaemon(bin, cfgFile string) (*exec.Cmd, string, error) {
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	daemonAddr := dl.Addr().String()
	dl.Close()
	cmd := exec.Command(bin, "run", "--config.file="+cfgFile, "--web.listen-address="+daemonAddr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start daemon: %w", err)
	}
	return cmd, daemonAddr, nil
}

// sampleMetrics fetches the daemon's /metrics every 20 s until dur has
// passed since start, and returns each render's time in ms and the last
// body's size.
func sampleMetrics(daemonAddr string, start time.Time, dur time.Duration) ([]float64, int, error) {
	var renders []float64
	var size int
	for time.Since(start) < dur {
		time.Sleep(20 * time.Second)
		rs := time.Now()
		resp, err := http.Get("http://" + daemonAddr + "/metrics")
		if err != nil {
			return nil, 0, fmt.Errorf("daemon /metrics: %w", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, 0, err
		}
		renders = append(renders, time.Since(rs).Seconds()*1e3)
		size = len(b)
	}
	return renders, size, nil
}

// lags returns, over every target's scrapes, the lag in ms of scrape k
// behind the ideal schedule set by its first scheduled scrape (the loop
// scrapes once at start, then on a ticker after its offset), in the first
// two minutes after start and in the last minute of dur, every interval
// between consecutive scrapes in seconds, and the number of scrapes.
func (srv *fleetServer) lags(start time.Time, dur time.Duration) (early, late, gaps []float64, scrapes int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, ts := range srv.times {
		scrapes += len(ts)
		if len(ts) < 3 {
			continue
		}
		base := ts[1]
		for k := 2; k < len(ts); k++ {
			lag := ts[k].Sub(base).Seconds() - float64(k-1)*bench.Interval.Seconds()
			gaps = append(gaps, ts[k].Sub(ts[k-1]).Seconds())
			switch {
			case ts[k].Sub(start) < 2*time.Minute:
				early = append(early, lag*1e3)
			case ts[k].Sub(start) > dur-time.Minute:
				late = append(late, lag*1e3)
			}
		}
	}
	return early, late, gaps, scrapes
}

// pct is the p-quantile of xs by the index ⌊p·n⌋ (the largest for p = 1),
// 0 for no samples.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
