package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// Daemon timing used by every live test: short enough that windows fill
// within seconds.
const (
	liveInterval = 500 * time.Millisecond
	liveTimeout  = 500 * time.Millisecond // scrape_timeout in liveConfig
	liveTarget   = "a"
)

// simServer is a simulated vLLM served on loopback with the wall clock. It
// remembers the instant of every scrape it served, so a window reported by
// the daemon can be matched with the truth between two of those instants.
type simServer struct {
	sim *sim.Sim
	srv *httptest.Server

	mu       sync.Mutex
	instants []time.Time
}

// startSim serves a "steady" simulator (two engines, 5 requests/s) whose
// start is now; mod may change its configuration.
func startSim(t *testing.T, mod func(*sim.Config)) *simServer {
	t.Helper()
	cfg, err := sim.Preset("steady", 3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &simServer{sim: s}
	ss.srv = httptest.NewServer(s.Handler(func() time.Time {
		now := time.Now()
		ss.mu.Lock()
		ss.instants = append(ss.instants, now)
		ss.mu.Unlock()
		return now
	}))
	t.Cleanup(ss.srv.Close)
	return ss
}

// url is the simulator's /metrics URL.
func (ss *simServer) url() string { return ss.srv.URL + "/metrics" }

// scrapes returns the instants of the scrapes served so far.
func (ss *simServer) scrapes() []time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return slices.Clone(ss.instants)
}

// liveConfig is a daemon configuration for live tests; targets are
// name→URL pairs, extra is appended verbatim (state_file, …).
func liveConfig(goal string, targets [][2]string, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: 250ms
  state_save_interval: 1s
  windows: [2s, 5s, 1m]
  quantiles: [0.5, 0.9, 0.99]
targets:
`, liveInterval, liveTimeout)
	for _, t := range targets {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n", t[0], t[1])
	}
	fmt.Fprintf(&b, `slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: %s
    period: 1h
cost:
  gpu_hourly_cost: 2.0
  currency: USD
%s`, goal, extra)
	return b.String()
}

// daemon is a running `vllm-slo-exporter run`.
type daemon struct {
	*proc
	base   string // http://127.0.0.1:PORT
	config string // the configuration file
}

// startDaemon writes cfg to dir/config.yaml and runs the daemon on a free
// loopback port; it returns once /-/ready answers 200.
func startDaemon(t *testing.T, dir, cfg string, extra ...string) *daemon {
	t.Helper()
	file := writeFile(t, dir, "config.yaml", cfg)
	return runDaemonFile(t, file, extra...)
}

// runDaemonFile runs the daemon with an existing configuration file.
func runDaemonFile(t *testing.T, file string, extra ...string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"run", "--config.file=" + file, "--web.listen-address=" + addr}, extra...)
	d := &daemon{proc: start(t, args...), base: "http://" + addr, config: file}
	waitReady(t, d.proc, nil, d.base)
	return d
}

// metrics scrapes and parses the daemon's /metrics.
func (d *daemon) metrics(t *testing.T) series {
	t.Helper()
	code, body := get(t, nil, d.base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	return parseExposition(t, body)
}

// windowMatchesTruth reports whether the daemon's window (its e2e and TTFT
// request counts and generation token throughput) equals the truth between
// two scrape instants a_i < a_j. The daemon evaluates at its own times and
// timestamps its points itself, so which pair it used is unknown, but it must
// be one of them: counters are cumulative, so the data of a window (p0, p1]
// is exactly the truth between the two scrapes that produced p0 and p1.
//
// A point is stamped when its scrape starts and the simulator records its
// instant while serving that scrape, which ends within the scrape timeout or
// the point is dropped, so a distance between two points differs from the
// distance between their instants by at most ±timeout. The candidate pairs
// follow: a window younger than its length (coverage below 1) starts at the
// daemon's first point, span = coverage × length, so |a_j − a_i − span| ≤
// timeout; a full window's p0 is the last point at or before end − length,
// which failed scrapes push back by an interval each (up to three allowed),
// so its span is within [length, length + 4 intervals], ± timeout.
func windowMatchesTruth(ss series, target string, truth sim.Truth, instants []time.Time, model, window string, length, interval time.Duration) (string, bool) {
	base := map[string]string{"target": target, "model_name": model, "window": window}
	find := func(name string, kv ...string) (float64, bool) {
		f := ss.find(name, with(base, kv...))
		if len(f) != 1 {
			return 0, false
		}
		return f[0].value, true
	}
	e2e, ok1 := find("vllm_slo_window_requests", "metric", "e2e")
	ttft, ok2 := find("vllm_slo_window_requests", "metric", "ttft")
	tput, ok3 := find("vllm_slo_throughput_tokens_per_second", "kind", "generation")
	coverage, ok4 := find("vllm_slo_window_coverage_ratio")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fmt.Sprintf("window %s: series missing (e2e %v, ttft %v, throughput %v, coverage %v)", window, ok1, ok2, ok3, ok4), false
	}
	shortest, longest := length-liveTimeout, length+4*interval+liveTimeout
	if coverage < 1 {
		span := time.Duration(coverage * float64(length))
		shortest, longest = span-liveTimeout, span+liveTimeout
	}
	tried, countsMatched := 0, 0
	for j := len(instants) - 1; j > 0 && j >= len(instants)-40; j-- {
		for i := j - 1; i >= 0; i-- {
			d := instants[j].Sub(instants[i])
			if d > longest {
				break
			}
			if d < shortest {
				continue
			}
			tried++
			from, to := instants[i], instants[j]
			if float64(len(simtruth.FinishedIn(truth, from, to))) != e2e || float64(len(simtruth.FirstTokenIn(truth, from, to))) != ttft {
				continue
			}
			countsMatched++
			// Throughput is divided by the daemon's own span, the instants'
			// distance ± timeout (see above).
			tokens := float64(simtruth.TokensIn(truth, from, to))
			lo, hi := tput*(to.Sub(from)-liveTimeout).Seconds(), tput*(to.Sub(from)+liveTimeout).Seconds()
			if tokens >= lo-0.5 && tokens <= hi+0.5 {
				return "", true
			}
		}
	}
	return fmt.Sprintf("window %s: e2e %v, ttft %v, throughput %v match the truth between no pair of %d candidate scrapes (counts alone match %d)", window, e2e, ttft, tput, tried, countsMatched), false
}
