package sim_test

import (
	"errors"
	"io"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sample is one parsed series value.
type sample struct {
	name   string
	labels labels.Labels
	value  float64
}

// parsed is an exposition as Prometheus's own parser sees it.
type parsed struct {
	types   map[string]string // family name (as in # TYPE) -> type
	order   []string          // family names in # TYPE order
	samples []sample
}

// parse runs textparse over the body and fails the test on any error.
func parse(t *testing.T, body []byte, contentType string) parsed {
	t.Helper()
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if p == nil {
		t.Fatalf("textparse.New(%q): no parser: %v", contentType, err)
	}
	out := parsed{types: map[string]string{}}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse %s: %v\n%s", contentType, err, body)
		}
		switch e {
		case textparse.EntryType:
			name, typ := p.Type()
			out.types[string(name)] = string(typ)
			out.order = append(out.order, string(name))
		case textparse.EntrySeries:
			_, _, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			out.samples = append(out.samples, sample{name: ls.Get("__name__"), labels: ls, value: v})
		}
	}
	return out
}

// get returns the value of the series with the given name and label pairs
// (exactly that label set), and whether it exists.
func (p parsed) get(name string, kv ...string) (float64, bool) {
	want := labels.FromStrings(append([]string{"__name__", name}, kv...)...)
	for _, s := range p.samples {
		if labels.Equal(s.labels, want) {
			return s.value, true
		}
	}
	return 0, false
}

func (p parsed) must(t *testing.T, name string, kv ...string) float64 {
	t.Helper()
	v, ok := p.get(name, kv...)
	if !ok {
		t.Fatalf("series %s%v missing", name, kv)
	}
	return v
}

// bucket returns the cumulative count of a histogram bucket, matching `le` by
// value (as a scraper must).
func (p parsed) bucket(t *testing.T, name, model, engine string, le float64) float64 {
	t.Helper()
	for _, s := range p.samples {
		if s.name != name+"_bucket" || s.labels.Get("model_name") != model || s.labels.Get("engine") != engine {
			continue
		}
		v, err := strconv.ParseFloat(s.labels.Get("le"), 64)
		if err != nil {
			t.Fatalf("bad le %q", s.labels.Get("le"))
		}
		if v == le {
			return s.value
		}
	}
	t.Fatalf("bucket %s{model_name=%q,engine=%q,le=%v} missing", name, model, engine, le)
	return 0
}

// histMetrics maps exposed histogram names to the truth value of one request.
var histMetrics = []struct {
	name   string
	metric string
	edges  func(l sim.Layout) []float64
}{
	{"vllm:time_to_first_token_seconds", "ttft", func(l sim.Layout) []float64 { return l.TTFT }},
	{"vllm:request_time_per_output_token_seconds", "tpot", func(l sim.Layout) []float64 { return l.ITL }},
	{"vllm:e2e_request_latency_seconds", "e2e", func(l sim.Layout) []float64 { return l.Latency }},
	{"vllm:request_queue_time_seconds", "queue", func(l sim.Layout) []float64 { return l.Latency }},
	{"vllm:request_prefill_time_seconds", "prefill", func(l sim.Layout) []float64 { return l.Latency }},
	{"vllm:request_decode_time_seconds", "decode", func(l sim.Layout) []float64 { return l.Latency }},
	{"vllm:request_inference_time_seconds", "inference", func(l sim.Layout) []float64 { return l.Latency }},
	{"vllm:request_prompt_tokens", "prompt", func(l sim.Layout) []float64 { return l.Tokens }},
	{"vllm:request_generation_tokens", "output", func(l sim.Layout) []float64 { return l.Tokens }},
}

func truthValue(r sim.Request, metric string) float64 {
	switch metric {
	case "prompt":
		return float64(r.PromptTokens)
	case "output":
		return float64(r.OutputTokens)
	}
	v, _ := r.Value(metric)
	return v
}

// engineTruth is one engine of one model with the truth of its requests.
type engineTruth struct {
	model int       // index in Config.Models
	name  string    // the model_name label
	index int       // the engine's index within its model
	label string    // the engine label
	truth sim.Truth // its requests, in truth order
}

