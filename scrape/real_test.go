package scrape_test

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// realCapture is one exposition captured from a real server by someone else
// (testdata/real/SOURCES.md says where each comes from), with what its
// profile must make of it.
type realCapture struct {
	file    string
	profile scrape.Profile
	models  []string
	// found is the exposed name each present family must be read from.
	found map[scrape.Family]string
	// missing is what the profile maps and the capture lacks, in profile order.
	missing []scrape.Family
	// drop, when set, removes the families of that exposed name from the
	// capture first: a server of the version before the family existed.
	drop string
	// children is how many series (engines, finish reasons, ranks) each
	// family has per model; a bump adds to every one of them.
	children map[scrape.Family]float64
	// counters are values the capture's counters must read as, per model
	// (each capture here serves one model), as written in the file.
	counters map[scrape.Family]float64
}

var realCaptures = []realCapture{
	{
		file:    "01-hwrouter-v1-engine0.prom",
		profile: scrape.VLLM,
		models:  []string{"Qwen/Qwen1.5-0.5B-Chat"},
		found: map[scrape.Family]string{
			scrape.TTFT:                 "vllm:time_to_first_token_seconds",
			scrape.TPOT:                 "vllm:request_time_per_output_token_seconds",
			scrape.ITL:                  "vllm:inter_token_latency_seconds", // the deprecated time_per_output_token_seconds is beside it
			scrape.E2E:                  "vllm:e2e_request_latency_seconds",
			scrape.Queue:                "vllm:request_queue_time_seconds",
			scrape.Prefill:              "vllm:request_prefill_time_seconds",
			scrape.Decode:               "vllm:request_decode_time_seconds",
			scrape.Inference:            "vllm:request_inference_time_seconds",
			scrape.PromptTokensHist:     "vllm:request_prompt_tokens",
			scrape.GenerationTokensHist: "vllm:request_generation_tokens",
			scrape.PromptTokens:         "vllm:prompt_tokens_total",
			scrape.GenerationTokens:     "vllm:generation_tokens_total",
			scrape.RequestSuccess:       "vllm:request_success_total",
			scrape.RequestAborted:       abortSeries,
			scrape.Running:              "vllm:num_requests_running",
			scrape.Waiting:              "vllm:num_requests_waiting",
			scrape.KVCacheUsage:         "vllm:kv_cache_usage_perc",
			scrape.Preemptions:          "vllm:num_preemptions_total",
		},
		children: map[scrape.Family]float64{scrape.RequestSuccess: 3}, // stop, length, abort
		counters: map[scrape.Family]float64{scrape.RequestSuccess: 0, scrape.RequestAborted: 0, scrape.Preemptions: 0},
	},
	{
		// vLLM 0.10 served the same but had no per-request TPOT histogram.
		file:    "01-hwrouter-v1-engine0.prom",
		drop:    "vllm:request_time_per_output_token_seconds",
		profile: scrape.VLLM,
		models:  []string{"Qwen/Qwen1.5-0.5B-Chat"},
		found: map[scrape.Family]string{
			scrape.TTFT:                 "vllm:time_to_first_token_seconds",
			scrape.ITL:                  "vllm:inter_token_latency_seconds",
			scrape.E2E:                  "vllm:e2e_request_latency_seconds",
			scrape.Queue:                "vllm:request_queue_time_seconds",
			scrape.Prefill:              "vllm:request_prefill_time_seconds",
			scrape.Decode:               "vllm:request_decode_time_seconds",
			scrape.Inference:            "vllm:request_inference_time_seconds",
			scrape.PromptTokensHist:     "vllm:request_prompt_tokens",
			scrape.GenerationTokensHist: "vllm:request_generation_tokens",
			scrape.PromptTokens:         "vllm:prompt_tokens_total",
			scrape.GenerationTokens:     "vllm:generation_tokens_total",
			scrape.RequestSuccess:       "vllm:request_success_total",
			scrape.RequestAborted:       abortSeries,
			scrape.Running:              "vllm:num_requests_running",
			scrape.Waiting:              "vllm:num_requests_waiting",
			scrape.KVCacheUsage:         "vllm:kv_cache_usage_perc",
			scrape.Preemptions:          "vllm:num_preemptions_total",
		},
		missing:  []scrape.Family{scrape.TPOT},
		children: map[scrape.Family]float64{scrape.RequestSuccess: 3},
		counters: map[scrape.Family]float64{scrape.RequestSuccess: 0, scrape.RequestAborted: 0},
	},
	{
		file:    "02-datadog-vllm-v0mixed.prom",
		profile: scrape.VLLM,
		models:  []string{"facebook/opt-125m"},
		found: map[scrape.Family]string{
			scrape.TTFT:                 "vllm:time_to_first_token_seconds",
			scrape.TPOT:                 "vllm:request_time_per_output_token_seconds",
			scrape.ITL:                  "vllm:inter_token_latency_seconds",
			scrape.E2E:                  "vllm:e2e_request_latency_seconds",
			scrape.Queue:                "vllm:request_queue_time_seconds",
			scrape.Prefill:              "vllm:request_prefill_time_seconds",
			scrape.Decode:               "vllm:request_decode_time_seconds",
			scrape.Inference:            "vllm:request_inference_time_seconds",
			scrape.PromptTokensHist:     "vllm:request_prompt_tokens",
			scrape.GenerationTokensHist: "vllm:request_generation_tokens",
			scrape.PromptTokens:         "vllm:prompt_tokens_total",
			scrape.GenerationTokens:     "vllm:generation_tokens_total",
			scrape.RequestSuccess:       "vllm:request_success_total",
			scrape.Running:              "vllm:num_requests_running",
			scrape.Waiting:              "vllm:num_requests_waiting",
			scrape.KVCacheUsage:         "vllm:kv_cache_usage_perc", // gpu_cache_usage_perc is beside it
			scrape.Preemptions:          "vllm:num_preemptions_total",
			scrape.PromptTokensComputed: `vllm:prompt_tokens_by_source_total{source="local_compute"}`,
			scrape.PromptTokensCached:   `vllm:prompt_tokens_by_source_total{source="local_cache_hit"}`,
			scrape.PromptTokensExternal: `vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}`,
		},
		// V0 creates a finish reason's series at its first request: this
		// server finished one by length and none by abort.
		missing: []scrape.Family{scrape.RequestAborted},
		counters: map[scrape.Family]float64{scrape.RequestSuccess: 1, scrape.Preemptions: 0,
			scrape.PromptTokensComputed: 53, scrape.PromptTokensCached: 64, scrape.PromptTokensExternal: 0},
	},
	{
		file:    "06-datadog-sglang-0.5.10.prom",
		profile: scrape.SGLang,
		models:  []string{"facebook/opt-125m"},
		found: map[scrape.Family]string{
			scrape.TTFT:                 "sglang:time_to_first_token_seconds",
			scrape.ITL:                  "sglang:inter_token_latency_seconds",
			scrape.E2E:                  "sglang:e2e_request_latency_seconds",
			scrape.Queue:                "sglang:queue_time_seconds",
			scrape.PromptTokensHist:     "sglang:prompt_tokens_histogram",
			scrape.GenerationTokensHist: "sglang:generation_tokens_histogram",
			scrape.PromptTokens:         "sglang:prompt_tokens_total",
			scrape.GenerationTokens:     "sglang:generation_tokens_total",
			scrape.RequestSuccess:       "sglang:num_requests_total",
			scrape.Running:              "sglang:num_running_reqs",
			scrape.Waiting:              "sglang:num_queue_reqs",
			scrape.KVCacheUsage:         "sglang:token_usage",
		},
		// SGLang's aborted-request counter has no series before its first abort.
		missing:  []scrape.Family{scrape.RequestAborted},
		counters: map[scrape.Family]float64{scrape.RequestSuccess: 1},
	},
	{
		file:    "07-llmd-inference-sim.prom",
		profile: scrape.VLLM,
		models:  []string{"fake-model"},
		found: map[scrape.Family]string{
			scrape.TTFT:                 "vllm:time_to_first_token_seconds",
			scrape.TPOT:                 "vllm:request_time_per_output_token_seconds",
			scrape.ITL:                  "vllm:inter_token_latency_seconds", // the deprecated time_per_output_token_seconds is beside it
			scrape.E2E:                  "vllm:e2e_request_latency_seconds",
			scrape.Prefill:              "vllm:request_prefill_time_seconds",
			scrape.Decode:               "vllm:request_decode_time_seconds",
			scrape.Inference:            "vllm:request_inference_time_seconds",
			scrape.PromptTokensHist:     "vllm:request_prompt_tokens",
			scrape.GenerationTokensHist: "vllm:request_generation_tokens",
			scrape.PromptTokens:         "vllm:prompt_tokens_total",
			scrape.GenerationTokens:     "vllm:generation_tokens_total",
			scrape.RequestSuccess:       "vllm:request_success_total",
			scrape.Running:              "vllm:num_requests_running",
			scrape.Waiting:              "vllm:num_requests_waiting",
			scrape.KVCacheUsage:         "vllm:kv_cache_usage_perc",
		},
		// The emulator observes queue time only for a request that waited
		// for a worker (none of these three did), and labels its counter
		// finish_reason, which the abort series' finished_reason never
		// matches (it counts no abort either).
		missing:  []scrape.Family{scrape.Queue, scrape.RequestAborted},
		counters: map[scrape.Family]float64{scrape.RequestSuccess: 3, scrape.PromptTokens: 17, scrape.GenerationTokens: 10},
	},
}

