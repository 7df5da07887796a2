package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

const hostile = `<script>alert("x")</script>`

var interactive = slo.SLO{
	Name:       "interactive",
	Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}, {Metric: slo.TPOT, Threshold: 0.05}},
	Goal:       0.99,
	Period:     24 * time.Hour,
}

func testSpec(models ...string) pipeline.Spec {
	return pipeline.Spec{
		Targets:   []pipeline.TargetSpec{{Name: "gpu0", URL: "http://127.0.0.1:8000/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}},
		SLOs:      []slo.SLO{interactive},
		Windows:   []time.Duration{time.Minute, 5 * time.Minute},
		Quantiles: []float64{0.5, 0.9, 0.99},
		Retention: history.NewRetention(5*time.Minute, 24*time.Hour),
		Alerts: []pipeline.BurnAlert{
			{SLO: "interactive", Severity: "page", Long: 10 * time.Minute, Short: 2 * time.Minute, Factor: 5, For: time.Minute},
			{SLO: "interactive", Severity: "ticket", Long: 30 * time.Minute, Short: 5 * time.Minute, Factor: 2, For: time.Minute},
		},
	}
}

// rig is a pipeline fed by a simulator that is healthy for 20 minutes and
// then overloaded, with one model named to break HTML.
type rig struct {
	pipe *pipeline.Pipeline
	sim  *sim.Sim
	now  time.Time
	rep  *pipeline.Report
	// ring, when set, keeps every evaluation, as the daemon's does, and
	// published every report the rig evaluated, in time order.
	ring      *Ring
	published []*pipeline.Report
}

func newRig(t *testing.T, minutes int) *rig {
	t.Helper()
	return newRigWith(t, minutes, nil)
}

// newRigWith is newRig with every evaluation kept in ring (nil: none).
func newRigWith(t *testing.T, minutes int, ring *Ring) *rig {
	t.Helper()
	cfg := sim.DemoConfig(11, start)
	cfg.Models[0].Name = hostile
	cfg.Models[0].Workload.Phases = []sim.Phase{
		{Duration: 20 * time.Minute, Kind: sim.Poisson, Rate: sim.DemoRate},
		{Kind: sim.Poisson, Rate: 4 * sim.DemoRate},
	}
	cfg.Models[0].Workload.Repeat = false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{pipe: pipeline.New(testSpec()), sim: s, ring: ring}
	for i := 1; i <= minutes*4; i++ {
		r.scrape(t, start.Add(time.Duration(i)*15*time.Second))
	}
	return r
}

// scrape advances the simulator, ingests its exposition and evaluates.
func (r *rig) scrape(t *testing.T, at time.Time) {
	t.Helper()
	r.sim.AdvanceTo(at)
	body, ct := r.sim.Exposition()
	snap, err := scrape.Parse(body, ct, scrape.VLLM, at)
	if err != nil {
		t.Fatalf("parse at %v: %v", at, err)
	}
	if err := r.pipe.Ingest("gpu0", snap, 0); err != nil {
		t.Fatalf("ingest at %v: %v", at, err)
	}
	r.now = at
	r.rep = r.pipe.Evaluate(at)
	if r.ring != nil {
		r.ring.Add(r.rep, r.pipe.Spec())
		r.published = append(r.published, r.rep)
	}
}

func (r *rig) console() *Console {
	return New(Options{Report: func() *pipeline.Report { return r.rep }, History: r.pipe, Ring: r.ring})
}

// get serves one request and returns the status and body.
func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, string(body)
}

// series asks the data endpoint and decodes its answer.
func series(t *testing.T, h http.Handler, target string) *Series {
	t.Helper()
	code, body := get(t, h, target)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	var s Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("GET %s: decode: %v", target, err)
	}
	return &s
}

// TestOverload draws 30 minutes of one simulator, 20 healthy and 10
// overloaded, once for every check that only reads it.
func TestOverload(t *testing.T) {
	r := newRig(t, 30)
	for name, check := range map[string]func(*testing.T, *rig){
		"SeriesShapesAndBands":       checkSeriesShapesAndBands,
		"SeriesNewestPointIsTheLive": checkSeriesNewestPointIsTheLiveReport,
		"HistogramView":              checkHistogramView,
		"SeriesHoldTheTruth":         checkSeriesHoldTheTruth,
		"PagesEscapeModelNames":      checkPagesEscapeModelNames,
		"WriteStatic":                checkWriteStatic,
		"OverviewStateFromAlerts":    checkOverviewStateFromPipelineAlerts,
	} {
		t.Run(name, func(t *testing.T) { check(t, r) })
	}
}
