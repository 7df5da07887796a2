package pipeline

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// spanOf is the span vLLM sends for a finished request: what the OTLP
// receiver files for it (the receiver's own decoding is tested in otlp).
// Request i asks for adapter i mod 3, "" being the base model.
func spanOf(r sim.Request) traces.Span {
	return traces.Span{
		Target: "gpu0", Model: r.Model, Adapter: []string{"", "lora-a", "lora-b"}[r.ID%3],
		RequestID: fmt.Sprintf("%s-%d", r.Model, r.ID), End: r.Finish,
		TTFT: r.TTFT(), E2E: r.E2E(), Queue: r.QueueTime(), Prefill: r.PrefillTime(),
		Decode: r.DecodeTime(), Inference: r.InferenceTime(),
		PromptTokens: r.PromptTokens, CompletionTokens: r.OutputTokens, FinishReason: r.FinishedReason,
	}
}

// TestExactModeCountsAbandonedByPolicy serves the cancel15 workload (15% of
// streams cancelled after their first token, slow ones more often; vLLM
// sends no span for them) with a span for every finished request, so every
// window is covered. Under abandoned: excluded the exact window equals the
// truth over the finished requests; under abandoned: bad, "all" is over
// finished + abandoned, its bound holds the truth with no tolerance and is
// never the finished share alone; the same holds for every series exact
// mode touches: good requests, goodput, burn rate, the abandoned count,
// each objective's good requests and attainment (exact under both) and
// each adapter's "all".
func TestExactModeCountsAbandonedByPolicy(t *testing.T) {
	cfg, err := sim.Preset("cancel15", 11, start)
	if err != nil {
		t.Fatal(err)
	}
	// The store's clock is the scrape being taken (the sim calls OnDone
	// while it advances to it).
	clock := start
	store := traces.NewStore(traces.Limits{Retain: time.Hour, MaxRecords: 1 << 20, MaxModels: 10, MaxAdapters: 10,
		Now: func() time.Time { return clock }})
	cfg.OnDone = func(r sim.Request) {
		if r.Finished() {
			store.Add([]traces.Span{spanOf(r)})
		}
	}
	excluded := interactive
	excluded.Name, excluded.Abandoned = "interactive-excluded", slo.AbandonedExcluded
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.SLOs, spec.Windows, spec.Traces = []slo.SLO{interactive, excluded}, []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}, store
	run := workload{sim: s, p: New(spec)}
	checked, wider := 0, 0
	for at := start.Add(scrapeStep); !at.After(start.Add(12 * time.Minute)); at = at.Add(scrapeStep) {
		clock = at
		scrapeInto(t, run.p, run.sim, at)
		if at.Sub(start) < 3*time.Minute {
			continue
		}
		mr := run.p.Evaluate(at).Targets[0].Models[0]
		truth := run.sim.Truth()
		for i, wr := range mr.Windows {
			if !mr.Traces[i].Covered {
				t.Fatalf("at %v window %v: not covered", at.Sub(start), wr.Window.Nominal)
			}
			where := fmt.Sprintf("at %v window %v", at.Sub(start), wr.Window.Nominal)
			finished := simtruth.FinishedIn(truth, wr.Window.Start, wr.Window.End)
			abandoned := len(simtruth.AbandonedIn(truth, wr.Window.Start, wr.Window.End))
			for _, r := range wr.SLOs {
				if at.Sub(start) == 10*time.Minute {
					a := r.Objectives[slo.AllKey]
					t.Logf("%s SLO %-20s all %.4f [%.4f, %.4f]; finished %d, abandoned %d (bound [%v, %v])",
						where, r.Name, a.Estimate, a.Lower, a.Upper, len(finished), abandoned, r.Abandoned.Lower, r.Abandoned.Upper)
				}
				if checkExactPolicy(t, where, r, finished, abandoned, wr.Window.Seconds()) {
					wider++
				}
			}
			checkAdaptersPolicy(t, where, mr.Traces[i], finished, simtruth.AbandonedIn(truth, wr.Window.Start, wr.Window.End))
			checked++
		}
	}
	if checked == 0 || wider == 0 {
		t.Fatalf("%d windows checked, %d where abandoned streams widened \"all\": the test shows nothing", checked, wider)
	}
	t.Logf("%d covered windows; %d SLO results where the abandoned streams made \"all\" a bound", checked, wider)
}