// abortSeries is the profile name of vLLM's aborted requests.
const abortSeries = `vllm:request_success_total{finished_reason="abort"}`

var captureTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func readCapture(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "real", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// body is the capture as the test reads it: the file, less the dropped family.
func (c realCapture) body(t *testing.T) []byte {
	t.Helper()
	b := readCapture(t, c.file)
	if c.drop == "" {
		return b
	}
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, c.drop) {
			out.WriteString(line)
		}
	}
	if out.Len() == len(b) {
		t.Fatalf("%s holds no %s to drop", c.file, c.drop)
	}
	return out.Bytes()
}

// name tells the cases apart in test names.
func (c realCapture) name() string {
	if c.drop == "" {
		return c.file
	}
	return c.file + "-without-" + strings.TrimPrefix(c.drop, "vllm:")
}

func parseCapture(t *testing.T, body []byte, contentType string, p scrape.Profile, at time.Time) *scrape.Snapshot {
	t.Helper()
	snap, err := scrape.Parse(body, contentType, p, at)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return snap
}

// checkFamilies compares what a snapshot found and missed with the capture's
// expectations.
func checkFamilies(t *testing.T, c realCapture, snap *scrape.Snapshot) {
	t.Helper()
	if !maps.Equal(snap.Found, c.found) {
		t.Errorf("found %v, want %v", snap.Found, c.found)
	}
	if !slices.Equal(snap.Missing, c.missing) {
		t.Errorf("missing %v, want %v", snap.Missing, c.missing)
	}
	if got := slices.Sorted(maps.Keys(snap.Models)); !slices.Equal(got, c.models) {
		t.Errorf("models %v, want %v", got, c.models)
	}
	for _, ms := range snap.Models {
		for f, want := range c.counters {
			if got, ok := ms.Counters[f]; !ok || got != want {
				t.Errorf("counter %s = %v (present %v), want %v as in the file", f, got, ok, want)
			}
		}
	}
}

