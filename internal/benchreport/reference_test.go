package benchreport

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refResult is what the reference computes: vLLM's summary numbers.
type refResult struct {
	completed, failed, totalIn, totalOut, good, goodTokens int
	reqTput, outTput, totTput, goodput, goodTok            float64
	stats                                                  map[string][3]float64 // mean, p50 (linear), p99 (linear)
	nearest99                                              map[string]float64
}

// reference reads the JSON on its own and follows vllm/benchmarks/serve.py's
// calculate_metrics line by line, with naive sums and its own percentile.
func reference(t *testing.T, data []byte, ttftMs, tpotMs float64) refResult {
	t.Helper()
	var doc struct {
		Duration   float64     `json:"duration"`
		InputLens  []int       `json:"input_lens"`
		OutputLens []int       `json:"output_lens"`
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		Latencies  []float64   `json:"latencies"`
		Errors     []string    `json:"errors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var res refResult
	vals := map[string][]float64{}
	var allTPOT []float64
	var okLens []int
	for i := range doc.TTFTs {
		if doc.Errors[i] != "" {
			res.failed++
			continue
		}
		gaps := 0.0 // files without latencies: TTFT + sum of gaps, as report documents
		for _, g := range doc.ITLs[i] {
			gaps += g
		}
		latency := doc.TTFTs[i] + gaps
		if doc.Latencies != nil {
			latency = doc.Latencies[i]
		}
		n := doc.OutputLens[i]
		res.completed++
		res.totalIn += doc.InputLens[i]
		res.totalOut += n
		tpot := 0.0
		if n > 1 {
			tpot = (latency - doc.TTFTs[i]) / float64(n-1)
			vals["tpot"] = append(vals["tpot"], tpot)
		}
		allTPOT = append(allTPOT, tpot)
		vals["itl"] = append(vals["itl"], doc.ITLs[i]...)
		vals["ttft"] = append(vals["ttft"], doc.TTFTs[i])
		vals["e2el"] = append(vals["e2el"], latency)
		okLens = append(okLens, n)
	}
	for i := range vals["ttft"] {
		if vals["ttft"][i] <= ttftMs/1000 && allTPOT[i] <= tpotMs/1000 {
			res.good++
			res.goodTokens += okLens[i]
		}
	}
	d := doc.Duration
	res.reqTput, res.outTput = float64(res.completed)/d, float64(res.totalOut)/d
	res.totTput = float64(res.totalIn+res.totalOut) / d
	res.goodput, res.goodTok = float64(res.good)/d, float64(res.goodTokens)/d
	res.stats, res.nearest99 = map[string][3]float64{}, map[string]float64{}
	for k, v := range vals {
		if len(v) == 0 {
			continue
		}
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		sum := 0.0
		for _, x := range s {
			sum += x
		}
		pct := func(p float64) float64 { // numpy "linear": rank (n-1)p between neighbours
			pos := p / 100 * float64(len(s)-1)
			below := int(pos)
			if below+1 >= len(s) {
				return s[len(s)-1]
			}
			return s[below] + (pos-float64(below))*(s[below+1]-s[below])
		}
		res.stats[k] = [3]float64{sum / float64(len(s)), pct(50), pct(99)}
		rank := int(math.Ceil(0.99 * float64(len(s))))
		res.nearest99[k] = s[max(rank, 1)-1]
	}
	return res
}

// TestAgreesWithReference generates bench files and checks every number
// against the reference: counts and goodput exactly, floating-point
// statistics to 1e-12 relative (the reference sums naively, numpy pairwise).
func TestAgreesWithReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	objs, _ := ParseGoodput([]string{"ttft:500 tpot:50"})
	for i := range 40 {
		n := 1 + r.IntN(300)
		g := randomFile(r, n)
		data := g.json()
		want := reference(t, data, 500, 50)
		f, err := ParseBench(data, fmt.Sprint("gen", i))
		if err != nil {
			t.Fatal(err)
		}
		got := Evaluate(f, BenchOptions{Goodput: objs})
		near := Evaluate(f, BenchOptions{Goodput: objs, Nearest: true})
		ints := [][3]any{
			{"completed", got.Completed, want.completed}, {"failed", got.Failed, want.failed},
			{"input", got.TotalInput, want.totalIn}, {"output", got.TotalOutput, want.totalOut},
			{"good", got.Goodput.GoodRequests, want.good}, {"good tokens", got.Goodput.GoodTokens, want.goodTokens},
		}
		for _, c := range ints {
			if c[1] != c[2] {
				t.Errorf("file %d: %s = %v, reference %v", i, c[0], c[1], c[2])
			}
		}
		floats := [][3]any{
			{"request throughput", got.RequestThroughput, want.reqTput},
			{"output throughput", got.OutputThroughput, want.outTput},
			{"total throughput", got.TotalTokenThroughput, want.totTput},
			{"goodput", got.Goodput.RequestsPerSecond, want.goodput},
			{"goodput tokens", got.Goodput.TokensPerSecond, want.goodTok},
		}
		stats := map[string][2]Stat{"ttft": {got.TTFT, near.TTFT}, "tpot": {got.TPOT, near.TPOT}, "itl": {got.ITL, near.ITL}, "e2el": {got.E2EL, near.E2EL}}
		for k, s := range stats {
			w, ok := want.stats[k]
			if !ok {
				if s[0].Count != 0 {
					t.Errorf("file %d: %s has %d samples, reference none", i, k, s[0].Count)
				}
				continue
			}
			floats = append(floats,
				[3]any{k + " mean", s[0].Mean, w[0]},
				[3]any{k + " median", s[0].Median, w[1]},
				[3]any{k + " p50", mustValue(t, s[0], 50), w[1]},
				[3]any{k + " p99", mustValue(t, s[0], 99), w[2]},
				[3]any{k + " nearest p99", mustValue(t, s[1], 99), want.nearest99[k]})
		}
		for _, c := range floats {
			a, b := c[1].(float64), c[2].(float64)
			if math.Abs(a-b) > 1e-12*math.Max(math.Abs(a), math.Abs(b)) {
				t.Errorf("file %d: %s = %v, reference %v", i, c[0], a, b)
			}
		}
	}
}
