package otlp_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/otlp"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

const target = "gpu0"

// interactive judges the finished requests only (abandoned: excluded): the
// spans are exact about those, which is what these tests check end to end.
// Under the default policy a cancelled stream, which sends no span, counts
// too, and "all" carries the histograms' bound on those (tested with
// cancellations in pipeline).
var interactive = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}, {Metric: slo.E2E, Threshold: 10}},
	Goal:       0.99,
	Period:     24 * time.Hour,
	Abandoned:  slo.AbandonedExcluded,
}

// adapters are the LoRA adapters the first model's requests ask for.
var adapters = map[string][]string{sim.DemoModel: {"sql-lora", "chat-lora"}}

func newSpec(store *traces.Store) pipeline.Spec {
	return pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: target, URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs:      []slo.SLO{interactive},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.9, 0.99},
		MaxModels: 10,
		Retention: history.NewRetention(10*time.Minute, 24*time.Hour),
		Traces:    store,
	}
}

// receiverUnderTest is a receiver running on loopback ports chosen by the system.
type receiverUnderTest struct {
	rcv              *otlp.Receiver
	store            *traces.Store
	grpcAddr, httpAd string
	stop             func()
}

func startReceiver(t *testing.T) *receiverUnderTest {
	t.Helper()
	// The store's clock reads the end of the longest simulated run (6
	// minutes): every span of the tests is then within its retention.
	store := traces.NewStore(traces.Limits{Retain: 10 * time.Minute, MaxRecords: 1 << 20, MaxModels: 10, MaxAdapters: 10,
		Now: func() time.Time { return start.Add(6 * time.Minute) }})
	rcv, err := otlp.New(otlp.Options{
		GRPCAddress: "127.0.0.1:0", HTTPAddress: "127.0.0.1:0",
		Router: otlp.NewRouter(nil, "service.name", []string{target}, otlp.DefaultAdapterAttribute),
	}, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rcv.Run(ctx) }()
	select {
	case <-rcv.Ready():
	case err := <-done:
		t.Fatalf("receiver: %v", err)
	}
	g, h := rcv.Addrs()
	r := &receiverUnderTest{rcv: rcv, store: store, grpcAddr: g, httpAd: h}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receiver Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			r.stop()
		}
	})
	return r
}

// run drives a multi-model simulator for d, scraping every 15s into the
// pipeline; emit is called for every request that ends.
type run struct {
	s *sim.Sim
	p *pipeline.Pipeline
	// plain is fed the same scrapes without spans: what the histograms
	// alone publish.
	plain *pipeline.Pipeline
	now   time.Time
}

func newRun(t *testing.T, store *traces.Store, onDone func(sim.Request)) *run {
	t.Helper()
	cfg, err := sim.Preset("multi-model", 5, start)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiscardTokenTimes = true
	cfg.OnDone = onDone
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &run{s: s, p: pipeline.New(newSpec(store)), plain: pipeline.New(newSpec(nil)), now: start}
}