// TestRealCapturesParse parses each capture with its profile and checks
// which families are found, under which name, and which are missing.
func TestRealCapturesParse(t *testing.T) {
	for _, c := range realCaptures {
		t.Run(c.name(), func(t *testing.T) {
			checkFamilies(t, c, parseCapture(t, c.body(t), "", c.profile, captureTime))
		})
	}
}

// TestRealCapturesOpenMetrics re-encodes each capture as OpenMetrics (as
// prometheus_client serves it to a scraper that asks) and checks that the
// snapshot is the one the text format gives.
func TestRealCapturesOpenMetrics(t *testing.T) {
	for _, c := range realCaptures {
		t.Run(c.name(), func(t *testing.T) {
			body := c.body(t)
			om := toOpenMetrics(t, body)
			text := parseCapture(t, body, "", c.profile, captureTime)
			got := parseCapture(t, om, string(expfmt.NewFormat(expfmt.TypeOpenMetrics)), c.profile, captureTime)
			checkFamilies(t, c, got)
			for name, want := range text.Models {
				g := got.Models[name]
				if g == nil {
					t.Fatalf("model %q missing from the OpenMetrics snapshot", name)
				}
				if !maps.EqualFunc(g.Histograms, want.Histograms, sameHistogram) ||
					!maps.Equal(g.Counters, want.Counters) || !maps.Equal(g.Gauges, want.Gauges) {
					t.Errorf("model %q: OpenMetrics snapshot\n%+v\ndiffers from the text one\n%+v", name, g, want)
				}
			}
		})
	}
}

func sameHistogram(a, b slo.Histogram) bool {
	return slices.Equal(a.Edges, b.Edges) && slices.Equal(a.Counts, b.Counts) && a.Sum == b.Sum
}

