package benchreport

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// genReq is one generated request of a bench file.
type genReq struct {
	start, ttft, latency float64
	itls                 []float64
	plen, olen           int
	err                  string
}

// genFile is a generated bench file.
type genFile struct {
	reqs       []genReq
	duration   float64
	rate       any // number or "inf"
	maxConc    any // number or nil
	latencies  bool
	startTimes bool
	errorsList bool
	modelID    string
}

// json writes the file as `vllm bench serve --save-result --save-detailed` does.
func (g genFile) json() []byte {
	doc := map[string]any{
		"date": "20260101-000000", "backend": "vllm", "model_id": g.modelID, "tokenizer_id": g.modelID,
		"num_prompts": len(g.reqs), "request_rate": g.rate, "burstiness": 1.0, "max_concurrency": g.maxConc,
		"duration": g.duration,
	}
	in, out, ttfts, lat, st, errs, texts := []int{}, []int{}, []float64{}, []float64{}, []float64{}, []string{}, []string{}
	itls := [][]float64{}
	for _, r := range g.reqs {
		in, out, ttfts = append(in, r.plen), append(out, r.olen), append(ttfts, r.ttft)
		itls = append(itls, append([]float64{}, r.itls...))
		lat, st, errs, texts = append(lat, r.latency), append(st, r.start), append(errs, r.err), append(texts, "")
	}
	doc["input_lens"], doc["output_lens"], doc["ttfts"], doc["itls"], doc["generated_texts"] = in, out, ttfts, itls, texts
	if g.latencies {
		doc["latencies"] = lat
	}
	if g.startTimes {
		doc["start_times"] = st
	}
	if g.errorsList {
		doc["errors"] = errs
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // test data only
	}
	return b
}

// write saves the file under dir and returns its path.
func (g genFile) write(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, g.json(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// randomFile generates n requests with failures, one-token answers, merged
// chunks and values exactly on the usual objectives.
func randomFile(r *rand.Rand, n int) genFile {
	g := genFile{rate: []any{"inf", 2.5, 10.0}[r.IntN(3)], latencies: r.IntN(2) == 0,
		startTimes: r.IntN(2) == 0, errorsList: true, modelID: "gen"}
	t := 0.0
	end := 0.0
	for range n {
		t += r.ExpFloat64() / 5
		if r.IntN(10) == 0 {
			g.reqs = append(g.reqs, genReq{start: t, plen: 1 + r.IntN(500), err: "Internal Server Error"})
			continue
		}
		olen := 2 + r.IntN(80)
		if r.IntN(6) == 0 {
			olen = 1
		}
		ttft := []float64{0.5, 0.25, math.Exp(r.NormFloat64()*0.8 - 1.2)}[r.IntN(3)]
		chunks := olen - 1
		if olen > 5 {
			chunks -= r.IntN(4)
		}
		req := genReq{start: t, ttft: ttft, plen: 1 + r.IntN(500), olen: olen}
		sum := 0.0
		for range chunks {
			gap := []float64{0.05, math.Exp(r.NormFloat64()*0.4 - 3.2)}[r.IntN(2)]
			req.itls = append(req.itls, gap)
			sum += gap
		}
		req.latency = ttft + sum
		end = math.Max(end, t+req.latency)
		g.reqs = append(g.reqs, req)
	}
	g.duration = end + 0.01
	return g
}
