package benchreport

import (
	"math"
	"os"
	"strings"
	"testing"
)

// FuzzParseBench: any input gives a bench file or an error, never a panic,
// and an accepted file evaluates to finite, consistent numbers.
func FuzzParseBench(f *testing.F) {
	seed, err := os.ReadFile("testdata/seed.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"duration": 1, "ttfts": [0.1], "itls": [[]], "input_lens": [1], "output_lens": [1]}`))
	f.Add([]byte(`{"duration": 1, "ttfts": [NaN], "itls": [[]], "input_lens": [1], "output_lens": [1]}`))
	f.Add([]byte(`{"duration": 1, "ttfts": [0.1, 0.2], "itls": [[]], "input_lens": [1], "output_lens": [1]}`))
	f.Add([]byte(`{"duration": 0, "request_rate": "inf"}`))
	f.Add([]byte(`[1, 2]`))
	f.Add([]byte(`{"duration": 2, "ttfts": [0, 0.3], "itls": [[], [0.1, -1]], "input_lens": [1, 2], "output_lens": [0, 3], "errors": ["x", ""], "start_times": [5, 6], "latencies": [0, 1e308]}`))
	objs, _ := ParseGoodput([]string{"ttft:500 tpot:50 e2el:1000"})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBench(data, "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bench file fuzz.json: ") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		r := Evaluate(b, BenchOptions{Goodput: objs, GPUHourlyCost: 1})
		if r.Completed+r.Failed != len(b.Requests) {
			t.Fatalf("completed %d + failed %d != %d requests", r.Completed, r.Failed, len(b.Requests))
		}
		if r.Goodput.GoodRequests > r.Completed || r.Goodput.GoodTokens > r.TotalOutput {
			t.Fatalf("more good than done: %+v", r.Goodput)
		}
		for _, v := range []float64{r.RequestThroughput, r.OutputThroughput, r.Goodput.RequestsPerSecond, r.Concurrency.Little} {
			if math.IsNaN(v) || v < 0 {
				t.Fatalf("bad rate %v in %+v", v, r)
			}
		}
		for _, s := range []Stat{r.TTFT, r.TPOT, r.ITL, r.E2EL} {
			for _, p := range s.Percentiles {
				if math.IsNaN(p.Value) {
					t.Fatalf("NaN percentile in %+v", s)
				}
			}
		}
	})
}
