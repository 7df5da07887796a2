package scrape_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// The newest vLLM's exposition, built from its metric definitions
// (testdata/newest/SOURCES.md says where each name, label and edge list
// comes from): vLLM 0.32's families, the open priority-label change that
// moves TTFT's observation to the request's finish so that it can carry
// `priority`, under --scheduling-policy priority, two engines, one model,
// two scrapes 15 s apart. The observations are made up; every name, label
// set, edge list and sample form is vLLM's (prometheus_client's
// single-process text: sorted labels, Python floats, `_created`).

const newestModel = "meta-llama/Llama-3.1-8B-Instruct"

// The edge lists of vllm/v1/metrics/buckets.py.
var (
	newestTTFTEdges    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	newestITLEdges     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	newestLatencyEdges = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	newestPreemptEdges = []float64{1, 2, 3, 4, 5, 10, 20}
	// build_1_2_5_buckets(max_model_len=8192)
	newestTokenEdges = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
)

// newestPriorities are the bucketed priority label values of the change
// (-1, 0 and 1 kept, the rest folded into "<-1" and ">1"); this server's
// clients use three of them.
var newestPriorities = []string{"-1", "0", ">1"}

// newestRequest is one finished request's observations.
type newestRequest struct {
	ttft, queue, prefill, decode, tpot float64
	prompt, gen, preemptions           int
	reason                             string
}

func (r newestRequest) e2e() float64       { return r.queue + r.prefill + r.decode }
func (r newestRequest) inference() float64 { return r.prefill + r.decode }

// newestFinished is the requests finished by scrape k (0 or 1) on an
// engine at a priority: the first k+1 of a fixed list per engine and
// priority, whose numbers vary with both.
func newestFinished(k, engine, prio int) []newestRequest {
	base := []newestRequest{
		{ttft: 0.08, queue: 0.02, prefill: 0.06, decode: 1.9, tpot: 0.021, prompt: 312, gen: 91, preemptions: 0, reason: "stop"},
		{ttft: 0.42, queue: 0.3, prefill: 0.12, decode: 3.1, tpot: 0.034, prompt: 2048, gen: 92, preemptions: 1, reason: "length"},
		{ttft: 1.7, queue: 1.4, prefill: 0.3, decode: 6.0, tpot: 0.048, prompt: 4100, gen: 126, preemptions: 2, reason: "stop"},
		{ttft: 0.2, queue: 0.05, prefill: 0.15, decode: 0.9, tpot: 0.019, prompt: 90, gen: 48, preemptions: 0, reason: "stop"},
	}
	var out []newestRequest
	for i := range 2 + 2*k { // two more requests finish by the second scrape
		r := base[(i+engine+prio)%len(base)]
		scale := 1 + 0.25*float64(engine) + 0.5*float64(prio)
		r.ttft, r.queue, r.prefill = r.ttft*scale, r.queue*scale, r.prefill*scale
		r.preemptions += prio * (i % 2) // the low priority is preempted more
		out = append(out, r)
	}
	return out
}

