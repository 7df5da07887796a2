package benchreport

import (
	"math"
	"strings"
	"testing"
)

// TestParseBenchErrors: malformed files give errors that name the file and
// the problem.
func TestParseBenchErrors(t *testing.T) {
	ok := `"duration": 1, "ttfts": [0.1], "itls": [[0.01]], "input_lens": [1], "output_lens": [2]`
	cases := []struct{ name, body, want string }{
		{"not json", `{"duration":`, "not a vllm bench serve result"},
		{"NaN", `{"duration": NaN}`, "NaN and Infinity are not JSON numbers"},
		{"array", `[1]`, "not a vllm bench serve result"},
		{"no duration", `{"ttfts": []}`, "no duration"},
		{"zero duration", `{"duration": 0}`, "duration 0 is not a positive"},
		{"not detailed", `{"duration": 1}`, "--save-detailed"},
		{"mismatched", `{"duration": 1, "ttfts": [0.1, 0.2], "itls": [[], []], "input_lens": [1], "output_lens": [1, 1]}`, "input_lens has 1 entries, ttfts has 2"},
		{"mismatched errors", `{` + ok + `, "errors": []}`, "errors has 0 entries"},
		{"negative ttft", `{"duration": 1, "ttfts": [-0.1], "itls": [[]], "input_lens": [1], "output_lens": [1]}`, "request 0: ttft -0.1"},
		{"negative itl", `{"duration": 1, "ttfts": [0.1], "itls": [[0.1, -2]], "input_lens": [1], "output_lens": [3]}`, "itl 1 is -2"},
		{"negative length", `{"duration": 1, "ttfts": [0.1], "itls": [[]], "input_lens": [-1], "output_lens": [1]}`, "negative token count"},
		{"bad rate", `{` + ok + `, "request_rate": "fast"}`, `request_rate: "fast"`},
		{"negative rate", `{` + ok + `, "request_rate": -1}`, "not a positive rate"},
		{"negative concurrency", `{` + ok + `, "max_concurrency": -3}`, "max_concurrency -3"},
		{"string ttft", `{"duration": 1, "ttfts": ["a"], "itls": [[]], "input_lens": [1], "output_lens": [1]}`, "not a vllm bench serve result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseBench([]byte(c.body), "x.json")
			if err == nil {
				t.Fatalf("no error for %s", c.body)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.json") {
				t.Errorf("error %q lacks %q or the file name", err, c.want)
			}
		})
	}
}

// TestParseBenchFields reads rates, caps and success as vLLM saves them.
func TestParseBenchFields(t *testing.T) {
	body := `{"duration": 2, "request_rate": "inf", "max_concurrency": 8, "completed": 2,
		"ttfts": [0.1, 0, 0.2, 0.3], "itls": [[0.01], [], [], [0.02, 0.02]], "input_lens": [1, 2, 3, 4],
		"output_lens": [2, 0, 1, 3], "errors": ["", "", "", "timeout"]}`
	f, err := ParseBench([]byte(body), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(f.RequestRate, 1) || f.MaxConcurrency != 8 || f.HasStartTimes || f.HasLatencies {
		t.Errorf("fields: %+v", f)
	}
	var oks []bool
	for _, r := range f.Requests {
		oks = append(oks, r.OK)
	}
	// The second has no error text but no answer either (vLLM's failed
	// request with an empty reason); the fourth has an error.
	if want := []bool{true, false, true, false}; !equalBools(oks, want) {
		t.Errorf("success %v, want %v", oks, want)
	}
	r := Evaluate(f, BenchOptions{})
	if r.Completed != 2 || r.TPOT.Count != 1 || r.Goodput != nil || r.Cost != nil {
		t.Errorf("result: completed %d, tpot samples %d, goodput %v, cost %v", r.Completed, r.TPOT.Count, r.Goodput, r.Cost)
	}
	if len(r.Notes) != 2 || !strings.Contains(r.Notes[0], "Little's Law only") {
		t.Errorf("notes %q, want the start_times and latencies notes", r.Notes)
	}
	if f, err := ParseBench([]byte(`{"duration": 1, "request_rate": 4, "ttfts": [], "itls": [], "input_lens": [], "output_lens": []}`), "y"); err != nil || f.RequestRate != 4 {
		t.Errorf("numeric rate: %v %v", f, err)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
