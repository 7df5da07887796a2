package alertquality

import (
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// The live runs: two simulated vLLM servers scraped and the rules evaluated
// every second, healthy, then overloaded (TTFT breaks), then draining.
const (
	liveInterval = time.Second
	// liveOffset is the rule groups' query_offset (rules.Options.QueryOffset):
	// longer than the scrape timeout (900ms), so that every scrape stamped
	// at or before an evaluation's time is stored by then (checked:
	// scrape_duration_seconds, which counts the scrape and its append).
	liveOffset = 2 * time.Second
	// liveFor is how long the servers are scraped before the comparison:
	// the healthy start, the overload and 20 s of its drain, so that the
	// 20s window crosses both edges and the 1m window holds all of it.
	liveFor = 50 * time.Second
	// thanosInterval is the interval of the run under Thanos's ruler, whose
	// every rule is a query over HTTP to the querier and on through gRPC:
	// the SLO group must finish within it, or the ruler skips evaluations
	// and the per-interval ledger loses their intervals.
	thanosInterval = 2 * time.Second
)

// liveModels are the two servers' models: server a writes its bucket edges
// as Python's client does (le="1.0"), server b as Go's (le="1");
// Prometheus 3 stores both as le="1.0" (it normalises `le` to the float
// form at ingestion), Prometheus 2 as sent.
var liveModels = []struct {
	target, model string
	style         sim.Style
}{
	{"a", "tiny-a", sim.Style{}},
	{"b", "tiny-b", sim.Style{IntegerLE: true}},
}

// liveExporterConfig is the configuration the rules are generated from and
// the daemon's pipeline runs: the two servers, and an SLO whose TTFT
// threshold is an integral bucket edge (1s), where the two spellings of
// `le` differ.
func liveExporterConfig(addrs []string, interval time.Duration) string {
	return fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: 900ms
  windows: [20s, 1m]
targets:
  - name: a
    url: http://%s/metrics
  - name: b
    url: http://%s/metrics
slos:
  - name: interactive
    objectives: {ttft: 1s, tpot: 50ms}
    goal: 0.95
    period: 1h
    alerts:
      - {severity: page, long_window: 1m, short_window: 20s, budget_consumed: 0.1, for: 3s}
`, model.Duration(interval), addrs[0], addrs[1])
}

// liveSimConfig is a small engine (~23 requests/s) at 15/s, 30/s from 15 s
// to 30 s (a queue builds and TTFT breaks), then 15/s (the queue drains).
func liveSimConfig(seed uint64, modelName string, start time.Time) sim.Config {
	return sim.Config{Seed: seed, Start: start, DiscardTruth: true, Models: []sim.ModelConfig{{
		Name: modelName, Engines: 1,
		Workload: sim.Workload{
			Phases: []sim.Phase{
				{Duration: 15 * time.Second, Kind: sim.Poisson, Rate: 15},
				{Duration: 15 * time.Second, Kind: sim.Poisson, Rate: 30},
				{Kind: sim.Poisson, Rate: 15},
			},
			Prompt:          sim.LengthDist{Median: 200, Sigma: 0.5, Min: 10, Max: 1000},
			Output:          sim.LengthDist{Median: 20, Sigma: 0.5, Min: 2, Max: 100},
			StopProbability: 0.9,
		},
		Engine: sim.EngineParams{MaxNumSeqs: 8, MaxBatchedTokens: 8192, KVCapacityTokens: 100000,
			StepBase: 10 * time.Millisecond, DecodePerSeq: 500 * time.Microsecond, PrefillPerToken: 20 * time.Microsecond},
		MaxModelLen: 4096,
	}}}
}

// liveTarget serves one simulated vLLM on 127.0.0.1, advanced to the wall
// clock at each scrape, and keeps every exposition it served, in order.
// Until it is opened (open) it answers 503: the engine's scrapes fail and
// store no vLLM series, so the run begins when the engine is ready.
type liveTarget struct {
	srv   *httptest.Server
	style sim.Style
	mu    sync.Mutex
	sim   *sim.Sim // nil until opened
	// served are the expositions, one per scrape, and when each was
	// served; their times are the engine's (stampScrapes).
	served   []Scrape
	servedAt []time.Time
}

func startLiveTarget(style sim.Style) *liveTarget {
	lt := &liveTarget{style: style}
	lt.srv = httptest.NewServer(lt)
	return lt
}

// open starts the simulated server at cfg.Start.
func (lt *liveTarget) open(cfg sim.Config) error {
	s, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("live target: %w", err)
	}
	lt.mu.Lock()
	lt.sim = s
	lt.mu.Unlock()
	return nil
}

func (lt *liveTarget) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	lt.mu.Lock()
	if lt.sim == nil {
		lt.mu.Unlock()
		http.Error(w, "not started", http.StatusServiceUnavailable)
		return
	}
	lt.sim.AdvanceTo(time.Now())
	body, ct := lt.sim.ExpositionStyle(lt.style)
	lt.served = append(lt.served, Scrape{Body: body, ContentType: ct})
	lt.servedAt = append(lt.servedAt, time.Now())
	lt.mu.Unlock()
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(body)
}

// scrapes are the expositions served so far and when.
func (lt *liveTarget) scrapes() ([]Scrape, []time.Time) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return slices.Clone(lt.served), slices.Clone(lt.servedAt)
}

// liveFleet is the two servers and the configuration generated for them.
type liveFleet struct {
	// begin is when the servers were opened: the simulations' start.
	begin time.Time
	// interval is the servers' scrape interval and the SLO group's.
	interval time.Duration
	targets  []*liveTarget
	cfg      *config.Config
	// rules is the rule file with query_offset liveOffset on every group.
	rules string
	// logf is the test's log.
	logf func(format string, args ...any)
}

// startLiveFleet starts the two servers, closed (open starts them),
// scraped every interval, and writes the rule file under dir.
func startLiveFleet(t *testing.T, dir string, interval time.Duration) *liveFleet {
	t.Helper()
	f := &liveFleet{interval: interval, logf: t.Logf}
	var addrs []string
	for _, m := range liveModels {
		lt := startLiveTarget(m.style)
		t.Cleanup(lt.srv.Close)
		f.targets = append(f.targets, lt)
		addrs = append(addrs, lt.srv.Listener.Addr().String())
	}
	cfg, err := config.Parse([]byte(liveExporterConfig(addrs, interval)), "live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	opts := rules.DefaultOptions()
	opts.QueryOffset = liveOffset
	rf, err := opts.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text, err := rf.YAML()
	if err != nil {
		t.Fatal(err)
	}
	f.rules = filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(f.rules, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// open starts both simulations now; the run's clock (begin, liveFor)
// starts with them.
func (f *liveFleet) open(t *testing.T) {
	t.Helper()
	f.begin = time.Now()
	for i, m := range liveModels {
		if err := f.targets[i].open(liveSimConfig(uint64(i+1), m.model, f.begin)); err != nil {
			t.Fatal(err)
		}
	}
}

// scrapeConfig is a Prometheus configuration scraping the two servers
// every interval, with the rule file when withRules, and extra global
// settings (indented two spaces).
func (f *liveFleet) scrapeConfig(withRules bool, global string) string {
	c := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: 900ms\n  evaluation_interval: %[1]s\n", model.Duration(f.interval)) + global
	if withRules {
		c += fmt.Sprintf("rule_files: [%q]\n", f.rules)
	}
	c += "scrape_configs:\n"
	for i, m := range liveModels {
		c += fmt.Sprintf("  - job_name: %s\n    static_configs: [{targets: [%q]}]\n", m.target, f.targets[i].srv.Listener.Addr().String())
	}
	return c
}

// engineBinary is the path of an engine's binary: on PATH, or in GOPATH/bin
// where go install puts prometheus3 and thanos; "" when
// neither has it.
func engineBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	return ""
}

// rawSamples runs an instant query at `at` whose result is a matrix (a
// range selector) against the HTTP API at base and returns its series: the
// labels and the raw samples, by Unix millisecond.
func rawSamples(base, expr string, at time.Time) ([]map[string]string, []map[int64]float64, error) {
	form := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := http.PostForm(base+"/api/v1/query", form)
	if err != nil {
		return nil, nil, fmt.Errorf("query %s: %w", expr, err)
	}
	defer resp.Body.Close()
	var qr queryResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&qr); err != nil {
		return nil, nil, fmt.Errorf("query %s: decode: %w", expr, err)
	}
	if qr.Status != "success" {
		return nil, nil, fmt.Errorf("query %s: %s", expr, qr.Error)
	}
	var labels []map[string]string
	var values []map[int64]float64
	for _, r := range qr.Data.Result {
		vs := map[int64]float64{}
		for _, v := range r.Values {
			ts, ok := v[0].(float64)
			s, ok2 := v[1].(string)
			if !ok || !ok2 {
				return nil, nil, fmt.Errorf("query %s: sample %v", expr, v)
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("query %s: value %q: %w", expr, s, err)
			}
			vs[int64(math.Round(ts*1000))] = f
		}
		labels = append(labels, r.Metric)
		values = append(values, vs)
	}
	return labels, values, nil
}

// stampScrapes gives each server's served expositions the times the
// engine stamped its successful scrapes with (its `up` samples up to
// `until` that are 1): a scrape stamped t got the first exposition served
// after t and within the scrape timeout; a failed scrape (up 0: timed out,
// its exposition perhaps served too late) is left out, as the engine
// stored nothing of it.
func (f *liveFleet) stampScrapes(base string, until time.Time) (map[string][]Scrape, error) {
	out := map[string][]Scrape{}
	for i, m := range liveModels {
		_, ups, err := rawSamples(base, fmt.Sprintf("up{job=%q}[%ds]", m.target, int(until.Sub(f.begin).Seconds())+5), until)
		if err != nil {
			return nil, err
		}
		if len(ups) != 1 {
			return nil, fmt.Errorf("server %s: %d up series", m.target, len(ups))
		}
		served, servedAt := f.targets[i].scrapes()
		failed := 0
		for _, ms := range slices.Sorted(maps.Keys(ups[0])) {
			at := time.UnixMilli(ms)
			if ups[0][ms] != 1 {
				if !at.Before(f.begin) { // before, the server was not open yet (503)
					failed++
				}
				continue
			}
			j, _ := slices.BinarySearchFunc(servedAt, at, time.Time.Compare)
			if j == len(served) || servedAt[j].Sub(at) >= f.interval {
				return nil, fmt.Errorf("server %s: no exposition served for the scrape at %v", m.target, at)
			}
			s := served[j]
			s.At, s.Taken, s.Offset = at, at, at.Sub(f.begin)
			out[m.target] = append(out[m.target], s)
		}
		if failed > 0 {
			f.logf("server %s: %d of %d scrapes failed (left out)", m.target, failed, len(ups[0]))
		}
	}
	return out, nil
}

// daemonChecks feeds the daemon's pipeline the expositions the engine
// scraped, each at the time the engine stamped it, and evaluates it at
// each of the rules' evaluation times (after the scrapes stamped up to
// it), returning the page's burn check per evaluation (Unix ms) and model.
func daemonChecks(cfg *config.Config, scrapes map[string][]Scrape, evals []int64) (map[int64]map[string]pipeline.BurnCheck, error) {
	type stamped struct {
		target string
		s      Scrape
	}
	var all []stamped
	for target, ss := range scrapes {
		for _, s := range ss {
			all = append(all, stamped{target, s})
		}
	}
	slices.SortFunc(all, func(a, b stamped) int { return a.s.Taken.Compare(b.s.Taken) })
	p := pipeline.New(daemon.PipelineSpec(cfg))
	out := map[int64]map[string]pipeline.BurnCheck{}
	next := 0
	for _, ms := range evals {
		at := time.UnixMilli(ms)
		for ; next < len(all) && !all[next].s.Taken.After(at); next++ {
			sc := all[next]
			snap, err := scrape.Parse(sc.s.Body, sc.s.ContentType, scrape.VLLM, sc.s.Taken)
			if err != nil {
				return nil, fmt.Errorf("parse %s at %v: %w", sc.target, sc.s.Taken, err)
			}
			if err := p.Ingest(sc.target, snap, 0); err != nil {
				return nil, fmt.Errorf("ingest %s at %v: %w", sc.target, sc.s.Taken, err)
			}
		}
		checks := map[string]pipeline.BurnCheck{}
		for _, tr := range p.Evaluate(at).Targets {
			for _, m := range tr.Models {
				if len(m.Burns) > 0 {
					checks[m.Name] = m.Burns[0]
				}
			}
		}
		out[ms] = checks
	}
	return out, nil
}

// liveRecorded reads a recorded series per model from the engine at base,
// its raw samples up to until.
func (f *liveFleet) liveRecorded(base, sel string, until time.Time) (map[string]map[int64]float64, error) {
	ls, vs, err := rawSamples(base, fmt.Sprintf("%s[%ds]", sel, int(until.Sub(f.begin).Seconds())+5), until)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int64]float64{}
	for i, l := range ls {
		if _, dup := out[l["model_name"]]; dup {
			return nil, fmt.Errorf("%s: two series of model %q", sel, l["model_name"])
		}
		out[l["model_name"]] = vs[i]
	}
	return out, nil
}

// evaluations are the times the rules evaluated at (less the offset):
// those of the SLO group's latest running gauge, which it records at every
// evaluation once a model has been scraped.
func (f *liveFleet) evaluations(base string, until time.Time) ([]int64, error) {
	rec, err := f.liveRecorded(base, `model_name:vllm_slo_gauge_latest:sum{slo="interactive",vllm_slo_gauge="vllm:num_requests_running"}`, until)
	if err != nil {
		return nil, err
	}
	var evals []int64
	for _, vs := range rec {
		evals = append(evals, slices.Collect(maps.Keys(vs))...)
	}
	slices.Sort(evals)
	return slices.Compact(evals), nil
}

// liveWindows are the page's windows, long then short.
var liveWindows = []time.Duration{time.Minute, 20 * time.Second}

// compareLive checks, at every evaluation of the rules up to until where
// the daemon's burn check is known, that the rules' observed burn rate
// over both of the page's windows is the daemon's (1e-9 relative, as
// TestRulesEvidenceIsTheDaemons) and that the two brackets on the joint
// attainment overlap (as TestRulesBoundsHoldDaemonAndTruth), for both
// servers' models. rulesAt serves the recorded series, scrapesAt the
// scraped ones (the same Prometheus, or the one under Thanos's ruler).
func compareLive(t *testing.T, f *liveFleet, rulesAt, scrapesAt string, until time.Time) {
	t.Helper()
	scrapes, err := f.stampScrapes(scrapesAt, until)
	if err != nil {
		t.Fatal(err)
	}
	longest, err := instantValues(scrapesAt, fmt.Sprintf("max(max_over_time(scrape_duration_seconds[%ds]))", int(until.Sub(f.begin).Seconds())+5), until)
	if err != nil {
		t.Fatal(err)
	}
	if len(longest) != 1 || longest[0] >= liveOffset.Seconds() {
		t.Fatalf("longest scrape %v s, not under the query offset %v: an evaluation could miss a scrape stamped before it", longest, liveOffset)
	}
	evals, err := f.evaluations(rulesAt, until)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := daemonChecks(f.cfg, scrapes, evals)
	if err != nil {
		t.Fatal(err)
	}
	// The engine's evaluations, led by the first scrape: where the engine
	// began evaluating more than an interval after it (a rule manager
	// started after the servers were open), the windows reaching back
	// before its first evaluation lack the intervals it never saw, as
	// after a skipped one.
	first := until.UnixMilli()
	for _, ss := range scrapes {
		if len(ss) > 0 {
			first = min(first, ss[0].At.UnixMilli())
		}
	}
	ran := append([]int64{first}, evals...)
	goal := f.cfg.SLOs[0].Goal
	for wi, w := range liveWindows {
		read := func(prefix string, objective bool) map[string]map[int64]float64 {
			sel := fmt.Sprintf("%s%s{slo=%q}", prefix, model.Duration(w), "interactive")
			if objective {
				sel = fmt.Sprintf("%s%s{slo=%q,objective=%q}", prefix, model.Duration(w), "interactive", "all")
			}
			rec, err := f.liveRecorded(rulesAt, sel, until)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		obs := read("model_name:vllm_slo_burn_rate_observed:ratio_rate", false)
		lo, hi := read("model_name:vllm_slo_attainment_lower:ratio_rate", true), read("model_name:vllm_slo_attainment_upper:ratio_rate", true)
		for _, m := range liveModels {
			compared, partial := 0, 0
			for _, ms := range evals {
				c, ok := checks[ms][m.model]
				if !ok || !c.Known {
					continue
				}
				if missedWithin(ran, ms, w, f.interval) {
					partial++
					continue
				}
				ev, b := c.LongEvidence, c.Long
				if wi == 1 {
					ev, b = c.ShortEvidence, c.Short
				}
				at := time.UnixMilli(ms).Sub(f.begin)
				r, ok := obs[m.model][ms]
				if !ok {
					t.Errorf("%s %s at %v: the daemon observes %v, the rules record nothing", m.model, model.Duration(w), at, ev.Observed)
					continue
				}
				compared++
				if math.Abs(r-ev.Observed) > 1e-9*math.Max(1, math.Abs(ev.Observed)) {
					t.Errorf("%s %s at %v: observed burn rate %v in the daemon, %v in the rules", m.model, model.Duration(w), at, ev.Observed, r)
				}
				l, okL := lo[m.model][ms]
				h, okH := hi[m.model][ms]
				daemonLo, daemonHi := 1-b.Upper*(1-goal), 1-b.Lower*(1-goal)
				if okL && okH && max(l, daemonLo) > min(h, daemonHi)+1e-9 {
					t.Errorf("%s %s at %v: the daemon's [%v, %v] and the rules' [%v, %v] do not overlap", m.model, model.Duration(w), at, daemonLo, daemonHi, l, h)
				}
			}
			if least := int(20 * time.Second / f.interval); compared < least {
				t.Errorf("%s %s: %d evaluations compared, want at least %d", m.model, model.Duration(w), compared, least)
			}
			t.Logf("%s %s: the observed burn rate equal at %d evaluations (of %d; %d left out, their window missing an evaluation the engine skipped or never ran)",
				m.model, model.Duration(w), compared, len(evals), partial)
		}
	}
}

// missedWithin reports whether the engine skipped an evaluation whose
// interval the window w ending at the evaluation at ms reads: an
// evaluation after a gap longer than the interval recorded only its own
// interval's change (latest now minus latest one interval ago), so the
// changes in the gap are in no per-interval sample, on the engine's side
// only; a window whose sum reaches that evaluation lacks them.
func missedWithin(evals []int64, ms int64, w, interval time.Duration) bool {
	from := ms - (w + interval).Milliseconds()
	for i := 1; i < len(evals) && evals[i] <= ms; i++ {
		if evals[i] > from && evals[i]-evals[i-1] > interval.Milliseconds()*3/2 {
			return true
		}
	}
	return false
}

// instantValues runs an instant query at `at` and returns its values.
func instantValues(base, expr string, at time.Time) ([]float64, error) {
	form := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := http.PostForm(base+"/api/v1/query", form)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	defer resp.Body.Close()
	var qr struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&qr); err != nil {
		return nil, fmt.Errorf("query %s: decode: %w", expr, err)
	}
	if qr.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, qr.Error)
	}
	var out []float64
	for _, r := range qr.Data.Result {
		s, ok := r.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("query %s: value %v", expr, r.Value)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %q: %w", expr, s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// needEngine returns an engine's binary (engineBinary). A missing binary
// skips the test, except under CI=true, where it fails it:
// scripts/install-test-deps.sh (make deps) builds prometheus3 every time,
// so in CI its absence is a broken install, not a choice.
func needEngine(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs engines live for most of a minute; not with -short")
	}
	p := engineBinary(name)
	if p == "" {
		msg := fmt.Sprintf("%s not on PATH nor in GOPATH/bin: scripts/install-test-deps.sh builds it", name)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// waitRun waits, while the process lives, until the servers have been
// scraped for liveFor, and returns the time up to which the comparison
// reads: two seconds back, so that every scrape stamped before it is
// stored. It then waits until every rule group of the engine serving
// engineURL (Prometheus, or Thanos's ruler) has finished an evaluation
// begun after that moment: a group's results are stored when its
// evaluation ends, which on a loaded machine is more than the two seconds
// after its stamp, and the groups evaluate in order, so every evaluation
// stamped before the returned time is then stored.
func (f *liveFleet) waitRun(t *testing.T, p *Process, engineURL string) time.Time {
	t.Helper()
	if err := p.WaitFor(liveFor+time.Minute, "the live run", func() (bool, error) { return time.Since(f.begin) >= liveFor, nil }); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := p.WaitFor(time.Minute, "the rule groups' evaluations past the run", func() (bool, error) {
		return groupsEvaluatedAfter(engineURL, now)
	}); err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(now.Add(-2 * time.Second).UnixMilli())
}

// groupsEvaluatedAfter reports whether the engine at base lists rule
// groups and each one's last evaluation
// (prometheus_rule_group_last_evaluation_timestamp_seconds, set once the
// evaluation has ended) is at or after the instant after.
func groupsEvaluatedAfter(base string, after time.Time) (bool, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return false, fmt.Errorf("engine metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return false, fmt.Errorf("engine metrics: %w", err)
	}
	groups := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "prometheus_rule_group_last_evaluation_timestamp_seconds{") {
			continue
		}
		groups++
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return false, fmt.Errorf("engine metrics: %q: %w", line, err)
		}
		if v < float64(after.UnixMilli())/1e3 {
			return false, nil
		}
	}
	return groups > 0, nil
}

// TestRulesLiveOnPrometheus3 runs the generated rules (with query_offset)
// live in Prometheus 3, scraping two simulated vLLM servers every second
// that spell their bucket edges differently (le="1.0" and le="1"), and
// checks them against the daemon's pipeline fed the very expositions
// Prometheus scraped at the times it stamped them (compareLive): the rules
// read an integral edge in both spellings, and Prometheus 3 stores it as
// le="1.0" whichever the server wrote. With the
// classic histograms converted to native histograms with custom buckets
// (convert_classic_histograms_to_nhcb), the SLO series are absent and
// VLLMSLOHistogramsMissing fires for each histogram and model.
func TestRulesLiveOnPrometheus3(t *testing.T) {
	t.Parallel()
	prom3 := needEngine(t, "prometheus3")
	t.Run("classic", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		f := startLiveFleet(t, dir, liveInterval)
		prom, err := StartPrometheusBinary(prom3, dir, filepath.Join(dir, "data"), f.scrapeConfig(true, ""), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer prom.Stop()
		f.open(t)
		until := f.waitRun(t, prom.Process, prom.URL)
		compareLive(t, f, prom.URL, prom.URL, until)
		// Prometheus 3 stores server b's le="1" as le="1.0".
		for expr, want := range map[string]int{
			`vllm:time_to_first_token_seconds_bucket{le="1.0"}`: len(liveModels),
			`vllm:time_to_first_token_seconds_bucket{le="1"}`:   0,
			`ALERTS{alertname="VLLMSLOHistogramsMissing"}`:      0,
		} {
			if vs, err := instantValues(prom.URL, expr, until); err != nil || len(vs) != want {
				t.Errorf("%s: %d series (%v), want %d", expr, len(vs), err, want)
			}
		}
	})
	t.Run("nhcb", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		f := startLiveFleet(t, dir, liveInterval)
		prom, err := StartPrometheusBinary(prom3, dir, filepath.Join(dir, "data"), f.scrapeConfig(true, "  convert_classic_histograms_to_nhcb: true\n"), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer prom.Stop()
		f.open(t)
		firing := `ALERTS{alertname="VLLMSLOHistogramsMissing",alertstate="firing"}`
		want := 4 * len(liveModels) // e2e, decode, TPOT and TTFT per model
		if err := prom.WaitFor(time.Minute, "VLLMSLOHistogramsMissing firing", func() (bool, error) {
			vs, err := instantValues(prom.URL, firing, time.Now())
			return len(vs) == want, err
		}); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for expr, want := range map[string]int{
			`histogram_count(vllm:time_to_first_token_seconds)`:          len(liveModels),
			`vllm:time_to_first_token_seconds_bucket`:                    0,
			`{__name__=~"model_name:vllm_slo_(burn_rate|attainment).*"}`: 0,
		} {
			if vs, err := instantValues(prom.URL, expr, now); err != nil || len(vs) != want {
				t.Errorf("%s: %d series (%v), want %d", expr, len(vs), err, want)
			}
		}
	})
}

// thanosStack is Thanos's ruler with what it needs to read the servers and
// its own recorded series: Prometheus 3 scraping the servers (no rules), a
// sidecar serving it over the Store API, a querier over the sidecar and the
// ruler's Store API, and the ruler querying the querier. The ruler stores
// what it records in its own TSDB; a rule reads a series an earlier rule
// recorded only through the querier, which is why the querier must have
// the ruler as an endpoint (the generated rules are chains of such reads).
type thanosStack struct {
	prom              *Prometheus
	queryURL, ruleURL string
	processes         []*Process
}

func (s *thanosStack) stop() {
	for i := len(s.processes) - 1; i >= 0; i-- {
		s.processes[i].Stop()
	}
	s.prom.Stop()
}

// startThanos starts the stack under dir, waits until the querier sees
// both servers' scrapes through the sidecar and lists the ruler's Store API
// with data (rulerListed), and then opens the servers.
func startThanos(t *testing.T, thanos, prom3, dir string, f *liveFleet) *thanosStack {
	t.Helper()
	// The sidecar refuses a Prometheus without external labels; the
	// querier drops this one (a replica label), so the rules see the
	// series as they were scraped.
	prom, err := StartPrometheusBinary(prom3, dir, filepath.Join(dir, "data"), f.scrapeConfig(false, "  external_labels: {prom: p}\n"), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := &thanosStack{prom: prom}
	addrs := make([]string, 6)
	for i := range addrs {
		if addrs[i], err = Loopback(); err != nil {
			s.stop()
			t.Fatal(err)
		}
	}
	sideHTTP, sideGRPC, ruleHTTP, ruleGRPC, queryHTTP, queryGRPC := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], addrs[5]
	s.queryURL, s.ruleURL = "http://"+queryHTTP, "http://"+ruleHTTP
	start := func(name string, ready string, args ...string) {
		t.Helper()
		log := filepath.Join(dir, "thanos-"+name+".log")
		p, err := StartProcess(log, thanos, args...)
		if err != nil {
			s.stop()
			t.Fatal(err)
		}
		s.processes = append(s.processes, p)
		if err := p.WaitFor(time.Minute, "thanos "+name+" ready", func() (bool, error) { return HTTPOK(ready + "/-/ready"), nil }); err != nil {
			s.stop()
			out, _ := os.ReadFile(log)
			t.Fatalf("%v\n%s", err, out[max(0, len(out)-2000):])
		}
	}
	start("sidecar", "http://"+sideHTTP, "sidecar", "--prometheus.url="+prom.URL, "--tsdb.path="+filepath.Join(dir, "data"),
		"--http-address="+sideHTTP, "--grpc-address="+sideGRPC)
	start("query", s.queryURL, "query", "--http-address="+queryHTTP, "--grpc-address="+queryGRPC,
		"--endpoint="+sideGRPC, "--endpoint="+ruleGRPC, "--query.replica-label=prom")
	start("rule", "http://"+ruleHTTP, "rule", "--data-dir="+filepath.Join(dir, "ruler"), "--rule-file="+f.rules,
		"--eval-interval="+model.Duration(f.interval).String(), "--query="+s.queryURL,
		"--http-address="+ruleHTTP, "--grpc-address="+ruleGRPC)
	q := s.processes[1]
	var last string
	if err := q.WaitFor(time.Minute, "the querier reading the servers", func() (bool, error) {
		vs, err := instantValues(s.queryURL, "up", time.Now())
		last = fmt.Sprintf("%d series of up (%v)", len(vs), err)
		return err == nil && len(vs) == len(liveModels), nil
	}); err != nil {
		s.stop()
		for _, name := range []string{"sidecar", "query", "rule"} {
			out, _ := os.ReadFile(filepath.Join(dir, "thanos-"+name+".log"))
			t.Logf("thanos %s:\n%s", name, out[max(0, len(out)-3000):])
		}
		t.Fatalf("%v: %s", err, last)
	}
	if err := q.WaitFor(time.Minute, "the querier listing the ruler's data", func() (bool, error) {
		return rulerListed(s.queryURL)
	}); err != nil {
		s.stop()
		t.Fatal(err)
	}
	f.open(t)
	return s
}

// rulerListed reports whether the querier at base lists a ruler's Store
// API with data: a time range starting before the end of time.
//
// Why the stack waits for it: a store's TSDB with no sample yet announces
// that it starts at the end of time (math.MaxInt64), and the querier asks
// a store only for the time it announces, re-reading the announcements
// every 5 s. A ruler started on an empty data directory is therefore left
// out of every query until the querier's first re-reading after its first
// evaluation: its rules that read another rule's recorded series (most of
// the per-interval ledger) record nothing in between, while those reading
// only scraped series do, and every window summing both kinds then holds
// fewer intervals of the first (measured: the joint upper bound of both
// windows under the daemon's lower one for the 20 s after the servers'
// first scrapes, with the bare sums of the per-interval upper bound
// holding one interval where the finished requests held two). The
// generated rules' pending VLLMSLOExporterAbsent (no daemon here) gives the
// ruler its first samples, so this waits at most one re-reading.
func rulerListed(base string) (bool, error) {
	resp, err := http.Get(base + "/api/v1/stores")
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	var sr struct {
		Data map[string][]struct {
			MinTime int64 `json:"minTime"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&sr); err != nil {
		return false, fmt.Errorf("stores: %w", err)
	}
	for _, st := range sr.Data["rule"] {
		if st.MinTime < math.MaxInt64 {
			return true, nil
		}
	}
	return false, nil
}

