package scrape

import (
	"slices"
	"strings"
	"testing"
)

// TestRequestAborted reads the engine's own aborted-request count, per
// profile, from small expositions: vLLM's abort series of the finished-request
// counter (engines summed, the other reasons left to the total), Ray Serve's
// re-export of it in both spellings, and SGLang's own counter. Where the
// count has no series, the family is missing while the total is not.
func TestRequestAborted(t *testing.T) {
	const vllmText = `# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 10
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 2
vllm:request_success_total{engine="1",finished_reason="length",model_name="m"} 7
vllm:request_success_total{engine="1",finished_reason="abort",model_name="m"} 3
vllm:request_success_total{engine="1",finished_reason="error",model_name="m"} 1
`
	tests := []struct {
		name, body, contentType string
		profile                 Profile
		found                   string  // the name RequestAborted is read from; "" when missing
		aborted, total          float64 // per model "m"
	}{
		{name: "vllm", profile: VLLM, body: vllmText,
			found: `vllm:request_success_total{finished_reason="abort"}`, aborted: 5, total: 23},
		{name: "vllm openmetrics", profile: VLLM, contentType: ctOM, body: `# TYPE vllm:request_success counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 10
vllm:request_success_created{engine="0",finished_reason="stop",model_name="m"} 1.7e+09
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 4
vllm:request_success_created{engine="0",finished_reason="abort",model_name="m"} 1.7e+09
# EOF
`, found: `vllm:request_success_total{finished_reason="abort"}`, aborted: 4, total: 14},
		{name: "vllm V0 before its first abort", profile: VLLM, body: `# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="length",model_name="m"} 1
`, total: 1},
		{name: "abort on another label", profile: VLLM, body: `# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m",reason="abort"} 6
`, total: 6},
		{name: "ray-vllm underscore", profile: RayVLLM, body: strings.NewReplacer(
			"vllm:", "ray_vllm_", `engine="0"`, `ReplicaId="a"`, `engine="1"`, `ReplicaId="b"`).Replace(vllmText),
			found: `ray_vllm_request_success_total{finished_reason="abort"}`, aborted: 5, total: 23},
		{name: "ray-vllm colon", profile: RayVLLM, body: strings.ReplaceAll(vllmText, "vllm:", "ray_vllm:"),
			found: `ray_vllm:request_success_total{finished_reason="abort"}`, aborted: 5, total: 23},
		{name: "sglang", profile: SGLang, body: `# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m",tp_rank="0"} 30
sglang:num_requests_total{model_name="m",tp_rank="1"} 20
# TYPE sglang:num_aborted_requests_total counter
sglang:num_aborted_requests_total{model_name="m",tp_rank="0"} 4
sglang:num_aborted_requests_total{model_name="m",tp_rank="1"} 1
`, found: "sglang:num_aborted_requests_total", aborted: 5, total: 50},
		{name: "sglang before its first abort", profile: SGLang, body: `# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m",tp_rank="0"} 30
# HELP sglang:num_aborted_requests_total Number of requests aborted.
# TYPE sglang:num_aborted_requests_total counter
`, total: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Parse([]byte(tt.body), tt.contentType, tt.profile, scrapeTime)
			if err != nil {
				t.Fatal(err)
			}
			ms := snap.Models["m"]
			if ms == nil {
				t.Fatalf("no model m: %v", keys(snap.Models))
			}
			if got := ms.Counters[RequestSuccess]; got != tt.total {
				t.Errorf("request_success = %v, want %v over every reason", got, tt.total)
			}
			got, ok := ms.Counters[RequestAborted]
			if found := snap.Found[RequestAborted]; found != tt.found || ok != (tt.found != "") || got != tt.aborted {
				t.Errorf("request_aborted = %v (present %v, found %q), want %v found %q", got, ok, found, tt.aborted, tt.found)
			}
			if missing := slices.Contains(snap.Missing, RequestAborted); missing != (tt.found == "") {
				t.Errorf("missing %v, want request_aborted listed: %v", snap.Missing, tt.found == "")
			}
		})
	}
}

// TestRequestAbortedWrongType: a finished-request counter declared as a
// gauge is refused for both families that read it.
func TestRequestAbortedWrongType(t *testing.T) {
	body := `# TYPE vllm:request_success_total gauge
vllm:request_success_total{finished_reason="abort",model_name="m"} 2
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1
`
	snap, err := Parse([]byte(body), "", VLLM, scrapeTime)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Family{RequestSuccess, RequestAborted} {
		if !slices.Contains(snap.Missing, f) {
			t.Errorf("%s not missing: found %v", f, snap.Found)
		}
	}
}

// TestRequestAbortedRejects: a broken abort series rejects the model as a
// broken series of any family does, naming the aborted family too.
func TestRequestAbortedRejects(t *testing.T) {
	body := `# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="abort",model_name="bad"} NaN
vllm:request_success_total{finished_reason="abort",model_name="good"} 3
vllm:request_success_total{finished_reason="stop",model_name="good"} 4
`
	snap, err := Parse([]byte(body), "", VLLM, scrapeTime)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Models["bad"]; ok {
		t.Error("model with a NaN abort series kept")
	}
	if g := snap.Models["good"]; g == nil || g.Counters[RequestAborted] != 3 || g.Counters[RequestSuccess] != 7 {
		t.Errorf("good model: %+v", g)
	}
	var rejected []Family
	for _, r := range snap.Rejected {
		rejected = append(rejected, r.Family)
	}
	if !slices.Contains(rejected, RequestSuccess) || !slices.Contains(rejected, RequestAborted) {
		t.Errorf("rejections %v, want request_success and request_aborted", rejected)
	}
}

// TestSplitName checks the label matcher of profile names, and that a
// malformed one leaves a name no series can carry.
func TestSplitName(t *testing.T) {
	tests := []struct{ in, metric, label, value string }{
		{"vllm:request_success_total", "vllm:request_success_total", "", ""},
		{`vllm:request_success_total{finished_reason="abort"}`, "vllm:request_success_total", "finished_reason", "abort"},
		{`x{l="a\"b"}`, "x", "l", `a"b`},
		{`x{l=abort}`, `x{l=abort}`, "", ""},
		{`x{="a"}`, `x{="a"}`, "", ""},
		{`x{l="a"`, `x{l="a"`, "", ""},
	}
	for _, tt := range tests {
		m, l, v := SplitName(tt.in)
		if m != tt.metric || l != tt.label || v != tt.value {
			t.Errorf("SplitName(%q) = %q, %q, %q; want %q, %q, %q", tt.in, m, l, v, tt.metric, tt.label, tt.value)
		}
	}
}
