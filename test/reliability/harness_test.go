package reliability

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Names and settings shared by the rigs.
const (
	healthyName = "healthy"
	hostileName = "hostile"
	rigInterval = 15 * time.Second
	// rigTimeout bounds the scrapes that must succeed: generous, so that a
	// loaded CI machine under -race never turns a good scrape into a timeout.
	rigTimeout = 20 * time.Second
	// faultTimeout bounds the scrapes of a faulty target (stepFault), short
	// so that hanging and dripping targets cost little test time.
	faultTimeout  = time.Second
	rigBodyLimit  = 1 << 20
	rigMaxModels  = 100
	victimModel   = sim.DemoModel
	healthyModel  = sim.DemoModel
	rigSLO        = "interactive"
	metricsPrefix = "vllm_slo_"
)

var rigStart = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// behaviour answers one request of the hostile target.
type behaviour func(w http.ResponseWriter, r *http.Request)

// hostile is a target on 127.0.0.1 whose every answer the test programs.
// Handlers that hang wait for the client to go away (or the test to end), so
// that closing the server never waits for ever.
type hostile struct {
	srv  *httptest.Server
	mu   sync.Mutex
	b    behaviour
	done chan struct{}
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{done: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		b := h.b
		h.mu.Unlock()
		if b == nil {
			http.NotFound(w, r)
			return
		}
		b(w, r)
	}))
	t.Cleanup(func() {
		close(h.done)
		h.srv.CloseClientConnections()
		h.srv.Close()
	})
	return h
}

func (h *hostile) set(b behaviour) {
	h.mu.Lock()
	h.b = b
	h.mu.Unlock()
}

// hang blocks until the client gives up or the test ends.
func (h *hostile) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-h.done:
	}
}

// refusedURL returns a URL on 127.0.0.1 where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/metrics"
}

// clock is the rigs' virtual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// newSim builds a simulated vLLM from a preset; it fails the test on error.
func newSim(t *testing.T, preset string, seed uint64, start time.Time) *sim.Sim {
	t.Helper()
	return newSimWith(t, preset, seed, start, func(*sim.Config) {})
}

// newSimWith is newSim with the preset's configuration changed by change.
func newSimWith(t *testing.T, preset string, seed uint64, start time.Time, change func(*sim.Config)) *sim.Sim {
	t.Helper()
	cfg, err := sim.Preset(preset, seed, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiscardTokenTimes = true
	change(&cfg)
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testSpec is the evaluation spec of the rigs: short windows so that a few
// minutes of virtual time fill them.
func testSpec(targets ...pipeline.TargetSpec) pipeline.Spec {
	return pipeline.Spec{
		Targets:   targets,
		SLOs:      []slo.SLO{{Name: rigSLO, Goal: 0.99, Period: time.Hour, Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}}}},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.99},
		Currency:  "CNY",
		MaxModels: rigMaxModels,
		Retention: history.NewRetention(5*time.Minute, time.Hour),
	}
}

func targetSpec(t *testing.T, name, url string) pipeline.TargetSpec {
	t.Helper()
	p, err := scrape.LookupProfile("vllm")
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.TargetSpec{Name: name, URL: url, Profile: p, HourlyCost: 2, Interval: rigInterval}
}

// newFetcher builds a fetcher with the daemon's defaults (redirects followed).
func newFetcher(t *testing.T, name, url string, httpCfg commoncfg.HTTPClientConfig) *scrape.Fetcher {
	t.Helper()
	return newFetcherTimeout(t, name, url, httpCfg, rigTimeout)
}

// newFetcherTimeout is newFetcher with another scrape timeout.
func newFetcherTimeout(t *testing.T, name, url string, httpCfg commoncfg.HTTPClientConfig, timeout time.Duration) *scrape.Fetcher {
	t.Helper()
	f, err := scrape.NewFetcher(name, url, httpCfg, timeout, rigBodyLimit)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// published is one pipeline with the real exporter handler in front of it.
type published struct {
	pipe    *pipeline.Pipeline
	report  atomic.Pointer[pipeline.Report]
	handler http.Handler
}

func newPublished(spec pipeline.Spec) *published {
	p := &published{pipe: pipeline.New(spec)}
	p.handler = exporter.NewHandler(exporter.Endpoints{Report: p.report.Load})
	return p
}

func (p *published) evaluate(now time.Time) {
	p.report.Store(p.pipe.Evaluate(now))
}

// series GETs /metrics from the handler and returns every sample as
// `name{sorted labels}` → value. It fails the test when the handler does not
// answer 200 with a parseable exposition: that is "the process keeps serving".
func (p *published) series(t *testing.T) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	p.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", rec.Code, rec.Body.String())
	}
	out, err := parseExposition(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return out
}

