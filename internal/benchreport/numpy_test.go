package benchreport

import (
	"path/filepath"
	"testing"
)

// TestAgreesWithNumpyBitForBit reads bench files whose summary numbers were
// computed by numpy with vLLM's definitions (testdata/numpy_fixture.py) and
// requires report's numbers to be the same float64 values, not just the same
// printed digits: the files cover failed requests, one-token requests,
// chunks holding several tokens, TTFTs and ITLs exactly on the objectives,
// files without latencies or start_times, and more than 128 samples
// (numpy's pairwise summation).
func TestAgreesWithNumpyBitForBit(t *testing.T) {
	files, err := filepath.Glob("testdata/numpy/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	objs, err := ParseGoodput([]string{"ttft:500", "tpot:50", "e2el:8000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := ReadBench(path)
			if err != nil {
				t.Fatal(err)
			}
			r := Evaluate(f, BenchOptions{Goodput: objs})
			got := map[string]float64{
				"completed":              float64(r.Completed),
				"failed":                 float64(r.Failed),
				"total_input_tokens":     float64(r.TotalInput),
				"total_output_tokens":    float64(r.TotalOutput),
				"request_throughput":     r.RequestThroughput,
				"request_goodput":        r.Goodput.RequestsPerSecond,
				"output_throughput":      r.OutputThroughput,
				"total_token_throughput": r.TotalTokenThroughput,
			}
			for name, s := range map[string]Stat{"ttft": r.TTFT, "tpot": r.TPOT, "itl": r.ITL, "e2el": r.E2EL} {
				got["mean_"+name+"_ms"] = s.Mean * 1000
				got["median_"+name+"_ms"] = s.Median * 1000
				got["std_"+name+"_ms"] = s.Std * 1000
				for _, p := range DefaultPercentiles {
					got["p"+fmtG(p)+"_"+name+"_ms"] = mustValue(t, s, p) * 1000
				}
			}
			for k, v := range got {
				want, ok := f.Reported[k]
				if !ok {
					t.Errorf("%s: fixture lacks it", k)
					continue
				}
				if v != want {
					t.Errorf("%s = %v, numpy says %v", k, v, want)
				}
			}
		})
	}
}

// TestNumpyArithmetic pins numpy's summation and lerp on hand cases.
func TestNumpyArithmetic(t *testing.T) {
	// 0.1 summed ten times: sequentially 0.9999999999999999, numpy's
	// eight accumulators give 1.
	tenth := make([]float64, 10)
	for i := range tenth {
		tenth[i] = 0.1
	}
	if got := npSum(tenth); got != 1 {
		t.Errorf("npSum(0.1 x 10) = %v, want 1 (numpy)", got)
	}
	if got := npPercentile(50, []float64{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("p50 of 1..4 = %v", got)
	}
	if got := npPercentile(100, []float64{1, 2}); got != 2 {
		t.Errorf("p100 = %v", got)
	}
	if got := npMedian([]float64{1, 2, 4, 8}); got != 3 {
		t.Errorf("median = %v", got)
	}
}