// checkExactPolicy checks one SLO of a covered window against the truth;
// it reports whether "all" was a proper bound (abandoned not known exactly).
func checkExactPolicy(t *testing.T, where string, r slo.SLOResult, finished sim.Truth, abandoned int, secs float64) bool {
	t.Helper()
	good, tokens := 0, 0
	for _, req := range finished {
		if meetsInteractive(req) {
			good++
			tokens += req.OutputTokens
		}
	}
	n := len(finished)
	exact := map[string]slo.Bounded{
		"good requests":    r.GoodRequests[slo.AllKey],
		"goodput requests": r.GoodputRequestsPerSecond,
		"goodput tokens":   r.GoodputTokensPerSecond,
	}
	want := map[string]float64{"good requests": float64(good), "goodput requests": float64(good) / secs, "goodput tokens": float64(tokens) / secs}
	for k, b := range exact {
		if !b.IsExact() || !near(b.Estimate, want[k]) {
			t.Errorf("%s SLO %s %s = %+v, want exactly %v", where, r.Name, k, b, want[k])
		}
	}
	for _, o := range interactive.Objectives {
		// Each objective alone counts the finished requests, under
		// either policy: exact, its attainment the count over them.
		met := 0
		for _, req := range finished {
			if meetsObjective(req, o) {
				met++
			}
		}
		key := string(o.Metric)
		if g := r.GoodRequests[key]; !g.IsExact() || g.Estimate != float64(met) {
			t.Errorf("%s SLO %s good %s = %+v, want exactly %d", where, r.Name, key, g, met)
		}
		if a, want := r.Objectives[key], float64(met)/float64(n); !a.IsExact() || a.Estimate != want {
			t.Errorf("%s SLO %s attainment %s = %+v, want exactly %v", where, r.Name, key, a, want)
		}
	}
	if !r.HasAbandoned || float64(abandoned) < r.Abandoned.Lower || float64(abandoned) > r.Abandoned.Upper {
		t.Errorf("%s SLO %s: abandoned %+v (present %v), truth %d", where, r.Name, r.Abandoned, r.HasAbandoned, abandoned)
	}
	pop := n
	if r.Name == interactive.Name {
		pop += abandoned
	}
	truth := float64(good) / float64(pop)
	all, ok := r.Objectives[slo.AllKey]
	if !ok || truth < all.Lower || truth > all.Upper {
		t.Fatalf("%s SLO %s: all %+v (present %v), truth %v (good %d of %d finished, %d abandoned)", where, r.Name, all, ok, truth, good, n, abandoned)
	}
	if r.Name != interactive.Name && (!all.IsExact() || !near(all.Estimate, truth)) {
		t.Errorf("%s SLO %s: all %+v, want exactly %v over the finished requests", where, r.Name, all, truth)
	}
	burn := (1 - truth) / (1 - interactive.Goal)
	if !r.HasBurnRate || burn < r.BurnRate.Lower-1e-9 || burn > r.BurnRate.Upper+1e-9 {
		t.Errorf("%s SLO %s: burn %+v, truth %v", where, r.Name, r.BurnRate, burn)
	}
	return r.Name == interactive.Name && !all.IsExact()
}

// near compares an exact number with one computed another way (a sum
// divided by seconds), which may differ in the last bits.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkAdaptersPolicy: each adapter's "all" under abandoned: bad holds the
// truth over its own finished and abandoned requests (which of them asked
// for the adapter, the bound does not know).
func checkAdaptersPolicy(t *testing.T, where string, tr traces.Result, finished, abandoned sim.Truth) {
	t.Helper()
	for _, a := range tr.Adapters {
		good, n, left := 0, 0, 0
		for _, req := range finished {
			if spanOf(req).Adapter == a.Name {
				n++
				if meetsInteractive(req) {
					good++
				}
			}
		}
		for _, req := range abandoned {
			if spanOf(req).Adapter == a.Name {
				left++
			}
		}
		for _, r := range a.Report.SLOs {
			if r.Name != interactive.Name {
				continue
			}
			truth := float64(good) / float64(n+left)
			if all, ok := r.Objectives[slo.AllKey]; !ok || truth < all.Lower || truth > all.Upper {
				t.Errorf("%s adapter %q: all %+v (present %v), truth %v", where, a.Name, all, ok, truth)
			}
		}
	}
}