// parseExposition reads Prometheus text into a flat map of samples.
func parseExposition(r io.Reader) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse our exposition: %w", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				out[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// only keeps the series of one target, dropping the families listed.
func only(all map[string]float64, target string, drop ...string) map[string]float64 {
	out := map[string]float64{}
	needle := fmt.Sprintf("target=%q", target)
	for k, v := range all {
		if !strings.Contains(k, needle) {
			continue
		}
		name, _, _ := strings.Cut(k, "{")
		if slices.Contains(drop, name) {
			continue
		}
		out[k] = v
	}
	return out
}

// diff describes how two series maps differ, "" when they are equal
// (NaN equal to NaN).
func diff(got, want map[string]float64) string {
	var b strings.Builder
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	n := 0
	for _, k := range sorted {
		g, okG := got[k]
		w, okW := want[k]
		if okG && okW && (g == w || (g != g && w != w)) {
			continue
		}
		if n < 8 {
			fmt.Fprintf(&b, "\n  %s: got %v (present %v), want %v (present %v)", k, g, okG, w, okW)
		}
		n++
	}
	if n > 8 {
		fmt.Fprintf(&b, "\n  ... and %d more", n-8)
	}
	return b.String()
}

// rig scrapes a healthy simulated vLLM and a hostile target into one
// pipeline ("main", the system under test, with the real exporter handler).
// Two reference pipelines see the same good data: control gets only the
// healthy target's snapshots, oracle only the hostile target's successful
// ones. Main must equal control on the healthy target and oracle on the
// hostile target's numbers after every step, whatever the hostile target did.
type rig struct {
	t       *testing.T
	clock   *clock
	profile scrape.Profile

	healthySim *sim.Sim
	healthy    *scrape.Fetcher
	healthyURL string // the healthy target's /metrics URL

	victim  *sim.Sim // what the hostile target serves when it behaves
	bad     *hostile
	badF    *scrape.Fetcher
	badURL  string          // the hostile target's /metrics URL
	faultF  *scrape.Fetcher // badF with faultTimeout
	refused *scrape.Fetcher // the hostile target's name, at a port where nothing listens

	main, control, oracle *published
	errs                  []error // the hostile target's error of each step (nil on success)
	// healthyErrs holds the healthy target's refused ingests; only a test
	// that steps the clock back allows them (allowHealthyErrors).
	healthyErrs        []error
	allowHealthyErrors bool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, clock: &clock{now: rigStart}}
	p, err := scrape.LookupProfile("vllm")
	if err != nil {
		t.Fatal(err)
	}
	r.profile = p
	r.healthySim = newSim(t, "steady", 1, rigStart)
	hs := httptest.NewServer(r.healthySim.Handler(r.clock.Now))
	t.Cleanup(hs.Close)
	r.victim = newSim(t, "demo", 2, rigStart)
	r.bad = newHostile(t)
	r.bad.set(r.good)

	r.healthyURL = hs.URL + "/metrics"
	r.badURL = r.bad.srv.URL + "/metrics"
	r.healthy = newFetcher(t, healthyName, r.healthyURL, commoncfg.DefaultHTTPClientConfig)
	r.badF = newFetcher(t, hostileName, r.badURL, commoncfg.DefaultHTTPClientConfig)
	r.faultF = newFetcherTimeout(t, hostileName, r.badURL, commoncfg.DefaultHTTPClientConfig, faultTimeout)
	r.refused = newFetcherTimeout(t, hostileName, refusedURL(t), commoncfg.DefaultHTTPClientConfig, faultTimeout)

	hSpec, bSpec := targetSpec(t, healthyName, r.healthyURL), targetSpec(t, hostileName, r.badURL)
	r.main = newPublished(testSpec(hSpec, bSpec))
	r.control = newPublished(testSpec(hSpec))
	r.oracle = newPublished(testSpec(bSpec))
	return r
}

// good serves the victim sim's exposition at the current virtual time.
func (r *rig) good(w http.ResponseWriter, _ *http.Request) {
	body, ct := r.victimBody()
	w.Header().Set("Content-Type", ct)
	w.Write(body)
}

// victimBody advances the victim to now and renders its exposition.
func (r *rig) victimBody() ([]byte, string) {
	r.victim.AdvanceTo(r.clock.Now())
	return r.victim.Exposition()
}

// step advances the virtual clock by one interval and scrapes both targets
// (the hostile one with b, or at a refused port when b is nil), feeds the
// results to the pipelines as the daemon does, and evaluates them. It returns
// the hostile target's error.
func (r *rig) step(b behaviour) error {
	return r.stepBy(rigInterval, b)
}