func (r *run) advance(t *testing.T, d time.Duration) {
	t.Helper()
	for end := r.now.Add(d); r.now.Before(end); {
		r.now = r.now.Add(15 * time.Second)
		r.s.AdvanceTo(r.now)
		body, ct := r.s.Exposition()
		snap, err := scrape.Parse(body, ct, scrape.VLLM, r.now)
		if err != nil {
			t.Fatalf("parse at %v: %v", r.now, err)
		}
		if err := r.p.Ingest(target, snap, 0); err != nil {
			t.Fatal(err)
		}
		if err := r.plain.Ingest(target, snap, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// histogramOnly is the report of one model's window that the histograms
// alone give, from the twin pipeline without spans.
func (r *run) histogramOnly(t *testing.T, model string, length time.Duration) slo.WindowReport {
	t.Helper()
	for _, mr := range r.plain.Evaluate(r.now).Targets[0].Models {
		for _, wr := range mr.Windows {
			if mr.Name == model && wr.Window.Nominal == length {
				return wr
			}
		}
	}
	t.Fatalf("the histograms alone give no %v window of model %s", length, model)
	return slo.WindowReport{}
}

func emitter(t *testing.T, addr string, proto sim.SpanProtocol, ratio float64) *sim.SpanEmitter {
	t.Helper()
	e, err := sim.NewSpanEmitter(context.Background(), sim.SpanOptions{Endpoint: addr, Protocol: proto, SampleRatio: ratio, Adapters: adapters})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// flush exports every span e has emitted, by shutting it down: the tests
// emit nothing through an emitter after flushing it.
func flush(t *testing.T, e *sim.SpanEmitter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestExactModeEndToEnd: simulator → OTLP (gRPC, then HTTP) → receiver →
// store → pipeline. Every window is covered, and the exported numbers equal
// the simulator's per-request truth to 1e-9, per model and per adapter; the
// histogram bounds of the same windows hold the truth.
func TestExactModeEndToEnd(t *testing.T) {
	for _, proto := range []sim.SpanProtocol{sim.SpanGRPC, sim.SpanHTTP} {
		t.Run(string(proto), func(t *testing.T) {
			rut := startReceiver(t)
			addr := rut.grpcAddr
			if proto == sim.SpanHTTP {
				addr = rut.httpAd
			}
			e := emitter(t, addr, proto, 0)
			r := newRun(t, rut.store, e.Hook)
			r.advance(t, 6*time.Minute)
			flush(t, e)
			rep := r.p.Evaluate(r.now)
			checked := 0
			for _, mr := range rep.Targets[0].Models {
				truth := simtruth.ForModel(r.s.Truth(), mr.Name)
				if len(mr.Traces) != len(mr.Windows) {
					t.Fatalf("model %s: %d trace results for %d windows", mr.Name, len(mr.Traces), len(mr.Windows))
				}
				for i, wr := range mr.Windows {
					tr := mr.Traces[i]
					if !tr.Covered {
						t.Fatalf("model %s window %v: not covered (%d spans, %v finished)", mr.Name, wr.Window.Nominal, tr.Spans, tr.Finished)
					}
					finished := simtruth.FinishedIn(truth, wr.Window.Start, wr.Window.End)
					checkExact(t, mr.Name, wr, finished)
					checkBoundsHold(t, mr.Name, wr.Window, finished)
					if !tr.Calibration.Held() || tr.Calibration.Checked == 0 {
						t.Errorf("model %s window %v: calibration %d checks, failures %v", mr.Name, wr.Window.Nominal, tr.Calibration.Checked, tr.Calibration.Failures)
					}
					checkAdapters(t, e, mr.Name, tr, finished, wr.Window.Seconds())
					checked++
				}
			}
			if checked != 4 {
				t.Errorf("checked %d windows, want 2 models x 2 windows", checked)
			}
			checkSeries(t, rep, r.s.Truth(), e)
		})
	}
}

// truthValues returns the sorted values of a metric over requests.
func truthValues(reqs sim.Truth, m slo.Metric) []float64 {
	var out []float64
	for _, r := range reqs {
		v, _ := r.Value(string(m))
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// truthSLO counts the requests meeting every objective of interactive, and
// their tokens.
func truthSLO(reqs sim.Truth) (good, tokens int) {
	for _, r := range reqs {
		ok := true
		for _, o := range interactive.Objectives {
			v, _ := r.Value(string(o.Metric))
			if v > o.Threshold*(1+1e-9) {
				ok = false
			}
		}
		if ok {
			good++
			tokens += r.OutputTokens
		}
	}
	return good, tokens
}

func checkExact(t *testing.T, model string, wr slo.WindowReport, finished sim.Truth) {
	t.Helper()
	if len(finished) == 0 {
		t.Fatalf("model %s window %v: no finished request in the truth", model, wr.Window.Nominal)
	}
	for _, m := range []slo.Metric{slo.TTFT, slo.TPOT, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference} {
		vals := truthValues(finished, m)
		if got := wr.Requests[m]; got != float64(len(vals)) {
			t.Errorf("model %s %v %s: %v requests, truth %d", model, wr.Window.Nominal, m, got, len(vals))
		}
		for _, q := range wr.Quantiles[m] {
			want := slo.ExactQuantile(q.Q, vals)
			if !q.IsExact() || !near(q.Estimate, want) {
				t.Errorf("model %s %v %s q%g: %+v, truth %v", model, wr.Window.Nominal, m, q.Q, q.Bounded, want)
			}
		}
	}
	good, tokens := truthSLO(finished)
	secs := wr.Window.Seconds()
	s := wr.SLOs[0]
	n := float64(len(finished))
	all := s.Objectives[slo.AllKey]
	if !all.IsExact() || !near(all.Estimate, float64(good)/n) {
		t.Errorf("model %s %v: attainment %+v, truth %v", model, wr.Window.Nominal, all, float64(good)/n)
	}
	if g := s.GoodputRequestsPerSecond; !g.IsExact() || !near(g.Estimate, float64(good)/secs) {
		t.Errorf("model %s %v: goodput requests %+v, truth %v", model, wr.Window.Nominal, g, float64(good)/secs)
	}
	if g := s.GoodputTokensPerSecond; !g.IsExact() || !near(g.Estimate, float64(tokens)/secs) {
		t.Errorf("model %s %v: goodput tokens %+v, truth %v", model, wr.Window.Nominal, g, float64(tokens)/secs)
	}
}

// checkBoundsHold evaluates the histograms of the window afresh and checks
// that their bounds hold the truth, with no tolerance.
func checkBoundsHold(t *testing.T, model string, w slo.Window, finished sim.Truth) {
	t.Helper()
	hist := slo.Evaluate(w, []slo.SLO{interactive}, nil, slo.Options{Quantiles: []float64{0.5, 0.9, 0.99}})
	for _, m := range []slo.Metric{slo.TPOT, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference} {
		vals := truthValues(finished, m)
		for _, q := range hist.Quantiles[m] {
			v := slo.ExactQuantile(q.Q, vals)
			if v < q.Lower || v > q.Upper {
				t.Errorf("model %s %v %s q%g: truth %v outside the histogram bounds [%v, %v]", model, w.Nominal, m, q.Q, v, q.Lower, q.Upper)
			}
		}
	}
	good, tokens := truthSLO(finished)
	s := hist.SLOs[0]
	if b, v := s.GoodRequests[slo.AllKey], float64(good); v < b.Lower || v > b.Upper {
		t.Errorf("model %s %v: good requests %v outside the histogram bounds %+v", model, w.Nominal, v, b)
	}
	if b, v := s.GoodputTokensPerSecond, float64(tokens)/w.Seconds(); v < b.Lower || v > b.Upper {
		t.Errorf("model %s %v: goodput tokens %v outside the histogram bounds %+v", model, w.Nominal, v, b)
	}
}

func checkAdapters(t *testing.T, e *sim.SpanEmitter, model string, tr traces.Result, finished sim.Truth, secs float64) {
	t.Helper()
	byAdapter := map[string]sim.Truth{}
	for _, r := range finished {
		a := e.Adapter(r)
		byAdapter[a] = append(byAdapter[a], r)
	}
	if len(tr.Adapters) != len(byAdapter) {
		t.Fatalf("model %s: %d adapters exported, truth has %d", model, len(tr.Adapters), len(byAdapter))
	}
	for _, a := range tr.Adapters {
		reqs := byAdapter[a.Name]
		if a.Report.Requests != len(reqs) {
			t.Errorf("model %s adapter %q: %d requests, truth %d", model, a.Name, a.Report.Requests, len(reqs))
		}
		for _, m := range []slo.Metric{slo.TTFT, slo.TPOT, slo.E2E} {
			vals := truthValues(reqs, m)
			for _, q := range a.Report.Quantiles[m] {
				if want := slo.ExactQuantile(q.Q, vals); !near(q.Estimate, want) {
					t.Errorf("model %s adapter %q %s q%g: %v, truth %v", model, a.Name, m, q.Q, q.Estimate, want)
				}
			}
		}
		good, tokens := truthSLO(reqs)
		s := a.Report.SLOs[0]
		if got := s.Objectives[slo.AllKey].Estimate; !near(got, float64(good)/float64(len(reqs))) {
			t.Errorf("model %s adapter %q: attainment %v, truth %v", model, a.Name, got, float64(good)/float64(len(reqs)))
		}
		if got := s.GoodputTokensPerSecond.Estimate; !near(got, float64(tokens)/secs) {
			t.Errorf("model %s adapter %q: goodput tokens %v, truth %v", model, a.Name, got, float64(tokens)/secs)
		}
	}
}

// checkSeries renders the report as the daemon's /metrics does and checks
// the exported joint attainment, its bounds and the per-adapter attainment
// against the truth: what a scraper of the exporter sees.
func checkSeries(t *testing.T, rep *pipeline.Report, truth sim.Truth, e *sim.SpanEmitter) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exporter.NewCollector(func() *pipeline.Report { return rep }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	windows := map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute}
	seen := 0
	for _, name := range []string{"vllm_slo_attainment_ratio", "vllm_slo_attainment_lower_ratio", "vllm_slo_attainment_upper_ratio", "vllm_slo_adapter_attainment_ratio"} {
		for _, m := range byName[name].GetMetric() {
			if label(m, "objective") != slo.AllKey {
				continue
			}
			d := windows[label(m, "window")]
			finished := simtruth.FinishedIn(simtruth.ForModel(truth, label(m, "model_name")), rep.Time.Add(-d), rep.Time)
			if name == "vllm_slo_adapter_attainment_ratio" {
				var mine sim.Truth
				for _, r := range finished {
					if e.Adapter(r) == label(m, "adapter") {
						mine = append(mine, r)
					}
				}
				finished = mine
			}
			good, _ := truthSLO(finished)
			if want := float64(good) / float64(len(finished)); !near(m.GetGauge().GetValue(), want) {
				t.Errorf("%s{model_name=%q, window=%q, adapter=%q} = %v, truth %v", name, label(m, "model_name"), label(m, "window"), label(m, "adapter"), m.GetGauge().GetValue(), want)
			}
			seen++
		}
	}
	if want := 3*4 + 4 + 2*2; seen != want {
		t.Errorf("checked %d series, want %d (estimate and bounds for 2 models x 2 windows, and 3 + 1 adapters x 2 windows)", seen, want)
	}
	for _, m := range byName["vllm_slo_window_source"].GetMetric() {
		if label(m, "source") != exporter.SourceTraces {
			t.Errorf("window %s of %s is from %s", label(m, "window"), label(m, "model_name"), label(m, "source"))
		}
	}
}

// TestExactWindowsLagBySpanDelay: spans arrive in batches after the counters
// move (here, only for requests that finished 10s before the newest scrape),
// so the window ending at the newest scrape is never covered. With a
// TraceDelay of 20s the exact windows end at the newest scrape at least 20s
// old, are covered, and equal the truth over that window; without it nothing
// is exact.
func TestExactWindowsLagBySpanDelay(t *testing.T) {
	rut := startReceiver(t)
	e := emitter(t, rut.grpcAddr, sim.SpanGRPC, 0)
	var held []sim.Request
	r := newRun(t, rut.store, func(req sim.Request) { held = append(held, req) })
	release := func() {
		kept := held[:0]
		for _, req := range held {
			if req.Finish.After(r.now.Add(-10 * time.Second)) {
				kept = append(kept, req)
				continue
			}
			e.Hook(req)
		}
		held = kept
	}
	for range 24 {
		r.advance(t, 15*time.Second)
		release()
	}
	flush(t, e)
	for _, delay := range []time.Duration{0, 20 * time.Second} {
		spec := newSpec(rut.store)
		spec.TraceDelay = delay
		r.p.Reconfigure(spec)
		rep := r.p.Evaluate(r.now)
		for _, mr := range rep.Targets[0].Models {
			for i, wr := range mr.Windows {
				tr := mr.Traces[i]
				if delay == 0 {
					if tr.Covered {
						t.Errorf("model %s window %v: covered although the newest spans are missing", mr.Name, wr.Window.Nominal)
					}
					continue
				}
				if !tr.Covered || !wr.Window.End.Equal(r.now.Add(-30*time.Second)) {
					t.Errorf("model %s window %v: covered %v, ends %v, want covered and ending 30s before %v", mr.Name, wr.Window.Nominal, tr.Covered, wr.Window.End, r.now)
					continue
				}
				checkExact(t, mr.Name, wr, simtruth.FinishedIn(simtruth.ForModel(r.s.Truth(), mr.Name), wr.Window.Start, wr.Window.End))
			}
		}
	}
}
