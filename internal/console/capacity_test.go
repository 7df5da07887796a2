package console_test

import (
	"html"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/console"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// capacityDay is a synthetic day of two-minute windows whose load ramps
// from 1 to 8 req/s and back, on a server whose attainment falls below
// 0.95 past 6 req/s, with binomial noise and ±1% bounds.
func capacityDay(seed uint64) []capacity.Window {
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var ws []capacity.Window
	for k := range 240 {
		load := 1 + 7*(1-math.Cos(2*math.Pi*float64(k)/240))/2
		att := 0.99
		if load > 5 {
			att = 0.99 - 0.04*(load-5) - 0.1*math.Max(0, load-6)
		}
		n := load * 120
		good := 0.0
		for range int(n) {
			if rng.Float64() < att {
				good++
			}
		}
		start := t0.Add(time.Duration(k) * 2 * time.Minute)
		ws = append(ws, capacity.Window{Start: start, End: start.Add(2 * time.Minute), Arrivals: n, Recent: load, Finished: n, Known: true,
			Mixed: true, PromptTokens: 500 * n, OutputTokens: 200 * n, InFlight: load * 4 * 120,
			Good: slo.Bounded{Estimate: good, Lower: math.Max(0, good-0.01*n), Upper: math.Min(n, good+0.01*n)}})
	}
	return ws
}

// TestCapacityPageDrawsTheReport serves /capacity for a bounded and a
// one-sided estimate: one circle per window of the curve, one fit vertex
// per bin, the knee and its interval for both, the operating point, and a
// table in which every number tied to a series reads what /metrics
// exports for it at the console's rounding (no upper end for the
// one-sided answer, on either).
func TestCapacityPageDrawsTheReport(t *testing.T) {
	ws := capacityDay(1)
	cfg := capacity.DefaultConfig(0.95)
	bounded := capacity.Fit(ws, cfg, ws[len(ws)/2].End, "")
	oneSided := capacity.Fit(ws[:60], cfg, ws[59].End, "")
	if bounded.Kind != capacity.Bounded || oneSided.Kind != capacity.LowerOnly {
		t.Fatalf("kinds %s and %s, want bounded and lower_only", bounded.Kind, oneSided.Kind)
	}
	reps := []capacity.Report{
		{Target: "a", Model: "m", SLO: "interactive", Estimate: bounded},
		{Target: "b", Model: "m", SLO: "interactive", Estimate: oneSided},
	}
	src := func() *pipeline.Report { return &pipeline.Report{Capacity: reps} }
	c := console.New(console.Options{Report: src})
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/capacity", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /capacity: %d %s", rec.Code, rec.Body)
	}
	page := rec.Body.String()
	sections := strings.Split(page, `<section class="capacity"`)[1:]
	if len(sections) != 2 {
		t.Fatalf("%d sections, want 2", len(sections))
	}
	for i, s := range sections {
		e := reps[i].Estimate
		if n := strings.Count(s, `<circle class="window"`); n != len(e.Curve.Windows) {
			t.Errorf("%s: %d window points, the curve has %d", reps[i].Target, n, len(e.Curve.Windows))
		}
		fit := regexp.MustCompile(`<polyline class="fit" points="([^"]*)"`).FindStringSubmatch(s)
		if fit == nil || len(strings.Fields(fit[1])) != len(e.Curve.Fit) {
			t.Errorf("%s: fit line %v, want %d vertices", reps[i].Target, fit, len(e.Curve.Fit))
		}
		for _, mark := range []string{`class="knee"`, `class="kneeband"`, `class="operating"`, `class="goal"`} {
			if !strings.Contains(s, mark) {
				t.Errorf("%s: no %s", reps[i].Target, mark)
			}
		}
	}
	if strings.Contains(sections[1], "_upper_") {
		t.Error("the one-sided answer shows an upper end")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exporter.NewCollector(src))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]float64{} // target/series
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" {
					exported[l.GetValue()+"/"+mf.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	checkMethodShown(t, sections, reps, mfs)
	cell := regexp.MustCompile(`data-series="([^"]+)">([^<]+)<`)
	compared := 0
	for i, s := range sections {
		for _, m := range cell.FindAllStringSubmatch(s, -1) {
			key := reps[i].Target + "/" + m[1]
			want, ok := exported[key]
			if !ok {
				t.Errorf("%s: the page shows %s, /metrics does not export it", reps[i].Target, m[1])
				continue
			}
			text := html.UnescapeString(m[2])
			var got string
			switch {
			case strings.HasSuffix(m[1], "_seconds") && strings.Contains(m[1], "breach"):
				d, err := model.ParseDuration(text)
				if err != nil || math.Abs(time.Duration(d).Seconds()-want) > 0.5 {
					t.Errorf("%s: %q, /metrics %v s", key, text, want)
				}
				compared++
				continue
			case strings.HasSuffix(m[1], "_timestamp_seconds"):
				ts, err := time.Parse(time.DateTime+" MST", text)
				if err != nil || float64(ts.Unix()) != math.Floor(want) {
					t.Errorf("%s: %q, /metrics %v", key, text, want)
				}
				compared++
				continue
			default:
				got = strings.Fields(text)[0]
			}
			if w := strconv.FormatFloat(want, 'g', 4, 64); got != w {
				t.Errorf("%s: the page shows %s, /metrics %s", key, got, w)
			}
			compared++
		}
	}
	if compared < 20 {
		t.Fatalf("only %d numbers compared", compared)
	}
}

