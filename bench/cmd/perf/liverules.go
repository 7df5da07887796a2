package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/alertquality"
)

// liveLevels are the hierarchy's levels in the live run: short, so that
// its windows (30s, 2m, 1h at a 1 s interval) read every level within
// minutes.
var liveLevels = []time.Duration{5 * time.Second, 20 * time.Second, time.Minute}

// liveConfig is the live run's SLO: TTFT ≤ 500 ms and TPOT ≤ 50 ms, 90%
// over an hour, one page over 2m and 30s, scraped and evaluated every
// second.
func liveConfig(target string) string {
	return "global:\n  scrape_interval: 1s\ntargets:\n  - name: live\n    url: " + target + "\n" +
		"slos:\n  - name: interactive\n    objectives: {ttft: 500ms, tpot: 50ms}\n    goal: 0.9\n    period: 1h\n" +
		"    alerts:\n      - {severity: page, long_window: 2m, short_window: 30s, budget_consumed: 0.5, for: 0s}\n"
}

// runLiveRules runs the generated rules live on both engines over the same
// scrapes: Prometheus scrapes a vLLM stand-in every second, evaluates the
// rules and remote-writes its scrapes into VictoriaMetrics, where vmalert
// evaluates the same rules continuously. The stand-in serves -requests
// requests a second for -active, 7 in 10 meeting TTFT, then nothing; once
// the 2m window holds the whole burst, each engine's windowed series must
// equal the burst's counts; the command prints each engine's values when it
// reached them (or its last, if it did not within -limit) and how long
// after the burst that was.
func runLiveRules(args []string) error {
	fl := flag.NewFlagSet("live-rules", flag.ContinueOnError)
	active := fl.Duration("active", 30*time.Second, "how long the stand-in serves requests")
	limit := fl.Duration("limit", 150*time.Second, "how long to wait for both engines to settle")
	flat := fl.Bool("flat", false, "the flat rules (no hierarchy)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "perf-live-rules")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	target, err := startStandIn(*active)
	if err != nil {
		return err
	}
	defer target.srv.Close()
	cfg, err := config.Parse([]byte(liveConfig(target.url)), "live.yaml")
	if err != nil {
		return err
	}
	opts := rules.Options{Levels: liveLevels}
	if *flat {
		opts = rules.Options{}
	}
	rf, err := opts.Generate(cfg)
	if err != nil {
		return err
	}
	text, err := rf.YAML()
	if err != nil {
		return err
	}
	ruleFile := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(ruleFile, text, 0o600); err != nil {
		return err
	}
	eng, err := startLiveEngines(dir, ruleFile, target.url)
	if err != nil {
		return err
	}
	defer eng.stop()
	want := target.totals()
	settled := map[string]time.Duration{}
	// seen holds each engine's values when it settled, or the latest.
	seen := map[string][2]float64{}
	err = eng.prom.WaitFor(*limit, "both engines settle on the burst's counts", func() (bool, error) {
		if !target.done() {
			return false, nil
		}
		now := map[string][2]float64{}
		for _, q := range liveQueries {
			p, errP := instant(eng.prom.URL, q.expr)
			v, errV := instant(eng.vm, q.expr)
			if errP != nil || errV != nil {
				return false, errors.Join(errP, errV)
			}
			now[q.name] = [2]float64{p, v}
		}
		for col, e := range []string{"Prometheus", "vmalert"} {
			if _, ok := settled[e]; ok {
				continue
			}
			for k, v := range now {
				s := seen[k]
				s[col] = v[col]
				seen[k] = s
			}
			if matches(now, want, col) {
				settled[e] = time.Since(target.end())
			}
		}
		return len(settled) == 2, nil
	})
	printLive(seen, want, settled)
	if err != nil {
		return fmt.Errorf("%w\nvmalert's log ends:\n%s", err, logTail(filepath.Join(dir, "vmalert.log")))
	}
	return nil
}

// logTail is the last lines of a log file, for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// liveQueries are the windowed series compared, on the 2m window (the
// hierarchy's: six of its 20 s level, with the 1 s interval).
var liveQueries = []struct{ name, expr string }{
	{"finished", `model_name:vllm_slo_finished_requests:increase2m{slo="interactive"}`},
	{"good lower", `model_name:vllm_slo_good_requests_lower:increase2m{slo="interactive",objective="all"}`},
	{"good upper", `model_name:vllm_slo_good_requests_upper:increase2m{slo="interactive",objective="all"}`},
	{"attainment lower", `model_name:vllm_slo_attainment_lower:ratio_rate2m{slo="interactive",objective="all"}`},
	{"attainment upper", `model_name:vllm_slo_attainment_upper:ratio_rate2m{slo="interactive",objective="all"}`},
	{"abandoned upper", `model_name:vllm_slo_abandoned_requests_upper:increase2m{slo="interactive"}`},
}

func matches(got, want map[string][2]float64, col int) bool {
	for k, w := range want {
		if v := got[k][col]; math.IsNaN(v) || math.Abs(v-w[0]) > 1e-9 {
			return false
		}
	}
	return true
}

func printLive(last, want map[string][2]float64, settled map[string]time.Duration) {
	fmt.Println("| 2m window | burst | Prometheus (live) | vmalert on VictoriaMetrics (live) |")
	fmt.Println("|---|---|---|---|")
	for _, q := range liveQueries {
		got, ok := last[q.name]
		if !ok {
			fmt.Printf("| %s | %g | – | – |\n", q.name, want[q.name][0])
			continue
		}
		fmt.Printf("| %s | %g | %g | %g |\n", q.name, want[q.name][0], got[0], got[1])
	}
	for _, e := range []string{"Prometheus", "vmalert"} {
		if d, ok := settled[e]; ok {
			fmt.Printf("%s settled %v after the burst ended\n", e, d.Round(time.Second))
		} else {
			fmt.Printf("%s did not settle\n", e)
		}
	}
}

// standIn is a vLLM stand-in whose counters grow at a fixed rate for
// active, from its third scrape on (so that the engines hold the counters'
// starting values), then stay.
type standIn struct {
	srv    *http.Server
	url    string
	active time.Duration
	mu     sync.Mutex
	scrape int
	start  time.Time
}

// standInRate is the stand-in's finished requests per second; 7 in 10 meet
// TTFT ≤ 500 ms, all TPOT ≤ 50 ms.
const standInRate = 10

func startStandIn(active time.Duration) (*standIn, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stand-in: %w", err)
	}
	s := &standIn{url: "http://" + l.Addr().String() + "/metrics", active: active}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(s.serve)}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// seconds is how many whole seconds of the burst have passed.