// toOpenMetrics converts a classic text exposition to OpenMetrics 1.0 with
// Prometheus's own decoder and encoder. Classic `_created` gauge families
// are left out: OpenMetrics carries creation times on their counters and
// histograms instead, and the encoder would clash with those names. The
// decoder wants a final newline, which one capture lacks.
func toOpenMetrics(t *testing.T, body []byte) []byte {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if !bytes.HasSuffix(body, []byte("\n")) {
		body = append(slices.Clip(body), '\n')
	}
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("decode text: %v", err)
	}
	var out bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(families)) {
		if strings.HasSuffix(name, "_created") {
			continue
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(&out, families[name]); err != nil {
			t.Fatalf("encode %s: %v", name, err)
		}
	}
	out.WriteString("# EOF\n")
	return out.Bytes()
}

// TestRealCapturesWrongProfile checks that a capture read with another
// engine's profile finds nothing, so the exporter can say the target does
// not look like that engine.
func TestRealCapturesWrongProfile(t *testing.T) {
	for _, c := range realCaptures {
		for _, p := range []scrape.Profile{scrape.VLLM, scrape.RayVLLM, scrape.SGLang} {
			if p.Name == c.profile.Name {
				continue
			}
			t.Run(c.name()+"/"+p.Name, func(t *testing.T) {
				snap := parseCapture(t, c.body(t), "", p, captureTime)
				if len(snap.Found) != 0 || len(snap.Missing) != len(p.Families)-optionalCount(p) {
					t.Errorf("found %v, missing %d of %d", snap.Found, len(snap.Missing), len(p.Families))
				}
			})
		}
	}
}

// bumpSpec is what a bump adds to each series: k observations of value v to
// every histogram (its buckets at or above v, its count and sum), and
// k·step to every counter.
type bumpSpec struct {
	k          float64
	latency    float64 // the value observed in latency histograms, seconds
	tokens     float64 // the value observed in token-count histograms
	tokenStep  float64 // per observation, added to the token counters
	requestInc float64 // per observation, added to the finished-request counter
}

var leRE = regexp.MustCompile(`le="([^"]*)"`)

// bump returns a copy of a classic text exposition in which the series of the
// families p maps (under their exposed names) have grown as b says; every
// other line, `_created` values included, is unchanged (no restart).
func bump(t *testing.T, body []byte, p scrape.Profile, b bumpSpec) []byte {
	t.Helper()
	role := map[string]func(le string, v float64) float64{}
	for _, spec := range p.Families {
		for _, n := range spec.Names {
			switch spec.Kind {
			case scrape.KindHistogram:
				obs := b.latency
				if spec.Family == scrape.PromptTokensHist || spec.Family == scrape.GenerationTokensHist {
					obs = b.tokens
				}
				role[n+"_bucket"] = func(le string, v float64) float64 {
					edge, err := strconv.ParseFloat(le, 64)
					if err != nil {
						t.Fatalf("le %q: %v", le, err)
					}
					if obs <= edge {
						return v + b.k
					}
					return v
				}
				role[n+"_count"] = func(_ string, v float64) float64 { return v + b.k }
				role[n+"_sum"] = func(_ string, v float64) float64 { return v + b.k*obs }
			case scrape.KindCounter:
				step := b.tokenStep
				if spec.Family == scrape.RequestSuccess {
					step = b.requestInc
				}
				role[n] = func(_ string, v float64) float64 { return v + b.k*step }
			}
		}
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(body), "\n") {
		out.WriteString(bumpLine(t, line, role))
	}
	return out.Bytes()
}

// bumpLine rewrites the value of one sample line whose name has a role.
func bumpLine(t *testing.T, line string, role map[string]func(le string, v float64) float64) string {
	text := strings.TrimRight(line, "\n")
	if text == "" || text[0] == '#' {
		return line
	}
	name := text[:strings.IndexAny(text, "{ ")]
	f, ok := role[name]
	if !ok {
		return line
	}
	sp := strings.LastIndexByte(text, ' ')
	v, err := strconv.ParseFloat(text[sp+1:], 64)
	if err != nil {
		t.Fatalf("value of %q: %v", text, err)
	}
	le := ""
	if m := leRE.FindStringSubmatch(text[:sp]); m != nil {
		le = m[1]
	}
	return text[:sp+1] + strconv.FormatFloat(f(le, v), 'g', -1, 64) + line[len(text):]
}