// newestExposition renders scrape k.
func newestExposition(k int) []byte {
	var b bytes.Buffer
	created := "1.7645e+09"
	engines := []string{"0", "1"}
	ls := func(pairs ...string) string {
		var kv []string
		for i := 0; i < len(pairs); i += 2 {
			kv = append(kv, pairs[i]+`="`+pairs[i+1]+`"`)
		}
		slices.Sort(kv)
		return "{" + strings.Join(kv, ",") + "}"
	}
	py := func(v float64) string {
		if v == math.Trunc(v) && math.Abs(v) < 1e16 {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	header := func(name, help, typ string) { fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ) }
	line := func(name, labels string, v float64) { fmt.Fprintf(&b, "%s%s %s\n", name, labels, py(v)) }
	createdFamily := func(base, help string, sets []string) {
		header(base+"_created", help, "gauge")
		for _, s := range sets {
			fmt.Fprintf(&b, "%s_created%s %s\n", base, s, created)
		}
	}

	// Scheduler gauges: waiting is the sum of its reasons.
	capacity := []float64{7 + 5*float64(k), 3}
	deferred := []float64{2, 1 + float64(k)}
	header("vllm:num_requests_running", "Number of requests in model execution batches.", "gauge")
	for e, eng := range engines {
		line("vllm:num_requests_running", ls("engine", eng, "model_name", newestModel), float64(24+e+k))
	}
	header("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge")
	for e, eng := range engines {
		line("vllm:num_requests_waiting", ls("engine", eng, "model_name", newestModel), capacity[e]+deferred[e])
	}
	header("vllm:num_requests_waiting_by_reason", "Number of requests waiting to be processed, by reason. Sum of all reasons equals vllm:num_requests_waiting.", "gauge")
	for e, eng := range engines {
		line("vllm:num_requests_waiting_by_reason", ls("engine", eng, "model_name", newestModel, "reason", "capacity"), capacity[e])
		line("vllm:num_requests_waiting_by_reason", ls("engine", eng, "model_name", newestModel, "reason", "deferred"), deferred[e])
	}
	header("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge")
	for e, eng := range engines {
		line("vllm:kv_cache_usage_perc", ls("engine", eng, "model_name", newestModel), 0.61+0.1*float64(e+k))
	}

	// Counters of the engine.
	counter := func(base, help string, extra []string, value func(e int, extra string) float64) {
		header(base+"_total", help, "counter")
		var sets []string
		for e, eng := range engines {
			for _, x := range extra {
				pairs := []string{"engine", eng, "model_name", newestModel}
				if x != "" {
					kv := strings.SplitN(x, "=", 2)
					pairs = append(pairs, kv[0], kv[1])
				}
				s := ls(pairs...)
				sets = append(sets, s)
				line(base+"_total", s, value(e, x))
			}
		}
		createdFamily(base, help, sets)
	}
	gen, prompt := 0.0, 0.0
	for e := range engines {
		for p := range newestPriorities {
			for _, r := range newestFinished(k, e, p) {
				gen += float64(r.gen)
				prompt += float64(r.prompt)
			}
		}
	}
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", []string{""}, func(e int, _ string) float64 { return prompt/2 + float64(e) })
	counter("vllm:generation_tokens", "Number of generation tokens processed.", []string{""}, func(e int, _ string) float64 { return gen/2 + float64(100*e+300) })
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", []string{""}, func(e int, _ string) float64 { return float64(9 + 4*e + 6*k) })
	counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.",
		[]string{"source=local_compute", "source=local_cache_hit", "source=external_kv_transfer"},
		func(e int, x string) float64 {
			switch x {
			case "source=local_compute":
				return float64(21000 + 5000*k + 1000*e)
			case "source=local_cache_hit":
				return float64(9000 + 4000*k)
			}
			return 0
		})
	// request_success: per finish reason and, under priority scheduling, priority.
	header("vllm:request_success_total", "Count of successfully processed requests.", "counter")
	var sets []string
	for _, reason := range []string{"stop", "length", "abort", "error", "repetition"} {
		for e, eng := range engines {
			for p, prio := range newestPriorities {
				n := 0
				for _, r := range newestFinished(k, e, p) {
					if r.reason == reason {
						n++
					}
				}
				s := ls("engine", eng, "finished_reason", reason, "model_name", newestModel, "priority", prio)
				sets = append(sets, s)
				line("vllm:request_success_total", s, float64(n))
			}
		}
	}
	createdFamily("vllm:request_success", "Count of successfully processed requests.", sets)
	// Admission rejections: per reason, no engine label.
	header("vllm:admission_rejections_total", "Number of admission attempts rejected.", "counter")
	rejSets := []string{ls("model_name", newestModel, "reason", "max_num_queued_reqs"), ls("model_name", newestModel, "reason", "max_num_queued_tokens")}
	line("vllm:admission_rejections_total", rejSets[0], float64(40+25*k))
	line("vllm:admission_rejections_total", rejSets[1], float64(3+2*k))
	createdFamily("vllm:admission_rejections", "Number of admission attempts rejected.", rejSets)

	// Histograms of the finished requests, with priority; ITL without.
	hist := func(name, help string, edges []float64, withPriority bool, value func(r newestRequest) float64) {
		header(name, help, "histogram")
		var sets []string
		for e, eng := range engines {
			prios := newestPriorities
			if !withPriority {
				prios = []string{""}
			}
			for p, prio := range prios {
				var vals []float64
				ps := []int{p}
				if !withPriority {
					ps = []int{0, 1, 2}
				}
				for _, pi := range ps {
					for _, r := range newestFinished(k, e, pi) {
						vals = append(vals, value(r))
					}
				}
				pairs := []string{"engine", eng, "model_name", newestModel}
				if withPriority {
					pairs = append(pairs, "priority", prio)
				}
				base := ls(pairs...)
				sum := 0.0
				for _, le := range append(slices.Clone(edges), math.Inf(1)) {
					n := 0
					for _, v := range vals {
						if v <= le {
							n++
						}
					}
					leS := "+Inf"
					if !math.IsInf(le, 1) {
						leS = py(le)
					}
					line(name+"_bucket", ls(append(slices.Clone(pairs), "le", leS)...), float64(n))
				}
				for _, v := range vals {
					sum += v
				}
				line(name+"_count", base, float64(len(vals)))
				line(name+"_sum", base, sum)
				sets = append(sets, base)
			}
		}
		createdFamily(name, help, sets)
	}
	hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", newestTokenEdges, true, func(r newestRequest) float64 { return float64(r.prompt) })
	hist("vllm:request_generation_tokens", "Number of generation tokens processed.", newestTokenEdges, true, func(r newestRequest) float64 { return float64(r.gen) })
	hist("vllm:request_num_preemptions", "Histogram of the number of preemptions per finished request.", newestPreemptEdges, true, func(r newestRequest) float64 { return float64(r.preemptions) })
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", newestTTFTEdges, true, func(r newestRequest) float64 { return r.ttft })
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", newestITLEdges, false, func(r newestRequest) float64 { return r.tpot })
	hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", newestITLEdges, true, func(r newestRequest) float64 { return r.tpot })
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", newestLatencyEdges, true, newestRequest.e2e)
	hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", newestLatencyEdges, true, func(r newestRequest) float64 { return r.queue })
	hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", newestLatencyEdges, true, newestRequest.inference)
	hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", newestLatencyEdges, true, func(r newestRequest) float64 { return r.prefill })
	hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", newestLatencyEdges, true, func(r newestRequest) float64 { return r.decode })
	return b.Bytes()
}