// engines splits the truth by engine, models in config order, engines in
// index order.
func engines(s *sim.Sim, tr sim.Truth) []engineTruth {
	var out []engineTruth
	for i, mc := range s.Config().Models {
		for j := range mc.Engines {
			e := engineTruth{model: i, name: mc.Name, index: j, label: strconv.Itoa(j)}
			for _, r := range tr {
				if r.Model == mc.Name && r.Engine == j {
					e.truth = append(e.truth, r)
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// checkTruth verifies that the single-process exposition at the sim's current
// time agrees exactly with the truth since the latest (re)start: every bucket,
// count and counter, the gauges, and the sums up to float rounding.
func checkTruth(t *testing.T, s *sim.Sim) {
	t.Helper()
	body, ct := s.ExpositionStyle(sim.Style{Format: sim.SingleProcess})
	p := parse(t, body, ct)
	tr := s.Truth()
	from, now := s.Created(), s.Now()
	for _, e := range engines(s, tr) {
		name, eng, mine, layout := e.name, e.label, e.truth, s.Layout(e.model)
		finished := simtruth.FinishedIn(mine, from, now)
		for _, h := range histMetrics {
			pop := finished
			if h.metric == "ttft" {
				pop = simtruth.FirstTokenIn(mine, from, now)
			}
			vals := make([]float64, len(pop))
			sum := 0.0
			for i, r := range pop {
				vals[i] = truthValue(r, h.metric)
				sum += vals[i]
			}
			checkHist(t, p, h.name, name, eng, h.edges(layout), vals, sum)
		}
		gaps := simtruth.ITLGaps(mine, from, now)
		gsum := 0.0
		for _, g := range gaps {
			gsum += g
		}
		checkHist(t, p, "vllm:inter_token_latency_seconds", name, eng, layout.ITL, gaps, gsum)

		if got, want := p.must(t, "vllm:generation_tokens_total", "engine", eng, "model_name", name), simtruth.TokensIn(mine, from, now); got != float64(want) {
			t.Errorf("%s/%s generation_tokens_total = %v, truth %d", name, eng, got, want)
		}
		prompt := 0
		for _, r := range simtruth.FirstTokenIn(mine, from, now) {
			prompt += r.PromptTokens
		}
		if got := p.must(t, "vllm:prompt_tokens_total", "engine", eng, "model_name", name); got != float64(prompt) {
			t.Errorf("%s/%s prompt_tokens_total = %v, truth %d", name, eng, got, prompt)
		}
		byReason := map[string]int{}
		for _, r := range finished {
			byReason[r.FinishedReason]++
		}
		if s.Config().CountAborts {
			byReason["abort"] += len(simtruth.CancelledIn(mine, from, now))
		}
		for _, reason := range sim.FinishReasons {
			got := p.must(t, "vllm:request_success_total", "engine", eng, "finished_reason", reason, "model_name", name)
			if got != float64(byReason[reason]) {
				t.Errorf("%s/%s request_success_total{%s} = %v, truth %d", name, eng, reason, got, byReason[reason])
			}
		}
		fl := simtruth.InFlightAt(mine, now)
		if got := p.must(t, "vllm:num_requests_running", "engine", eng, "model_name", name); got != float64(fl.Running) {
			t.Errorf("%s/%s running = %v, truth %d", name, eng, got, fl.Running)
		}
		if got := p.must(t, "vllm:num_requests_waiting", "engine", eng, "model_name", name); got != float64(fl.Waiting) {
			t.Errorf("%s/%s waiting = %v, truth %d", name, eng, got, fl.Waiting)
		}
		kv := p.must(t, "vllm:kv_cache_usage_perc", "engine", eng, "model_name", name)
		if kv < 0 || kv > 1 || (fl.Running > 0) != (kv > 0) {
			t.Errorf("%s/%s kv_cache_usage_perc = %v with %d running", name, eng, kv, fl.Running)
		}
	}
}

// checkHist compares one exposed histogram child with truth observations.
func checkHist(t *testing.T, p parsed, name, model, engine string, edges, vals []float64, sum float64) {
	t.Helper()
	for _, le := range append(append([]float64(nil), edges...), math.Inf(1)) {
		want := 0
		for _, v := range vals {
			if v <= le {
				want++
			}
		}
		if got := p.bucket(t, name, model, engine, le); got != float64(want) {
			t.Errorf("%s{%s,%s} bucket le=%v = %v, truth %d", name, model, engine, le, got, want)
		}
	}
	if got := p.must(t, name+"_count", "engine", engine, "model_name", model); got != float64(len(vals)) {
		t.Errorf("%s{%s,%s} _count = %v, truth %d", name, model, engine, got, len(vals))
	}
	got := p.must(t, name+"_sum", "engine", engine, "model_name", model)
	if math.Abs(got-sum) > 1e-9*math.Max(1, math.Abs(sum)) {
		t.Errorf("%s{%s,%s} _sum = %v, truth %v", name, model, engine, got, sum)
	}
}

// smallConfig is a quick single-model workload for focused tests.
func smallConfig(seed uint64) sim.Config {
	return sim.Config{
		Seed:  seed,
		Start: t0,
		Models: []sim.ModelConfig{{
			Name:    "m",
			Engines: 2,
			Workload: sim.Workload{
				Phases:          []sim.Phase{{Kind: sim.Poisson, Rate: 4}},
				Prompt:          sim.LengthDist{Median: 300, Sigma: 0.6, Max: 3000},
				Output:          sim.LengthDist{Median: 40, Sigma: 0.8, Max: 400},
				StopProbability: 0.7,
			},
			Engine:      sim.DemoEngine,
			MaxModelLen: 4096,
		}},
	}
}

func mustNew(t testing.TB, cfg sim.Config) *sim.Sim {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