// TestRealCapturesReplayBumped appends a capture and a bumped copy of it
// (scraped 15 s later, no restart) to a history and checks that the window
// between them holds exactly what the bump added: the data of a real server
// flows through the pipeline's history unchanged.
func TestRealCapturesReplayBumped(t *testing.T) {
	b := bumpSpec{k: 4, latency: 0.0625, tokens: 10, tokenStep: 25, requestInc: 1}
	for _, c := range realCaptures {
		t.Run(c.name(), func(t *testing.T) {
			body := c.body(t)
			later := captureTime.Add(15 * time.Second)
			h := history.New(history.NewRetention(5*time.Minute, 24*time.Hour))
			for _, s := range []*scrape.Snapshot{
				parseCapture(t, body, "", c.profile, captureTime),
				parseCapture(t, bump(t, body, c.profile, b), "", c.profile, later),
			} {
				if err := h.Append(s); err != nil {
					t.Fatal(err)
				}
			}
			if h.Resets() != 0 {
				t.Errorf("a bump is not a restart, yet %d resets", h.Resets())
			}
			for _, model := range c.models {
				w, ok := h.Window(model, later, 15*time.Second, history.Options{})
				if !ok {
					t.Fatalf("model %q: no window", model)
				}
				checkBumpedWindow(t, c, b, w)
			}
		})
	}
}

// checkBumpedWindow compares a window's increases with the bump's.
func checkBumpedWindow(t *testing.T, c realCapture, b bumpSpec, w slo.Window) {
	t.Helper()
	children := func(f scrape.Family) float64 {
		if n, ok := c.children[f]; ok {
			return n
		}
		return 1
	}
	for f := range c.found {
		switch f {
		case scrape.PromptTokensHist:
			checkBumpedHistogram(t, string(f), w.PromptTokens, b.k*children(f), b.tokens)
		case scrape.GenerationTokensHist:
			checkBumpedHistogram(t, string(f), w.GenerationTokens, b.k*children(f), b.tokens)
		case scrape.PromptTokens:
			want := b.k * b.tokenStep * children(f)
			if !w.HasTokenCounters || w.PromptTokensTotal != want {
				t.Errorf("prompt tokens: increase %v (present %v), want %v", w.PromptTokensTotal, w.HasTokenCounters, want)
			}
		case scrape.GenerationTokens:
			if want := b.k * b.tokenStep * children(f); w.GenerationTokensTotal != want {
				t.Errorf("generation tokens: increase %v, want %v", w.GenerationTokensTotal, want)
			}
		case scrape.RequestSuccess:
			if want := b.k * b.requestInc * children(f); !w.HasRequestSuccess || w.RequestSuccess != want {
				t.Errorf("finished requests: increase %v (present %v), want %v", w.RequestSuccess, w.HasRequestSuccess, want)
			}
		case scrape.RequestAborted:
			// The bump grows every finish reason's series, abort's among them.
			if want := b.k * b.requestInc; !w.HasRequestAborted || w.RequestAborted != want {
				t.Errorf("aborted requests: increase %v (present %v), want %v", w.RequestAborted, w.HasRequestAborted, want)
			}
		case scrape.Preemptions:
			if want := b.k * b.tokenStep * children(f); !w.HasPreemptions || w.Preemptions != want {
				t.Errorf("preemptions: increase %v (present %v), want %v", w.Preemptions, w.HasPreemptions, want)
			}
		case scrape.PromptTokensComputed, scrape.PromptTokensCached, scrape.PromptTokensExternal:
			// The bump leaves prompt_tokens_by_source alone: no increase.
			if !w.HasPromptSources || w.PromptTokensComputed != 0 || w.PromptTokensCached != 0 || w.PromptTokensExternal != 0 {
				t.Errorf("prompt tokens by source: %v %v %v (present %v), want a present 0", w.PromptTokensComputed, w.PromptTokensCached, w.PromptTokensExternal, w.HasPromptSources)
			}
		case scrape.Running, scrape.Waiting, scrape.KVCacheUsage, scrape.WaitingCapacity, scrape.WaitingDeferred:
		default:
			checkBumpedHistogram(t, string(f), w.Latency[slo.Metric(f)], b.k*children(f), b.latency)
		}
	}
}

// checkBumpedHistogram checks that n observations of v are all a histogram's
// increase holds: none below v's bucket, n from it on, and a sum of n·v (the
// sums are floats subtracted from each other, so within a few ulps).
func checkBumpedHistogram(t *testing.T, name string, h slo.Histogram, n, v float64) {
	t.Helper()
	if !h.Valid() {
		t.Errorf("%s: no valid increase: %+v", name, h)
		return
	}
	for i, e := range h.Edges {
		want := 0.0
		if v <= e {
			want = n
		}
		if h.Counts[i] != want {
			t.Errorf("%s: le=%v increased by %v, want %v", name, e, h.Counts[i], want)
		}
	}
	if math.Abs(h.Sum-n*v) > 1e-9*math.Max(1, n*v) {
		t.Errorf("%s: sum increased by %v, want %v", name, h.Sum, n*v)
	}
}