// newestFile is the fixture of scrape k.
func newestFile(k int) string {
	return filepath.Join("testdata", "newest", fmt.Sprintf("vllm-0.32-priority-%d.prom", k))
}

// TestNewestFixtures keeps the fixtures the generator above writes
// (regenerated with -update): another package's golden replays them.
func TestNewestFixtures(t *testing.T) {
	for k := range 2 {
		want := newestExposition(k)
		if updating() {
			if err := os.WriteFile(newestFile(k), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(newestFile(k))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator: go test ./scrape -run TestNewestFixtures -update", newestFile(k))
		}
	}
}

// updating reports whether the tests run with -update (the flag the
// package's internal tests define).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestNewestExposition reads the newest format: every new family is found
// under its vLLM name, the optional ones as optional; admission rejections
// are summed over reason (no engine label), waiting by reason and
// preemptions over engine, the prompt tokens by source per source; and
// every histogram carrying `priority` (TTFT among them) is summed over it,
// never refused: the sums equal the observations made over every priority.
func TestNewestExposition(t *testing.T) {
	for k := range 2 {
		body, err := os.ReadFile(newestFile(k))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := scrape.Parse(body, "text/plain; version=0.0.4; charset=utf-8", scrape.VLLM, time.Unix(1_764_500_000, 0))
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Missing) != 0 || len(snap.Rejected) != 0 {
			t.Fatalf("scrape %d: missing %v rejected %v", k, snap.Missing, snap.Rejected)
		}
		for f, name := range map[scrape.Family]string{
			scrape.RequestRejected:      "vllm:admission_rejections_total",
			scrape.WaitingCapacity:      `vllm:num_requests_waiting_by_reason{reason="capacity"}`,
			scrape.WaitingDeferred:      `vllm:num_requests_waiting_by_reason{reason="deferred"}`,
			scrape.Preemptions:          "vllm:num_preemptions_total",
			scrape.PreemptionsHist:      "vllm:request_num_preemptions",
			scrape.PromptTokensComputed: `vllm:prompt_tokens_by_source_total{source="local_compute"}`,
			scrape.PromptTokensCached:   `vllm:prompt_tokens_by_source_total{source="local_cache_hit"}`,
			scrape.PromptTokensExternal: `vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}`,
			scrape.TTFT:                 "vllm:time_to_first_token_seconds",
		} {
			if snap.Found[f] != name {
				t.Errorf("scrape %d: %s read from %q, want %q", k, f, snap.Found[f], name)
			}
		}
		ms := snap.Models[newestModel]
		if ms == nil {
			t.Fatalf("scrape %d: model %q absent", k, newestModel)
		}
		wantCounters := map[scrape.Family]float64{
			scrape.RequestRejected:      float64(43 + 27*k),
			scrape.Preemptions:          float64(22 + 12*k),
			scrape.PromptTokensComputed: float64(43000 + 10000*k),
			scrape.PromptTokensCached:   float64(18000 + 8000*k),
			scrape.PromptTokensExternal: 0,
		}
		for f, want := range wantCounters {
			if got := ms.Counters[f]; got != want {
				t.Errorf("scrape %d: %s = %v, want %v", k, f, got, want)
			}
		}
		if got, want := ms.Gauges[scrape.WaitingCapacity], float64(10+5*k); got != want {
			t.Errorf("scrape %d: waiting for capacity %v, want %v", k, got, want)
		}
		if got, want := ms.Gauges[scrape.WaitingDeferred], float64(3+k); got != want {
			t.Errorf("scrape %d: waiting deferred %v, want %v", k, got, want)
		}
		if ms.Gauges[scrape.Waiting] != ms.Gauges[scrape.WaitingCapacity]+ms.Gauges[scrape.WaitingDeferred] {
			t.Errorf("scrape %d: waiting %v is not the sum of its reasons", k, ms.Gauges[scrape.Waiting])
		}
		if !ms.TTFTAtFinish {
			t.Errorf("scrape %d: TTFT with a priority label not taken as observed at finish", k)
		}
		checkSummedOverPriority(t, k, ms, scrape.TTFT, newestTTFTEdges, func(r newestRequest) float64 { return r.ttft })
		checkSummedOverPriority(t, k, ms, scrape.PreemptionsHist, newestPreemptEdges, func(r newestRequest) float64 { return float64(r.preemptions) })
		checkSummedOverPriority(t, k, ms, scrape.E2E, newestLatencyEdges, newestRequest.e2e)
	}
}

