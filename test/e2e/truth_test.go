package e2e

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// truthWindows are the windows of replayConfig; each begins on a scrape.
var truthWindows = map[string]time.Duration{"1m": time.Minute, "2m": 2 * time.Minute, "3m": 3 * time.Minute}

// truthSLO is an SLO of replayConfig with its objectives in seconds.
type truthSLO struct {
	name       string
	objectives map[string]float64
}

var truthSLOs = []truthSLO{
	{"interactive", map[string]float64{"ttft": 0.5, "tpot": 0.05}},
	{"batch", map[string]float64{"e2e": 12, "ttft": 0.3}},
}

// TestReplayMatchesTruth regenerates every scenario, replays it through the
// binary, and checks the exposition against the simulator's ground truth:
// exact window counts and token throughput, and bounds (latency quantile
// brackets, attainment, goodput) that contain the true values.
func TestReplayMatchesTruth(t *testing.T) {
	cfgFile := writeFile(t, t.TempDir(), "config.yaml", replayConfig)
	for _, sc := range scenarios {
		// Not parallel: the simulator runs in this (race-instrumented)
		// process and would starve the live daemon tests, which start only
		// once the sequential tests are done.
		t.Run(sc.name, func(t *testing.T) {
			entries, truth, err := sc.generate()
			if err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(t.TempDir(), "rec.jsonl.gz")
			writeRecording(t, rec, entries)
			out, stderr, code := runCmd(t, 30*time.Second, "replay", "--config.file="+cfgFile, "--recording="+rec)
			if code != 0 {
				t.Fatalf("replay exit %d; stderr:\n%s", code, stderr)
			}
			ss := parseExposition(t, out)
			checkInvariants(t, ss)
			end := entries[len(entries)-1].Time
			models := map[string]bool{}
			for _, r := range truth {
				models[r.Model] = true
			}
			if len(models) == 0 {
				t.Fatal("the scenario produced no request")
			}
			if sc.restartAt > 0 {
				if v, _ := ss.one(t, "vllm_slo_target_resets_total", map[string]string{"target": replayTarget}); v != 1 {
					t.Errorf("vllm_slo_target_resets_total = %v, want 1", v)
				}
			}
			for m := range models {
				for w, d := range truthWindows {
					checkWindow(t, ss, simtruth.ForModel(truth, m), m, w, end.Add(-d), end)
				}
			}
		})
	}
}