// rayReexport turns a vLLM capture into what Ray's metrics agent serves for
// two Serve replicas of it: the prefix Ray gives vLLM's names (sep is ":" for
// vLLM before its OpenTelemetry sanitising, "_" after), Ray's labels on every
// series, one copy per replica, and no `_created` series (Ray has none).
// The bodies are constructed from Ray's naming rules, not captured.
func rayReexport(t *testing.T, replicas [][]byte, sep string) []byte {
	t.Helper()
	var out bytes.Buffer
	rename := func(s string) string { return strings.ReplaceAll(s, "vllm:", "ray_vllm"+sep) }
	type family struct {
		header []string
		lines  [][]string // per replica
	}
	var order []string
	families := map[string]*family{}
	for r, body := range replicas {
		current := ""
		for line := range strings.Lines(string(body)) {
			line = strings.TrimRight(line, "\n")
			if line == "" || !strings.Contains(line, "vllm:") {
				continue
			}
			if strings.HasPrefix(line, "# ") {
				fields := strings.Fields(line)
				current = fields[2]
				if families[current] == nil {
					families[current] = &family{lines: make([][]string, len(replicas))}
					order = append(order, current)
				}
				if r == 0 {
					families[current].header = append(families[current].header, rename(line))
				}
				continue
			}
			if strings.HasSuffix(current, "_created") {
				continue
			}
			labels := fmt.Sprintf(`Component="core_worker",NodeAddress="10.0.0.7",ReplicaId="llm:replica-%d",SessionName="session_2026",Version="2.52.0",WorkerId="worker-%d",`, r, r)
			line = strings.Replace(rename(line), "{", "{"+labels, 1)
			families[current].lines[r] = append(families[current].lines[r], line)
		}
	}
	for _, name := range order {
		if strings.HasSuffix(name, "_created") {
			continue
		}
		f := families[name]
		for _, h := range f.header {
			out.WriteString(h + "\n")
		}
		for _, ls := range f.lines {
			for _, l := range ls {
				out.WriteString(l + "\n")
			}
		}
	}
	return out.Bytes()
}

// TestRayServeReexport reads vLLM's series as Ray Serve re-exports them, in
// both spellings, for two replicas: replica 0 serves the capture, replica 1
// the bumped copy, so the model's totals are the sum of both and the window
// from (capture, capture) to (capture, bumped) holds exactly the bump.
func TestRayServeReexport(t *testing.T) {
	c := realCaptures[0]
	b := bumpSpec{k: 3, latency: 0.0625, tokens: 10, tokenStep: 7, requestInc: 1}
	body := readCapture(t, c.file)
	bumped := bump(t, body, scrape.VLLM, b)
	for _, sep := range []string{"_", ":"} {
		t.Run("ray_vllm"+sep, func(t *testing.T) {
			ray := realCapture{file: c.file, profile: scrape.RayVLLM, models: c.models, found: map[scrape.Family]string{}, children: c.children,
				counters: map[scrape.Family]float64{scrape.RequestSuccess: 0, scrape.RequestAborted: 0}}
			for f, name := range c.found {
				ray.found[f] = strings.Replace(name, "vllm:", "ray_vllm"+sep, 1)
			}
			before := parseCapture(t, rayReexport(t, [][]byte{body, body}, sep), "", scrape.RayVLLM, captureTime)
			checkFamilies(t, ray, before)
			later := captureTime.Add(15 * time.Second)
			after := parseCapture(t, rayReexport(t, [][]byte{body, bumped}, sep), "", scrape.RayVLLM, later)
			h := history.New(history.NewRetention(5*time.Minute, 24*time.Hour))
			for _, s := range []*scrape.Snapshot{before, after} {
				if err := h.Append(s); err != nil {
					t.Fatal(err)
				}
			}
			w, ok := h.Window(c.models[0], later, 15*time.Second, history.Options{})
			if !ok {
				t.Fatal("no window")
			}
			checkBumpedWindow(t, ray, b, w)
		})
	}
}

// optionalCount counts a profile's optional families (never missing).
func optionalCount(p scrape.Profile) int {
	n := 0
	for _, f := range p.Families {
		if f.Family.Optional() {
			n++
		}
	}
	return n
}