// checkSummedOverPriority: the family's histogram is every engine's and
// every priority's observations together.
func checkSummedOverPriority(t *testing.T, k int, ms *scrape.ModelSample, f scrape.Family, edges []float64, value func(newestRequest) float64) {
	t.Helper()
	var vals []float64
	for e := range 2 {
		for p := range newestPriorities {
			for _, r := range newestFinished(k, e, p) {
				vals = append(vals, value(r))
			}
		}
	}
	want := slo.Histogram{Edges: append(slices.Clone(edges), math.Inf(1))}
	for _, le := range want.Edges {
		n := 0.0
		for _, v := range vals {
			if v <= le {
				n++
			}
		}
		want.Counts = append(want.Counts, n)
	}
	got := ms.Histograms[f]
	if !slices.Equal(got.Edges, want.Edges) || !slices.Equal(got.Counts, want.Counts) {
		t.Errorf("scrape %d: %s edges %v counts %v, want %v and %v (every priority)", k, f, got.Edges, got.Counts, want.Edges, want.Counts)
	}
}

// TestTTFTAtFinishOnlyFromTTFTsPriority: only a priority label on TTFT
// itself says TTFT is observed at finish; one on another family (or none)
// does not.
func TestTTFTAtFinishOnlyFromTTFTsPriority(t *testing.T) {
	hist := func(name, labels string) string {
		return "# TYPE " + name + " histogram\n" +
			name + `_bucket{le="1.0",model_name="m"` + labels + "} 1\n" +
			name + `_bucket{le="+Inf",model_name="m"` + labels + "} 1\n" +
			name + `_count{model_name="m"` + labels + "} 1\n" +
			name + `_sum{model_name="m"` + labels + "} 0.5\n"
	}
	for _, c := range []struct {
		name, body string
		want       bool
	}{
		{"TTFT with priority", hist("vllm:time_to_first_token_seconds", `,priority="0"`), true},
		{"TTFT without, e2e with priority", hist("vllm:time_to_first_token_seconds", "") + hist("vllm:e2e_request_latency_seconds", `,priority="0"`), false},
		{"TTFT with another label", hist("vllm:time_to_first_token_seconds", `,engine="0"`), false},
	} {
		snap, err := scrape.Parse([]byte(c.body), "", scrape.VLLM, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := snap.Models["m"].TTFTAtFinish; got != c.want {
			t.Errorf("%s: TTFTAtFinish %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRealCapturesObserveTTFTAtFirstToken: no real capture carries a
// priority label on TTFT, so none is read as observing it at finish.
func TestRealCapturesObserveTTFTAtFirstToken(t *testing.T) {
	for _, c := range realCaptures {
		snap := parseCapture(t, c.body(t), "", c.profile, captureTime)
		for name, ms := range snap.Models {
			if ms.TTFTAtFinish {
				t.Errorf("%s model %q: TTFT taken as observed at finish", c.name(), name)
			}
		}
	}
}