// stepFault is step for a faulty behaviour: the hostile target is scraped
// with the short faultTimeout.
func (r *rig) stepFault(b behaviour) error {
	f := r.badF
	r.badF = r.faultF
	defer func() { r.badF = f }()
	return r.stepBy(rigInterval, b)
}

func (r *rig) stepBy(d time.Duration, b behaviour) error {
	t := r.t
	t.Helper()
	now := r.clock.Advance(d)
	ctx := context.Background()

	snap, resp, err := r.healthy.Scrape(ctx, r.profile, now)
	if err != nil {
		t.Fatalf("healthy target failed at %v: %v", now, err)
	}
	if err := r.main.pipe.Ingest(healthyName, snap, resp.Duration); err != nil {
		if !r.allowHealthyErrors {
			t.Fatalf("ingest healthy: %v", err)
		}
		r.healthyErrs = append(r.healthyErrs, err)
	} else {
		r.ingestCopy(r.control, healthyName, resp, now)
	}

	f := r.badF
	if b == nil {
		f = r.refused
	} else {
		r.bad.set(b)
	}
	snap, resp, err = f.Scrape(ctx, r.profile, now)
	if err == nil {
		err = r.main.pipe.Ingest(hostileName, snap, resp.Duration)
		if err == nil {
			r.ingestCopy(r.oracle, hostileName, resp, now)
		}
	} else {
		r.main.pipe.RecordFailure(hostileName, scrape.FailureReason(err), err, now, resp.Duration)
	}
	r.errs = append(r.errs, err)
	for _, p := range []*published{r.main, r.control, r.oracle} {
		p.evaluate(now)
	}
	return err
}

// ingestCopy parses a fetched body again and ingests it into a reference
// pipeline, so that the references never share a snapshot with main.
func (r *rig) ingestCopy(p *published, name string, resp scrape.Response, now time.Time) {
	r.t.Helper()
	snap, err := scrape.Parse(resp.Body, resp.ContentType, r.profile, now)
	if err != nil {
		r.t.Fatalf("reparse %s: %v", name, err)
	}
	if err := p.pipe.Ingest(name, snap, resp.Duration); err != nil {
		r.t.Fatalf("ingest %s into reference: %v", name, err)
	}
}

// targetFamilies are the per-target bookkeeping series that legitimately
// differ between main and the oracle (the oracle never sees a failure).
var targetFamilies = []string{
	metricsPrefix + "target_up",
	metricsPrefix + "target_scrape_duration_seconds",
	metricsPrefix + "target_scrape_failures_total",
	metricsPrefix + "alert_firing",
}

// check asserts the invariants that hold after every step: our handler
// answers, the healthy target equals control, the hostile target's numbers
// equal the oracle's, and target_up says whether the last scrape worked.
// It returns main's series.
func (r *rig) check() map[string]float64 {
	t := r.t
	t.Helper()
	all := r.main.series(t)
	// Durations are wall-clock measurements: never equal between pipelines.
	dur := metricsPrefix + "target_scrape_duration_seconds"
	drop := []string{dur}
	if r.allowHealthyErrors {
		drop = targetFamilies
	}
	if d := diff(only(all, healthyName, drop...), only(r.control.series(t), healthyName, drop...)); d != "" {
		t.Fatalf("step %d: the healthy target's series moved:%s", len(r.errs), d)
	}
	if d := diff(only(all, hostileName, targetFamilies...), only(r.oracle.series(t), hostileName, targetFamilies...)); d != "" {
		t.Fatalf("step %d: the hostile target's numbers differ from those of its good scrapes only:%s", len(r.errs), d)
	}
	last := r.errs[len(r.errs)-1]
	up := all[fmt.Sprintf("%starget_up{target=%q}", metricsPrefix, hostileName)]
	if want := boolFloat(last == nil); up != want {
		t.Fatalf("step %d: target_up = %v, want %v (last error %v)", len(r.errs), up, want, last)
	}
	return all
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// failures returns the hostile target's failure counter for a reason.
func failures(all map[string]float64, reason string) float64 {
	return all[fmt.Sprintf("%starget_scrape_failures_total{reason=%q,target=%q}", metricsPrefix, reason, hostileName)]
}

// hostileSeries returns a series of the hostile target's model.
func modelSeries(all map[string]float64, name string, labels ...string) (float64, bool) {
	l := append([]string{fmt.Sprintf("model_name=%q", victimModel), fmt.Sprintf("target=%q", hostileName)}, labels...)
	sort.Strings(l)
	v, ok := all[metricsPrefix+name+"{"+strings.Join(l, ",")+"}"]
	return v, ok
}
