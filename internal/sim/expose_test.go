package sim_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestTokenBuckets(t *testing.T) {
	tests := []struct {
		max  int
		n    int
		last float64
	}{{4096, 11, 2000}, {32768, 14, 20000}, {131072, 16, 100000}, {1048576, 19, 1e6}, {1, 1, 1}}
	for _, tt := range tests {
		b := sim.TokenBuckets(tt.max)
		if len(b) != tt.n || b[len(b)-1] != tt.last || b[0] != 1 {
			t.Errorf("TokenBuckets(%d) = %v, want %d edges ending %v", tt.max, b, tt.n, tt.last)
		}
	}
}

var labelSetRE = regexp.MustCompile(`\{([^}]*)\}`)

// labelNames returns the label names of a sample line in written order.
func labelNames(line string) []string {
	m := labelSetRE.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	var names []string
	for _, kv := range strings.Split(m[1], ",") {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// TestStylesParse renders one state in every style, parses each with
// Prometheus's textparse, and checks the properties of each format.
func TestStylesParse(t *testing.T) {
	cfg, err := sim.Preset("multi-model", 5, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, cfg)
	s.Advance(90 * time.Second)
	ttftCount := -1.0
	styles := []struct {
		name string
		st   sim.Style
		ct   string
	}{
		{"single", sim.Style{}, sim.ContentTypeText004},
		{"single-v1", sim.Style{TextVersion1: true}, sim.ContentTypeText100},
		{"single-intle", sim.Style{IntegerLE: true}, sim.ContentTypeText004},
		{"single-old", sim.Style{OldNames: true}, sim.ContentTypeText004},
		{"multi", sim.Style{Format: sim.MultiProcess}, sim.ContentTypeText004},
		{"multi-3-old", sim.Style{Format: sim.MultiProcess, APIServers: 3, OldNames: true}, sim.ContentTypeText004},
		{"openmetrics", sim.Style{Format: sim.OpenMetrics}, sim.ContentTypeOpenMetrics},
		{"openmetrics-intle", sim.Style{Format: sim.OpenMetrics, IntegerLE: true}, sim.ContentTypeOpenMetrics},
	}
	for _, tt := range styles {
		t.Run(tt.name, func(t *testing.T) {
			body, ct := s.ExpositionStyle(tt.st)
			if ct != tt.ct {
				t.Errorf("content type %q, want %q", ct, tt.ct)
			}
			p := parse(t, body, ct)
			text := string(body)
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			om := tt.st.Format == sim.OpenMetrics

			// Family types.
			counter := "vllm:generation_tokens_total"
			if om {
				counter = "vllm:generation_tokens"
			}
			want := map[string]string{
				"vllm:time_to_first_token_seconds": "histogram",
				"vllm:e2e_request_latency_seconds": "histogram",
				"vllm:request_generation_tokens":   "histogram",
				"vllm:num_requests_running":        "gauge",
				counter:                            "counter",
			}
			if tt.st.OldNames {
				want["vllm:time_per_output_token_seconds"] = "histogram"
				want["vllm:gpu_cache_usage_perc"] = "gauge"
			} else {
				want["vllm:inter_token_latency_seconds"] = "histogram"
				want["vllm:request_time_per_output_token_seconds"] = "histogram"
				want["vllm:kv_cache_usage_perc"] = "gauge"
			}
			for name, typ := range want {
				if p.types[name] != typ {
					t.Errorf("family %s has type %q, want %q", name, p.types[name], typ)
				}
			}
			absent := []string{"vllm:time_per_output_token_seconds", "vllm:gpu_cache_usage_perc"}
			if tt.st.OldNames {
				absent = []string{"vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds", "vllm:kv_cache_usage_perc"}
			}
			for _, name := range absent {
				if _, ok := p.types[name]; ok {
					t.Errorf("family %s present", name)
				}
			}
			_, hasCreated := p.types["vllm:generation_tokens_created"]
			_, hasPython := p.types["python_gc_objects_collected_total"]
			_, hasHTTP := p.types["http_request_size_bytes"]
			single := tt.st.Format == sim.SingleProcess
			if hasCreated != single || hasPython != single || hasHTTP == om {
				t.Errorf("_created %v, python %v, http %v for %s", hasCreated, hasPython, hasHTTP, tt.name)
			}
			if hasHTTP && p.types["http_request_size_bytes"] != "summary" {
				t.Errorf("http_request_size_bytes type %q", p.types["http_request_size_bytes"])
			}
			if got := lines[len(lines)-1] == "# EOF"; got != om {
				t.Errorf("last line %q", lines[len(lines)-1])
			}

			// Label order and number forms.
			for _, l := range lines {
				if strings.HasPrefix(l, "#") || !strings.HasPrefix(l, "vllm:") {
					continue
				}
				names := labelNames(l)
				if om {
					if len(names) < 2 || names[0] != "model_name" || names[1] != "engine" {
						t.Fatalf("openmetrics labels not in declaration order: %s", l)
					}
					if strings.Contains(l, "_bucket{") && strings.HasSuffix(l, ".0") {
						t.Fatalf("openmetrics count not an integer: %s", l)
					}
				} else {
					if !slices.IsSorted(names) {
						t.Fatalf("labels not sorted: %s", l)
					}
					if strings.Contains(l, "_count{") && !strings.Contains(l, ".") && !strings.Contains(l, "e+") {
						t.Fatalf("python count without decimal point: %s", l)
					}
				}
			}
			switch {
			case tt.st.IntegerLE:
				if !strings.Contains(text, `le="1"`) || strings.Contains(text, `le="1.0"`) || !strings.Contains(text, `le="100000"`) {
					t.Error("integer le forms missing")
				}
			default:
				if !strings.Contains(text, `le="1.0"`) || !strings.Contains(text, `le="2560.0"`) || !strings.Contains(text, `le="100000.0"`) {
					t.Error("float le forms missing")
				}
			}

			// Sample order within histograms.
			fam := "vllm:e2e_request_latency_seconds"
			var seq []string
			for _, l := range lines {
				if strings.HasPrefix(l, fam+"_") && strings.Contains(l, `model_name="`+sim.DemoModel+`"`) && strings.Contains(l, `engine="0"`) {
					name, _, _ := strings.Cut(l, "{")
					seq = append(seq, strings.TrimPrefix(name, fam))
				}
			}
			n := len(seq)
			switch tt.st.Format {
			case sim.SingleProcess:
				if seq[n-4] != "_bucket" || seq[n-3] != "_count" || seq[n-2] != "_sum" || seq[n-1] != "_created" {
					t.Errorf("single-process child order ends %v", seq[n-4:])
				}
			case sim.MultiProcess:
				if seq[0] != "_sum" || seq[n-1] != "_count" {
					t.Errorf("multi-process child order %v ... %v", seq[:2], seq[n-1])
				}
				firstBucket := strings.Index(text, fam+"_bucket")
				lastSum := strings.LastIndex(text, fam+"_sum")
				if lastSum > firstBucket {
					t.Error("multi-process: a _sum line after the first bucket")
				}
			case sim.OpenMetrics:
				if seq[0] != "_sum" || seq[1] != "_count" || seq[n-1] != "_bucket" {
					t.Errorf("openmetrics child order %v", seq)
				}
			}
			if tt.st.Format == sim.MultiProcess {
				kv := "vllm:kv_cache_usage_perc"
				if tt.st.OldNames {
					kv = "vllm:gpu_cache_usage_perc"
				}
				pids := 0
				for _, smp := range p.samples {
					if smp.name == kv && smp.labels.Get("engine") == "0" && smp.labels.Get("model_name") == sim.DemoModel {
						if smp.labels.Get("pid") == "" {
							t.Errorf("kv gauge without pid: %v", smp.labels)
						}
						pids++
					}
				}
				if pids != tt.st.EffectiveAPIServers() {
					t.Errorf("%d pid series, want %d", pids, tt.st.EffectiveAPIServers())
				}
			}

			// The same state gives the same numbers in every style.
			c := p.must(t, "vllm:time_to_first_token_seconds_count", "engine", "1", "model_name", sim.DemoModel)
			if ttftCount >= 0 && c != ttftCount {
				t.Errorf("ttft count %v, other styles %v", c, ttftCount)
			}
			ttftCount = c
		})
	}
}

// TestMillionLE checks the exponent form of large token bucket edges.
func TestMillionLE(t *testing.T) {
	cfg := smallConfig(1)
	cfg.Models[0].MaxModelLen = 1 << 20
	cfg.Models[0].Engine.KVCapacityTokens = 1 << 21
	s := mustNew(t, cfg)
	body, ct := s.Exposition()
	if !strings.Contains(string(body), `le="1e+06"`) || !strings.Contains(string(body), `le="500000.0"`) {
		t.Error(`le="1e+06" or "500000.0" missing`)
	}
	parse(t, body, ct)
	body, ct = s.ExpositionStyle(sim.Style{Format: sim.OpenMetrics})
	parse(t, body, ct)
}

// TestGolden pins the exact bytes of each format for a tiny run; run with
// -update to rewrite them after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	cfg := smallConfig(1)
	cfg.Models[0].Engines = 1
	cfg.Models[0].Workload.Output = sim.LengthDist{Median: 20, Sigma: 1, Max: 100}
	cfg.Buckets = sim.Buckets{TTFT: []float64{0.1, 0.5, 1}, ITL: []float64{0.025, 0.05}, RequestLatency: []float64{1, 5},
		Tokens: []float64{10, 100, 1000}}
	s := mustNew(t, cfg)
	s.Advance(10 * time.Second)
	for _, tt := range []struct {
		file string
		st   sim.Style
	}{
		{"single.golden", sim.Style{}},
		{"multi.golden", sim.Style{Format: sim.MultiProcess}},
		{"openmetrics.golden", sim.Style{Format: sim.OpenMetrics}},
	} {
		body, _ := s.ExpositionStyle(tt.st)
		path := filepath.Join("testdata", tt.file)
		if *update {
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("%s differs from the golden file; run with -update and review the diff", tt.file)
		}
	}
}