// checkWindow compares one model's window (from, to] with the truth.
func checkWindow(t *testing.T, ss series, truth sim.Truth, model, window string, from, to time.Time) {
	t.Helper()
	base := map[string]string{"target": replayTarget, "model_name": model, "window": window}
	secs := to.Sub(from).Seconds()
	finished := simtruth.FinishedIn(truth, from, to)
	firstTok := simtruth.FirstTokenIn(truth, from, to)

	// Exact: requests finished and tokens produced in the window. A request
	// aborted by a restart is in neither (vLLM observes it nowhere).
	if got, ok := ss.one(t, "vllm_slo_window_requests", with(base, "metric", "e2e")); !ok || got != float64(len(finished)) {
		t.Errorf("%s %s: window_requests{e2e} = %v (present %v), truth %d", model, window, got, ok, len(finished))
	}
	if got, ok := ss.one(t, "vllm_slo_window_requests", with(base, "metric", "ttft")); !ok || got != float64(len(firstTok)) {
		t.Errorf("%s %s: window_requests{ttft} = %v (present %v), truth %d", model, window, got, ok, len(firstTok))
	}
	tokens := float64(simtruth.TokensIn(truth, from, to))
	if got, ok := ss.one(t, "vllm_slo_throughput_tokens_per_second", with(base, "kind", "generation")); !ok || !relClose(got, tokens/secs, 1e-9) {
		t.Errorf("%s %s: generation throughput = %v (present %v), truth %v", model, window, got, ok, tokens/secs)
	}

	// Brackets: every latency quantile's bracket holds the true nearest-rank
	// quantile of the window's population.
	pops := map[string][]float64{"itl": simtruth.ITLGaps(truth, from, to)}
	for _, r := range firstTok {
		pops["ttft"] = append(pops["ttft"], r.TTFT())
	}
	for _, metric := range []string{"tpot", "e2e", "queue", "prefill", "decode", "inference"} {
		for _, r := range finished {
			v, _ := r.Value(metric)
			pops[metric] = append(pops[metric], v)
		}
	}
	checked := 0
	for _, est := range ss.find("vllm_slo_latency_seconds", base) {
		metric := est.labels["metric"]
		vals, known := pops[metric]
		if !known {
			t.Errorf("%s: no truth for metric %q", est.key(), metric)
			continue
		}
		qv, err := strconv.ParseFloat(est.labels[exporter.QuantileLabel], 64)
		if err != nil {
			t.Fatalf("%s: quantile label: %v", est.key(), err)
		}
		want := nearestRank(vals, qv)
		lo, _ := ss.one(t, "vllm_slo_latency_lower_seconds", est.labels)
		hi, _ := ss.one(t, "vllm_slo_latency_upper_seconds", est.labels)
		if !(lo <= want && want <= hi) {
			t.Errorf("%s: true quantile %v outside [%v, %v]", est.key(), want, lo, hi)
		}
		checked++
	}
	if checked < 3*6 {
		t.Errorf("%s %s: only %d latency quantiles checked", model, window, checked)
	}

	// Attainment, abandoned and goodput bounds hold the truth.
	for _, s := range truthSLOs {
		sb := with(base, "slo", s.name)
		for obj, thr := range s.objectives {
			pop := finished
			if obj == "ttft" {
				pop = firstTok
			}
			good := 0
			for _, r := range pop {
				if v, _ := r.Value(obj); v <= thr {
					good++
				}
			}
			if _, ok := ss.one(t, "vllm_slo_latency_seconds", with(base, "metric", obj, exporter.QuantileLabel, "0.5")); !ok {
				continue // the target does not serve this metric (old names: no per-request TPOT)
			}
			checkBounds(t, ss, "vllm_slo_attainment", "_ratio", with(sb, "objective", obj), ratio(good, len(pop)))
		}
		good, goodTokens, allKnown := 0, 0, true
		for _, r := range finished {
			met := true
			for obj, thr := range s.objectives {
				if _, ok := ss.one(t, "vllm_slo_latency_seconds", with(base, "metric", obj, exporter.QuantileLabel, "0.5")); !ok {
					allKnown = false
				}
				if v, _ := r.Value(obj); v > thr {
					met = false
				}
			}
			if met {
				good++
				goodTokens += r.OutputTokens
			}
		}
		if !allKnown {
			// An objective the target does not measure is not met by
			// default: "all" is absent and the objective flagged.
			if _, ok := ss.one(t, "vllm_slo_attainment_ratio", with(sb, "objective", "all")); ok {
				t.Errorf("%s %s %s: attainment of all published with an unmeasured objective", model, window, s.name)
			}
			continue
		}
		// Abandoned requests (first token observed, no finish observed: lost
		// in the restart, or cancelled) left in the window; the SLOs keep the
		// default, abandoned: bad, so they are part of the population.
		abandoned := 0
		for _, r := range truth {
			if !r.FirstToken.IsZero() && !r.Finished() && !r.Finish.IsZero() && r.Finish.After(from) && !r.Finish.After(to) {
				abandoned++
			}
		}
		checkBounds(t, ss, "vllm_slo_abandoned", "_requests", base, float64(abandoned))
		n := len(finished)
		checkBounds(t, ss, "vllm_slo_attainment", "_ratio", with(sb, "objective", "all"), ratio(good, n+abandoned))
		checkBounds(t, ss, "vllm_slo_goodput", "_requests_per_second", sb, float64(good)/secs)
		checkBounds(t, ss, "vllm_slo_goodput", "_tokens_per_second", sb, float64(goodTokens)/secs)
	}
}

// checkBounds asserts lower ≤ truth ≤ upper (up to float rounding) for the
// family prefix+suffix with its _lower_ and _upper_ variants.
func checkBounds(t *testing.T, ss series, prefix, suffix string, labels map[string]string, truth float64) {
	t.Helper()
	lo, okL := ss.one(t, prefix+"_lower"+suffix, labels)
	hi, okH := ss.one(t, prefix+"_upper"+suffix, labels)
	if !okL || !okH {
		t.Errorf("%s%s%v: bounds missing", prefix, suffix, labels)
		return
	}
	const eps = 1e-9
	if !(lo <= truth*(1+eps)+eps && truth <= hi*(1+eps)+eps) {
		t.Errorf("%s%s%v: truth %v outside [%v, %v]", prefix, suffix, labels, truth, lo, hi)
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// nearestRank is the r-th smallest value, r = ⌈q·n⌉ (at least 1): the
// convention of the histogram brackets.
func nearestRank(vals []float64, q float64) float64 {
	if len(vals) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	r := int(math.Ceil(q * float64(len(s))))
	r = min(max(r, 1), len(s))
	return s[r-1]
}

func relClose(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}