func (s *standIn) seconds() int {
	if s.start.IsZero() {
		return 0
	}
	return int(min(time.Since(s.start), s.active) / time.Second)
}

// end is when the burst ended (zero before it began).
func (s *standIn) end() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		return time.Time{}
	}
	return s.start.Add(s.active)
}

func (s *standIn) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.start.IsZero() && time.Since(s.start) > s.active+2*time.Second
}

func (s *standIn) serve(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.scrape++
	if s.scrape == 3 {
		s.start = time.Now()
	}
	n := s.seconds() * standInRate
	s.mu.Unlock()
	good := n * 7 / 10
	labels := `model_name="m",engine="0"`
	var b strings.Builder
	for _, row := range []struct {
		name string
		v    int
	}{
		{`vllm:time_to_first_token_seconds_bucket{` + labels + `,le="0.5"}`, good},
		{`vllm:time_to_first_token_seconds_bucket{` + labels + `,le="1.0"}`, n},
		{`vllm:time_to_first_token_seconds_bucket{` + labels + `,le="+Inf"}`, n},
		{`vllm:time_to_first_token_seconds_count{` + labels + `}`, n},
		{`vllm:request_time_per_output_token_seconds_bucket{` + labels + `,le="0.05"}`, n},
		{`vllm:request_time_per_output_token_seconds_bucket{` + labels + `,le="+Inf"}`, n},
		{`vllm:request_time_per_output_token_seconds_count{` + labels + `}`, n},
		{`vllm:e2e_request_latency_seconds_bucket{` + labels + `,le="+Inf"}`, n},
		{`vllm:e2e_request_latency_seconds_count{` + labels + `}`, n},
		{`vllm:num_requests_running{` + labels + `}`, 0},
		{`vllm:num_requests_waiting{` + labels + `}`, 0},
	} {
		b.WriteString(row.name + " " + strconv.Itoa(row.v) + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}

// totals are the burst's counts over a window that holds all of it, the
// truth both engines must reach: nothing is in flight at a scrape, so the
// bounds meet.
func (s *standIn) totals() map[string][2]float64 {
	n := float64(int(s.active/time.Second) * standInRate)
	good := float64(int(n) * 7 / 10)
	return map[string][2]float64{
		"finished": {n}, "good lower": {good}, "good upper": {good},
		"attainment lower": {good / n}, "attainment upper": {good / n}, "abandoned upper": {0},
	}
}

// liveEngines are the processes of the live run.
type liveEngines struct {
	vmProc, vmalert *alertquality.Process
	prom            *alertquality.Prometheus
	vm              string
	notifier        *http.Server
}

func (e *liveEngines) stop() {
	for _, p := range []*alertquality.Process{e.vmalert, e.prom.Process, e.vmProc} {
		if p != nil {
			p.Stop()
		}
	}
	_ = e.notifier.Close()
}

// startLiveEngines starts VictoriaMetrics, Prometheus scraping the target
// every second with the rules and remote-writing to VictoriaMetrics, and
// vmalert evaluating the rules every second against VictoriaMetrics.
func startLiveEngines(dir, ruleFile, target string) (*liveEngines, error) {
	e := &liveEngines{}
	var err error
	if e.notifier, err = blackhole(); err != nil {
		return nil, err
	}
	addr, err := alertquality.Loopback()
	if err != nil {
		return nil, err
	}
	// Data points become visible at once (-search.latencyOffset=0s): vmalert
	// evaluates every second on samples written a moment before.
	e.vmProc, err = alertquality.StartProcess(filepath.Join(dir, "victoria-metrics.log"), "victoria-metrics",
		"-storageDataPath="+filepath.Join(dir, "vm"), "-httpListenAddr="+addr, "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=WARN")
	if err != nil {
		return nil, err
	}
	e.vm = "http://" + addr
	if err := e.vmProc.WaitFor(time.Minute, "victoria-metrics healthy", func() (bool, error) { return alertquality.HTTPOK(e.vm + "/health"), nil }); err != nil {
		e.vmProc.Stop()
		return nil, err
	}
	// Prometheus forwards its scrapes only: its own recordings would mix
	// with vmalert's under the same names.
	u, _ := url.Parse(target)
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%q]\n"+
		"scrape_configs:\n  - job_name: vllm\n    static_configs: [{targets: [%q]}]\n"+
		"remote_write:\n  - url: %q\n    queue_config: {batch_send_deadline: 200ms}\n"+
		"    write_relabel_configs: [{source_labels: [__name__], regex: '(model_name|slo_objective|slo_window):.*|ALERTS.*', action: drop}]\n", ruleFile, u.Host, e.vm+"/api/v1/write")
	data := filepath.Join(dir, "prometheus-data")
	if e.prom, err = alertquality.StartPrometheusOn(dir, data, promCfg, time.Minute); err != nil {
		e.vmProc.Stop()
		return nil, err
	}
	alertAddr, err := alertquality.Loopback()
	if err != nil {
		e.stop()
		return nil, err
	}
	e.vmalert, err = alertquality.StartProcess(filepath.Join(dir, "vmalert.log"), "vmalert", "-rule="+ruleFile,
		"-datasource.url="+e.vm, "-remoteWrite.url="+e.vm, "-notifier.url=http://"+e.notifier.Addr,
		"-evaluationInterval=1s", "-datasource.queryStep=1s", "-disableAlertgroupLabel", "-httpListenAddr="+alertAddr)
	if err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// instant runs an instant query now and returns its one value (NaN when
// it returns none).
func instant(base, expr string) (float64, error) {
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := queryAPI(base, url.Values{"query": {expr}}, &data); err != nil {
		return 0, err
	}
	switch len(data.Result) {
	case 0:
		return math.NaN(), nil
	case 1:
	default:
		return 0, fmt.Errorf("query %s: %d series, want 1", expr, len(data.Result))
	}
	str, _ := data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return 0, fmt.Errorf("query %s: value %q: %w", expr, str, err)
	}
	return v, nil
}
