package scrape

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// scrapeTime is the fixed time stamped on parsed snapshots in tests.
var scrapeTime = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

const (
	qwen  = "Qwen/Qwen2.5-7B-Instruct"
	llama = "meta-llama/Llama-3.1-8B-Instruct"
	// created0 is the `_created` of engine 0 in the generated expositions;
	// engine 1's is 0.01 s later.
	created0 = 1753795326.9358883
	created1 = 1753795326.9458883
)

const (
	ctText004 = "text/plain; version=0.0.4; charset=utf-8"
	ctText100 = "text/plain; version=1.0.0; charset=utf-8"
	ctOM      = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// expositions are the hand-made golden inputs under testdata/, with the
// Content-Type each is served with.
var expositions = []struct {
	file, contentType string
}{
	{"single_process.txt", ctText004},
	{"multi_process.txt", ctText100},
	{"openmetrics.txt", ctOM},
	{"openmetrics_created.txt", ctOM},
	{"two_models.txt", ctText004},
	{"old_generation.txt", ""},
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t testing.TB, body []byte, contentType string) *Snapshot {
	t.Helper()
	snap, err := Parse(body, contentType, VLLM, scrapeTime)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return snap
}

// render prints a snapshot deterministically, for golden files.
func render(s *Snapshot) string {
	var b strings.Builder
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	fmt.Fprintf(&b, "time %s\n", s.Time.Format(time.RFC3339Nano))
	var found []string
	for f, n := range s.Found {
		found = append(found, fmt.Sprintf("found %s %s\n", f, n))
	}
	sort.Strings(found)
	b.WriteString(strings.Join(found, ""))
	for _, f := range s.Missing {
		fmt.Fprintf(&b, "missing %s\n", f)
	}
	models := make([]string, 0, len(s.Models))
	for m := range s.Models {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		ms := s.Models[m]
		fmt.Fprintf(&b, "model %q created %s\n", m, g(ms.Created))
		var lines []string
		for f, v := range ms.Counters {
			lines = append(lines, fmt.Sprintf("  counter %s %s\n", f, g(v)))
		}
		for f, v := range ms.Gauges {
			lines = append(lines, fmt.Sprintf("  gauge %s %s\n", f, g(v)))
		}
		for f, h := range ms.Histograms {
			parts := make([]string, len(h.Edges))
			for i := range h.Edges {
				parts[i] = g(h.Edges[i]) + ":" + g(h.Counts[i])
			}
			lines = append(lines, fmt.Sprintf("  histogram %s sum %s buckets %s\n", f, g(h.Sum), strings.Join(parts, " ")))
		}
		sort.Strings(lines)
		b.WriteString(strings.Join(lines, ""))
	}
	return b.String()
}

func TestParseGolden(t *testing.T) {
	for _, tc := range expositions {
		t.Run(tc.file, func(t *testing.T) {
			got := render(mustParse(t, readTestdata(t, tc.file), tc.contentType))
			golden := filepath.Join("testdata", strings.TrimSuffix(tc.file, ".txt")+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("snapshot differs from %s (run with -update and review the diff):\n%s", golden, got)
			}
		})
	}
}

func TestParseSingleProcess(t *testing.T) {
	s := mustParse(t, readTestdata(t, "single_process.txt"), ctText004)
	if len(s.Missing) != 0 {
		t.Errorf("Missing = %v, want none", s.Missing)
	}
	if !s.Time.Equal(scrapeTime) {
		t.Errorf("Time = %v", s.Time)
	}
	if len(s.Models) != 1 {
		t.Fatalf("models = %v, want only %q", keys(s.Models), qwen)
	}
	m := s.Models[qwen]
	if m == nil {
		t.Fatalf("no model %q", qwen)
	}
	// Engines 0 and 1 are summed; request_success over every finished_reason,
	// request_aborted over the abort series only.
	wantCounters := map[Family]float64{PromptTokens: 1000 + 1234, GenerationTokens: 2000 + 2234, RequestSuccess: 45, RequestAborted: 4 + 5}
	if !reflect.DeepEqual(m.Counters, wantCounters) {
		t.Errorf("Counters = %v, want %v", m.Counters, wantCounters)
	}
	wantGauges := map[Family]float64{Running: 0 + 1, Waiting: 3 + 4, KVCacheUsage: 0.125 + 0.25}
	if !reflect.DeepEqual(m.Gauges, wantGauges) {
		t.Errorf("Gauges = %v, want %v", m.Gauges, wantGauges)
	}
	if m.Created != created1 {
		t.Errorf("Created = %v, want the largest _created %v", m.Created, created1)
	}
	if got := s.Found[ITL]; got != "vllm:inter_token_latency_seconds" {
		t.Errorf("Found[ITL] = %q", got)
	}
	if got := s.Found[KVCacheUsage]; got != "vllm:kv_cache_usage_perc" {
		t.Errorf("Found[KVCacheUsage] = %q", got)
	}
	// TTFT, as written in the file: engine 0 has 31 observations, engine 1 has
	// 34, sums 11.47 and 13.08; the 2560 bucket holds 31+33.
	h := m.Histograms[TTFT]
	if !h.Valid() || len(h.Edges) != 23 {
		t.Fatalf("TTFT histogram invalid or wrong size: %+v", h)
	}
	if h.Total() != 31+34 || math.Abs(h.Sum-(11.47+13.08)) > 1e-9 {
		t.Errorf("TTFT total %v sum %v, want 65 and 24.55", h.Total(), h.Sum)
	}
	if h.Edges[21] != 2560 || h.Counts[21] != 31+33 {
		t.Errorf("TTFT le=2560: edge %v count %v, want 2560 and 64", h.Edges[21], h.Counts[21])
	}
	for _, f := range []Family{TTFT, TPOT, ITL, E2E, Queue, Prefill, Decode, Inference, PromptTokensHist, GenerationTokensHist} {
		if !m.Histograms[f].Valid() {
			t.Errorf("histogram %s missing or invalid", f)
		}
	}
	if tok := m.Histograms[PromptTokensHist]; tok.Edges[18] != 1e6 {
		t.Errorf(`le="1e+06" parsed as %v`, tok.Edges[18])
	}
}

// The same data served three ways (single-process text, multi-process text
// with _sum first and pid gauges, OpenMetrics with declaration-order labels and
// integer counts) must parse to the same values.
func TestParseFormatsAgree(t *testing.T) {
	single := mustParse(t, readTestdata(t, "single_process.txt"), ctText004).Models[qwen]
	multi := mustParse(t, readTestdata(t, "multi_process.txt"), ctText100).Models[qwen]
	om := mustParse(t, readTestdata(t, "openmetrics.txt"), ctOM).Models[qwen]
	for name, other := range map[string]*ModelSample{"multi_process": multi, "openmetrics": om} {
		if other == nil {
			t.Fatalf("%s: no model %q", name, qwen)
		}
		if !reflect.DeepEqual(single.Histograms, other.Histograms) {
			t.Errorf("%s: histograms differ from single_process", name)
		}
		if !reflect.DeepEqual(single.Counters, other.Counters) {
			t.Errorf("%s: counters %v, single_process %v", name, other.Counters, single.Counters)
		}
		if other.Created != 0 {
			t.Errorf("%s: Created = %v, want 0 (no _created served)", name, other.Created)
		}
	}
	if !reflect.DeepEqual(single.Gauges, om.Gauges) {
		t.Errorf("openmetrics gauges %v, single_process %v", om.Gauges, single.Gauges)
	}
	// Multi-process: pid-labelled KV gauge, max over pid then sum over engines.
	if got, want := multi.Gauges[KVCacheUsage], 0.125+0.25; got != want {
		t.Errorf("multi_process KV usage = %v, want %v", got, want)
	}
}

func TestParseTwoModels(t *testing.T) {
	s := mustParse(t, readTestdata(t, "two_models.txt"), ctText004)
	if got := keys(s.Models); !slices.Equal(got, []string{qwen, llama}) {
		t.Fatalf("models = %v", got)
	}
	for _, tc := range []struct {
		model          string
		prompt, req    float64
		created, ttftN float64
	}{
		{llama, 1000 + 1234, 45, created1, 31 + 34},
		{qwen, 6000 + 6234, 45 + 10, created1 + 1, 34 + 37},
	} {
		m := s.Models[tc.model]
		if m.Counters[PromptTokens] != tc.prompt || m.Counters[RequestSuccess] != tc.req {
			t.Errorf("%s: prompt tokens %v, requests %v; want %v, %v", tc.model,
				m.Counters[PromptTokens], m.Counters[RequestSuccess], tc.prompt, tc.req)
		}
		if m.Created != tc.created {
			t.Errorf("%s: Created %v, want %v", tc.model, m.Created, tc.created)
		}
		if got := m.Histograms[TTFT].Total(); got != tc.ttftN {
			t.Errorf("%s: TTFT total %v, want %v", tc.model, got, tc.ttftN)
		}
	}
}

func TestParseOldGeneration(t *testing.T) {
	s := mustParse(t, readTestdata(t, "old_generation.txt"), "")
	wantFound := map[Family]string{
		ITL:          "vllm:time_per_output_token_seconds",
		KVCacheUsage: "vllm:gpu_cache_usage_perc",
		TTFT:         "vllm:time_to_first_token_seconds",
	}
	for f, n := range wantFound {
		if s.Found[f] != n {
			t.Errorf("Found[%s] = %q, want %q", f, s.Found[f], n)
		}
	}
	wantMissing := []Family{TPOT, Queue, Prefill, Decode, Inference}
	if !slices.Equal(s.Missing, wantMissing) {
		t.Errorf("Missing = %v, want %v (profile order)", s.Missing, wantMissing)
	}
	m := s.Models["facebook/opt-125m"]
	if m == nil {
		t.Fatalf("models = %v", keys(s.Models))
	}
	// le="1" (not "1.0") is the edge 1.
	if e := m.Histograms[TTFT].Edges; !slices.Contains(e, 1) {
		t.Errorf(`TTFT edges %v lack 1 from le="1"`, e)
	}
	if m.Gauges[KVCacheUsage] != 0.125 {
		t.Errorf("KV usage = %v", m.Gauges[KVCacheUsage])
	}
}

func TestParseOpenMetricsCreated(t *testing.T) {
	s := mustParse(t, readTestdata(t, "openmetrics_created.txt"), ctOM)
	m := s.Models[qwen]
	if m == nil || m.Created != created0 {
		t.Fatalf("Created = %+v, want %v from inline _created samples", m, created0)
	}
	if m.Counters[GenerationTokens] != 2000 {
		t.Errorf("generation tokens = %v, want 2000 (the _total sample of family vllm:generation_tokens)", m.Counters[GenerationTokens])
	}
}

func TestParseContentTypes(t *testing.T) {
	text := readTestdata(t, "single_process.txt")
	om := readTestdata(t, "openmetrics.txt")
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		wantReason        string // "" for success
	}{
		{"empty means text 0.0.4", "", text, ""},
		{"text 0.0.4", ctText004, text, ""},
		{"text 1.0.0 is the same format", ctText100, text, ""},
		{"bare text/plain", "text/plain", text, ""},
		{"openmetrics", ctOM, om, ""},
		{"openmetrics without version", "application/openmetrics-text", om, ""},
		{"unknown type falls back to text", "application/json", text, ""},
		{"unparsable type falls back to text", "text/plain;;;=", text, ""},
		{"openmetrics body read as text", ctText004, om, ""},
		{"text body read as openmetrics lacks # EOF", ctOM, text, ReasonInvalidExposition},
		{"protobuf is refused", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", text, ReasonInvalidExposition},
		{"html is no exposition", "text/html", []byte("<html><body>hello</body></html>\n"), ReasonInvalidExposition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.body, tc.contentType, VLLM, scrapeTime)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if m := s.Models[qwen]; m == nil || m.Counters[GenerationTokens] != 4234 {
					t.Errorf("generation tokens not read: %+v", m)
				}
				return
			}
			if err == nil || FailureReason(err) != tc.wantReason {
				t.Fatalf("err = %v (reason %q), want reason %q", err, FailureReason(err), tc.wantReason)
			}
			if s != nil {
				t.Error("a snapshot came back with an error")
			}
		})
	}
}