// TestRulesLiveOnThanosRuler runs the generated rules (with query_offset)
// live in Thanos's ruler over Prometheus 3 scraping the two simulated
// servers of TestRulesLiveOnPrometheus3, and checks the ruler's recorded
// series against the daemon's pipeline in the same way (compareLive),
// from the servers' first scrape: the servers open once the querier lists
// the ruler's data (startThanos, rulerListed).
func TestRulesLiveOnThanosRuler(t *testing.T) {
	t.Parallel()
	prom3 := needEngine(t, "prometheus3")
	thanos := needEngine(t, "thanos")
	dir := t.TempDir()
	f := startLiveFleet(t, dir, thanosInterval)
	s := startThanos(t, thanos, prom3, dir, f)
	defer s.stop()
	until := f.waitRun(t, s.processes[2], s.ruleURL)
	compareLive(t, f, s.queryURL, s.prom.URL, until)
	logRuleGroups(t, s.ruleURL)
}

// logRuleGroups logs the ruler's own account of its groups: how long the
// last evaluation took and how many evaluations it skipped.
func logRuleGroups(t *testing.T, ruler string) {
	t.Helper()
	resp, err := http.Get(ruler + "/metrics")
	if err != nil {
		t.Logf("ruler metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		t.Logf("ruler metrics: %v", err)
		return
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "prometheus_rule_group_last_duration_seconds{") || strings.HasPrefix(line, "prometheus_rule_group_iterations_missed_total{") ||
			strings.HasPrefix(line, "prometheus_rule_evaluation_failures_total{") && !strings.HasSuffix(line, " 0") {
			t.Log(line)
		}
	}
}
