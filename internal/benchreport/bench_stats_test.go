package benchreport

import (
	"math"
	"testing"
)

// TestOneTokenRequests: a one-token request has no TPOT sample but counts
// with TPOT 0 for goodput, as vLLM does.
func TestOneTokenRequests(t *testing.T) {
	body := `{"duration": 1, "ttfts": [0.1, 0.1], "itls": [[], [0.2]], "input_lens": [1, 1], "output_lens": [1, 2], "errors": ["", ""]}`
	f, err := ParseBench([]byte(body), "x")
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := ParseGoodput([]string{"tpot:50"})
	r := Evaluate(f, BenchOptions{Goodput: objs})
	if r.TPOT.Count != 1 || math.Abs(r.TPOT.Mean-0.2) > 1e-15 {
		t.Errorf("TPOT %+v, want one sample of 0.2", r.TPOT)
	}
	if r.Goodput.GoodRequests != 1 || r.Goodput.GoodTokens != 1 {
		t.Errorf("goodput %+v, want the one-token request good", r.Goodput)
	}
}