// h builds a minimal histogram exposition for model m, engine e.
func hist(name, m, e string, les []string, counts []string, sum string) string {
	var b strings.Builder
	for i := range les {
		fmt.Fprintf(&b, "%s_bucket{engine=%q,le=%q,model_name=%q} %s\n", name, e, les[i], m, counts[i])
	}
	fmt.Fprintf(&b, "%s_count{engine=%q,model_name=%q} %s\n", name, e, m, counts[len(counts)-1])
	if sum != "" {
		fmt.Fprintf(&b, "%s_sum{engine=%q,model_name=%q} %s\n", name, e, m, sum)
	}
	return b.String()
}

const ttftName = "vllm:time_to_first_token_seconds"

func TestParseErrors(t *testing.T) {
	good := hist(ttftName, "m", "0", []string{"0.1", "1.0", "+Inf"}, []string{"1", "2", "3"}, "1.5")
	for _, tc := range []struct {
		name, body string
		reason     string
		line       int    // where the error is
		contains   string // in the message
	}{
		{"syntax error", "# TYPE x gauge\nx 1\n\nvllm:num_requests_running{model_name=\"m\" 3\n", ReasonInvalidExposition, 4, "line 4"},
		{"garbage first line", "hello world\n", ReasonInvalidExposition, 1, ""},
		{"no +Inf bucket", hist(ttftName, "m", "0", []string{"0.1", "1.0"}, []string{"1", "2"}, "1"), ReasonInvalidHistogram, 2, "no +Inf bucket (highest le=1)"},
		{"non-monotonic buckets", hist(ttftName, "m", "0", []string{"0.1", "1.0", "+Inf"}, []string{"2", "1", "3"}, "1"), ReasonInvalidHistogram, 2, "below"},
		{"negative _sum", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"1", "2"}, "-0.5"), ReasonInvalidValue, 4, "_sum -0.5"},
		{"missing _sum", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"1", "2"}, ""), ReasonInvalidHistogram, 1, "no _sum"},
		{"bad le", hist(ttftName, "m", "0", []string{"fast", "+Inf"}, []string{"1", "2"}, "1"), ReasonInvalidHistogram, 1, "fast"},
		{"NaN le", hist(ttftName, "m", "0", []string{"NaN", "+Inf"}, []string{"1", "2"}, "1"), ReasonInvalidHistogram, 1, ""},
		{"bucket without le", "vllm:time_to_first_token_seconds_bucket{model_name=\"m\"} 1\n", ReasonInvalidHistogram, 1, "le"},
		{"NaN bucket count", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"NaN", "2"}, "1"), ReasonInvalidValue, 1, "NaN"},
		{"negative bucket count", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"-1", "2"}, "1"), ReasonInvalidValue, 1, ""},
		{"infinite bucket count", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"1", "+Inf"}, "1"), ReasonInvalidValue, 2, ""},
		{"NaN sum", hist(ttftName, "m", "0", []string{"0.1", "+Inf"}, []string{"1", "2"}, "NaN"), ReasonInvalidValue, 4, ""},
		{"NaN counter", "vllm:generation_tokens_total{model_name=\"m\"} NaN\n", ReasonInvalidValue, 1, ""},
		{"negative counter", "# HELP h\nvllm:generation_tokens_total{model_name=\"m\"} -3\n", ReasonInvalidValue, 2, "-3"},
		{"infinite counter", "vllm:request_success_total{model_name=\"m\"} +Inf\n", ReasonInvalidValue, 1, ""},
		{"NaN gauge", "vllm:num_requests_running{model_name=\"m\"} NaN\n", ReasonInvalidValue, 1, ""},
		{"NaN _created", "vllm:generation_tokens_total{model_name=\"m\"} 3\nvllm:generation_tokens_created{model_name=\"m\"} NaN\n", ReasonInvalidValue, 2, "_created NaN"},
		{"duplicate counter", "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 3\nvllm:generation_tokens_total{model_name=\"m\",engine=\"0\"} 3\n", ReasonDuplicateSeries, 2, ""},
		{"duplicate gauge with pid", "vllm:num_requests_running{pid=\"1\",model_name=\"m\"} 3\nvllm:num_requests_running{pid=\"1\",model_name=\"m\"} 3\n", ReasonDuplicateSeries, 2, ""},
		{"duplicate bucket 1 vs 1.0", good + "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1\",model_name=\"m\"} 2\n", ReasonDuplicateSeries, 6, "seen twice"},
		{"duplicate _sum", good + "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 1.5\n", ReasonDuplicateSeries, 6, ""},
		{"duplicate _count", good + "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 3\n", ReasonDuplicateSeries, 6, ""},
		{"counter sum overflows", "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1e308\nvllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 1e308\n", ReasonInvalidValue, 2, "overflows"},
		{"histogram sum overflows", hist(ttftName, "m", "0", []string{"+Inf"}, []string{"1e308"}, "1") + hist(ttftName, "m", "1", []string{"+Inf"}, []string{"1e308"}, "1"), ReasonInvalidValue, 4, "overflows"},
		{"layout mismatch across engines", good + hist(ttftName, "m", "1", []string{"0.5", "+Inf"}, []string{"1", "2"}, "1"), ReasonInvalidHistogram, 6, `model "m"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.body), "", VLLM, scrapeTime)
			if err == nil {
				t.Fatalf("no error; snapshot %s", render(s))
			}
			if s != nil {
				t.Error("a snapshot came back with an error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v is not a *ParseError", err)
			}
			if pe.Reason != tc.reason {
				t.Errorf("reason %q, want %q (err: %v)", pe.Reason, tc.reason, err)
			}
			if pe.Line != tc.line {
				t.Errorf("line %d, want %d (err: %v)", pe.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("message %q lacks %q", err.Error(), tc.contains)
			}
		})
	}
}

func TestParseSemantics(t *testing.T) {
	for _, tc := range []struct {
		name        string
		body        string
		contentType string
		check       func(t *testing.T, s *Snapshot)
	}{
		{
			name: "no model_name goes under the empty model",
			body: "vllm:num_requests_running 4\nvllm:num_requests_running{engine=\"1\"} 1\n",
			check: func(t *testing.T, s *Snapshot) {
				if m := s.Models[""]; m == nil || m.Gauges[Running] != 5 {
					t.Errorf("model \"\" = %+v, want running 5", m)
				}
			},
		},
		{
			name: "TYPE without samples is missing",
			body: "# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\n",
			check: func(t *testing.T, s *Snapshot) {
				if _, ok := s.Found[Running]; ok || !slices.Contains(s.Missing, Running) {
					t.Errorf("Found %v Missing %v", s.Found, s.Missing)
				}
				if len(s.Models) != 0 {
					t.Errorf("models %v, want none", keys(s.Models))
				}
			},
		},
		{
			name: "empty body: every family missing but the optional ones",
			body: "",
			check: func(t *testing.T, s *Snapshot) {
				if len(s.Missing) != len(VLLM.Families)-optionalFamilies(VLLM) || len(s.Found) != 0 || slices.ContainsFunc(s.Missing, Family.Optional) {
					t.Errorf("Missing %v Found %v", s.Missing, s.Found)
				}
			},
		},
		{
			name: "wrong TYPE: not used",
			body: "# TYPE vllm:num_requests_running counter\nvllm:num_requests_running{model_name=\"m\"} 4\n" +
				"# TYPE vllm:kv_cache_usage_perc untyped\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n",
			check: func(t *testing.T, s *Snapshot) {
				if !slices.Contains(s.Missing, Running) {
					t.Errorf("a gauge declared counter was used: Missing %v", s.Missing)
				}
				if s.Models["m"].Gauges[KVCacheUsage] != 0.5 {
					t.Errorf("an untyped family was not used: %+v", s.Models["m"])
				}
			},
		},
		{
			name: "newest generation wins when both are served",
			body: "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n",
			check: func(t *testing.T, s *Snapshot) {
				if s.Found[KVCacheUsage] != "vllm:kv_cache_usage_perc" || s.Models["m"].Gauges[KVCacheUsage] != 0.5 {
					t.Errorf("Found %v, gauges %v", s.Found, s.Models["m"].Gauges)
				}
			},
		},
		{
			name: "old generation only with _created alone is missing",
			body: "vllm:time_to_first_token_seconds_created{model_name=\"m\"} 17\n",
			check: func(t *testing.T, s *Snapshot) {
				if !slices.Contains(s.Missing, TTFT) || len(s.Models) != 0 {
					t.Errorf("Missing %v models %v", s.Missing, keys(s.Models))
				}
			},
		},
		{
			name: "buckets in any order, labels in any order",
			body: "vllm:time_to_first_token_seconds_sum{model_name=\"m\",engine=\"0\"} 2\n" +
				"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\",engine=\"0\"} 3\n" +
				"vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.5\"} 2\n" +
				"vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.1\",engine=\"0\"} 1\n",
			check: func(t *testing.T, s *Snapshot) {
				want := slo.Histogram{Edges: []float64{0.1, 0.5, math.Inf(1)}, Counts: []float64{1, 2, 3}, Sum: 2}
				if got := s.Models["m"].Histograms[TTFT]; !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "engines and pids of a histogram are summed",
			body: hist(ttftName, "m", "0", []string{"1", "+Inf"}, []string{"1", "2"}, "1") +
				hist(ttftName, "m", "1", []string{"1.0", "+Inf"}, []string{"3", "5"}, "4"),
			check: func(t *testing.T, s *Snapshot) {
				want := slo.Histogram{Edges: []float64{1, math.Inf(1)}, Counts: []float64{4, 7}, Sum: 5}
				if got := s.Models["m"].Histograms[TTFT]; !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "quoted metric name inside braces",
			body: "{\"vllm:num_requests_running\",model_name=\"m\"} 3\n",
			check: func(t *testing.T, s *Snapshot) {
				if m := s.Models["m"]; m == nil || m.Gauges[Running] != 3 {
					t.Errorf("model m = %+v, want running 3", m)
				}
			},
		},
		{
			name: "a body without a final newline",
			body: "vllm:num_requests_waiting{model_name=\"m\"} 2",
			check: func(t *testing.T, s *Snapshot) {
				if m := s.Models["m"]; m == nil || m.Gauges[Waiting] != 2 {
					t.Errorf("model m = %+v, want waiting 2", m)
				}
			},
		},
		{
			name: "timestamps on samples are accepted",
			body: "vllm:num_requests_waiting{model_name=\"m\"} 2 1700000000000\n",
			check: func(t *testing.T, s *Snapshot) {
				if m := s.Models["m"]; m == nil || m.Gauges[Waiting] != 2 {
					t.Errorf("model m = %+v, want waiting 2", m)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.body), tc.contentType, VLLM, scrapeTime)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, s)
		})
	}
}

// The profile is data: SGLang's names are read just as vLLM's.
func TestParseSGLangProfile(t *testing.T) {
	body := "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 7\n" +
		"# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total{model_name=\"m\"} 99\n"
	s, err := Parse([]byte(body), "", SGLang, scrapeTime)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Models["m"]
	if m == nil || m.Gauges[Running] != 7 || m.Counters[GenerationTokens] != 99 {
		t.Errorf("model m = %+v", m)
	}
	if s.Found[Running] != "sglang:num_running_reqs" {
		t.Errorf("Found = %v", s.Found)
	}
}

// A Parse must not modify the caller's body, even one without a final newline
// and with spare capacity.
func TestParseKeepsBody(t *testing.T) {
	buf := make([]byte, 0, 256)
	buf = append(buf, "vllm:num_requests_waiting{model_name=\"m\"} 2"...)
	orig := string(buf)
	if _, err := Parse(buf, "", VLLM, scrapeTime); err != nil {
		t.Fatal(err)
	}
	if string(buf) != orig || string(buf[:len(buf)+1][len(buf):]) != "\x00" {
		t.Errorf("body or its spare capacity changed")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