// checkMethodShown fails unless each section shows the method of its
// estimate exactly when /metrics exports vllm_slo_capacity_method_info for
// that target, with the same value as the series' method label, in the
// table and in the knee's tooltip.
func checkMethodShown(t *testing.T, sections []string, reps []capacity.Report, mfs []*dto.MetricFamily) {
	t.Helper()
	exported := map[string]string{} // target → method label
	for _, mf := range mfs {
		if mf.GetName() != "vllm_slo_capacity_method_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var target, method string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "target":
					target = l.GetValue()
				case "method":
					method = l.GetValue()
				}
			}
			exported[target] = method
		}
	}
	info := regexp.MustCompile(`data-info="vllm_slo_capacity_method_info">([^<]+)<`)
	for i, s := range sections {
		target, method := reps[i].Target, string(reps[i].Estimate.Method)
		got := info.FindAllStringSubmatch(s, -1)
		want, ok := exported[target]
		switch {
		case !ok && len(got) != 0:
			t.Errorf("%s: the page shows method %q, /metrics exports none", target, got[0][1])
		case ok && (len(got) != 1 || got[0][1] != want || want != method):
			t.Errorf("%s: the page shows methods %v, /metrics %q, the estimate %q", target, got, want, method)
		case ok && !strings.Contains(s, "placed by the "+want+" fit</title>"):
			t.Errorf("%s: the knee's tooltip does not name the %s fit", target, want)
		}
	}
	if len(exported) == 0 {
		t.Error("no method exported: the bounded estimate must have one")
	}
}

// TestCapacityPageWithoutEstimates: no report, or a report without an
// estimate yet, says so.
func TestCapacityPageWithoutEstimates(t *testing.T) {
	for _, c := range []*console.Console{console.New(console.Options{}), console.New(console.Options{Report: func() *pipeline.Report { return &pipeline.Report{} }})} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest("GET", "/capacity", nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "No capacity estimate yet") {
			t.Fatalf("GET /capacity: %d %s", rec.Code, rec.Body)
		}
	}
}

// TestCapacityPageShowsTheReplicaSignal: the capacity page shows each
// model's replica signal as the report holds it (Report.Replicas, not
// recomputed from the estimates): the replicas serving the model, the
// recommendation, which reads what /metrics exports as
// vllm_slo_capacity_replicas, its interval and its margin.
func TestCapacityPageShowsTheReplicaSignal(t *testing.T) {
	ws := capacityDay(1)
	bounded := capacity.Fit(ws, capacity.DefaultConfig(0.95), ws[len(ws)/2].End, "")
	need := capacity.ModelNeed{Model: "m", SLO: "interactive", Serving: 3, Policy: capacity.DefaultReplicaPolicy(),
		Need: capacity.Need{Replicas: 3.75, PerReplica: 5, Planned: 4.5, Kind: capacity.Bounded, Margin: 0.1,
			Spread: capacity.Range{Estimate: 3.1, Lower: 2.9, Upper: 3.4}, Load: 15, Projected: 16.875, Answered: 3, Of: 3}}
	src := func() *pipeline.Report {
		return &pipeline.Report{Capacity: []capacity.Report{{Target: "a", Model: "m", SLO: "interactive", Estimate: bounded}},
			Replicas: []capacity.ModelNeed{need}}
	}
	rec := httptest.NewRecorder()
	console.New(console.Options{Report: src}).ServeHTTP(rec, httptest.NewRequest("GET", "/capacity", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /capacity: %d %s", rec.Code, rec.Body)
	}
	page := html.UnescapeString(rec.Body.String())
	start := strings.Index(page, `<section class="replicas" id="replicas/m/interactive">`)
	if start < 0 {
		t.Fatalf("no replica section for m/interactive:\n%s", page)
	}
	section := page[start : start+strings.Index(page[start:], "</section>")]
	for _, want := range []string{
		"<td>replicas serving now</td><td>3 (3 of 3 estimates with a capacity)</td>",
		`<td>recommended replicas</td><td><span class="num" title="vllm_slo_capacity_replicas" data-series="vllm_slo_capacity_replicas">3.75</span>`,
		"<td>recommended, rounded up</td><td>4</td>",
		"[2.9, 3.4], at the estimate 3.1",
		"<td>margin</td><td>10%</td>",
		"<td>load projected 5m ahead</td><td>16.88 req/s</td>",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the replica section lacks %q:\n%s", want, section)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exporter.NewCollector(src))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := false
	for _, mf := range mfs {
		if mf.GetName() == "vllm_slo_capacity_replicas" {
			if ms := mf.GetMetric(); len(ms) != 1 || ms[0].GetGauge().GetValue() != need.Replicas {
				t.Errorf("/metrics exports %v, the report holds %v", ms, need.Replicas)
			}
			exported = true
		}
	}
	if !exported {
		t.Error("/metrics exports no vllm_slo_capacity_replicas")
	}
}
