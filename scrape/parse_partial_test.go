package scrape

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lineOf is the 1-based number of the last line of body that is exactly
// text (the second of a duplicated line).
func lineOf(t *testing.T, body, text string) int {
	t.Helper()
	lines := strings.Split(body, "\n")
	slices.Reverse(lines)
	i := slices.Index(lines, text)
	if i < 0 {
		t.Fatalf("no line %q", text)
	}
	return len(lines) - i
}

// edit returns body with old (which must occur exactly once) replaced by new.
func edit(t *testing.T, body, old, new string) string {
	t.Helper()
	if n := strings.Count(body, old); n != 1 {
		t.Fatalf("%q occurs %d times", old, n)
	}
	return strings.Replace(body, old, new, 1)
}

const (
	llamaTTFTInf = `vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 31.0`
	llamaTTFTTop = `vllm:time_to_first_token_seconds_bucket{engine="0",le="2560.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 31.0`
	qwenRunning  = `vllm:num_requests_running{engine="1",model_name="Qwen/Qwen2.5-7B-Instruct"} 11.0`
	llamaGen     = `vllm:generation_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2234.0`
	llamaTTFT1   = `vllm:time_to_first_token_seconds_bucket{engine="1",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0`
)

// TestParsePartial checks that a family failing validation for one model of
// a two-model exposition rejects that model only: the other model's values
// are exactly those of the intact exposition, the rejected model is absent,
// and each rejection names the family, the model, the line and the reason.
func TestParsePartial(t *testing.T) {
	intact := string(readTestdata(t, "two_models.txt"))
	whole := mustParse(t, []byte(intact), ctText004)
	type rejection struct {
		family    Family
		model     string
		reason    string
		line      string // the text of the line the error must point at
		inMessage string
	}
	for _, tc := range []struct {
		name string
		body func(t *testing.T) string
		kept string
		want []rejection
	}{
		{
			name: "histogram truncated before +Inf",
			body: func(t *testing.T) string { return edit(t, intact, llamaTTFTInf+"\n", "") },
			kept: qwen,
			want: []rejection{{family: TTFT, model: llama, reason: ReasonInvalidHistogram, line: llamaTTFTTop,
				inMessage: `family "vllm:time_to_first_token_seconds" model "meta-llama/Llama-3.1-8B-Instruct": invalid_histogram: {engine="0", model_name="meta-llama/Llama-3.1-8B-Instruct"}: no +Inf bucket (highest le=2560)`}},
		},
		{
			name: "NaN gauge",
			body: func(t *testing.T) string {
				return edit(t, intact, qwenRunning, strings.Replace(qwenRunning, "11.0", "NaN", 1))
			},
			kept: llama,
			want: []rejection{{family: Running, model: qwen, reason: ReasonInvalidValue,
				line: strings.Replace(qwenRunning, "11.0", "NaN", 1), inMessage: "gauge value NaN"}},
		},
		{
			name: "duplicate counter series",
			body: func(t *testing.T) string { return edit(t, intact, llamaGen+"\n", llamaGen+"\n"+llamaGen+"\n") },
			kept: qwen,
			want: []rejection{{family: GenerationTokens, model: llama, reason: ReasonDuplicateSeries, line: llamaGen, inMessage: "seen twice"}},
		},
		{
			name: "engines of one model with different buckets",
			body: func(t *testing.T) string {
				return edit(t, intact, `engine="1",le="2560.0",model_name="meta-llama/Llama-3.1-8B-Instruct"`, `engine="1",le="1280.0",model_name="meta-llama/Llama-3.1-8B-Instruct"`)
			},
			kept: qwen,
			want: []rejection{{family: TTFT, model: llama, reason: ReasonInvalidHistogram, line: llamaTTFT1, inMessage: "bucket layout"}},
		},
		{
			name: "two families of one model, listed in profile order",
			body: func(t *testing.T) string {
				b := edit(t, intact, llamaGen+"\n", llamaGen+"\n"+llamaGen+"\n")
				return edit(t, b, llamaTTFTInf+"\n", "")
			},
			kept: qwen,
			want: []rejection{
				{family: TTFT, model: llama, reason: ReasonInvalidHistogram, line: llamaTTFTTop, inMessage: "no +Inf bucket"},
				{family: GenerationTokens, model: llama, reason: ReasonDuplicateSeries, line: llamaGen, inMessage: "seen twice"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body(t)
			s, err := Parse([]byte(body), ctText004, VLLM, scrapeTime)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := keys(s.Models); !slices.Equal(got, []string{tc.kept}) {
				t.Fatalf("models %v, want only %q", got, tc.kept)
			}
			if !reflect.DeepEqual(s.Models[tc.kept], whole.Models[tc.kept]) {
				t.Errorf("kept model differs from the intact exposition's:\n%+v\nwant\n%+v", s.Models[tc.kept], whole.Models[tc.kept])
			}
			if !reflect.DeepEqual(s.Found, whole.Found) || !slices.Equal(s.Missing, whole.Missing) {
				t.Errorf("Found %v Missing %v, want those of the intact exposition", s.Found, s.Missing)
			}
			if len(s.Rejected) != len(tc.want) {
				t.Fatalf("rejected %+v, want %d", s.Rejected, len(tc.want))
			}
			for i, w := range tc.want {
				r := s.Rejected[i]
				if r.Family != w.family || r.Model != w.model || r.Err.Reason != w.reason {
					t.Errorf("rejection %d: %s %q %s, want %s %q %s", i, r.Family, r.Model, r.Err.Reason, w.family, w.model, w.reason)
				}
				if want := lineOf(t, body, w.line); r.Err.Line != want {
					t.Errorf("rejection %d: line %d, want %d (%v)", i, r.Err.Line, want, r.Err)
				}
				if !strings.Contains(r.Err.Error(), w.inMessage) {
					t.Errorf("rejection %d: message %q lacks %q", i, r.Err, w.inMessage)
				}
			}
		})
	}
}

// TestParsePartialWholeFailures checks what still fails the whole scrape: a
// syntax error (textparse stops), and rejections that leave no model.
func TestParsePartialWholeFailures(t *testing.T) {
	intact := string(readTestdata(t, "two_models.txt"))
	single := string(readTestdata(t, "single_process.txt"))
	// A paste cut off inside the e2e histogram of the only model.
	lines := strings.Split(single, "\n")
	cut := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, `vllm:e2e_request_latency_seconds_bucket{engine="0",le="5.0"`)
	})
	if cut < 0 {
		t.Fatal("single_process.txt has no e2e le=5.0 bucket")
	}
	truncated := strings.Join(lines[:cut+1], "\n")
	broken := `vllm:time_to_first_token_seconds_bucket{engine="1",le="640.0",model_name="Qwen/Qwen2.5-7B-Instruct"} 32.0`
	oneFamily := edit(t, edit(t, intact, llamaTTFTInf+"\n", ""), broken, strings.Replace(broken, "32.0", "3.0", 1))
	for _, tc := range []struct {
		name, body string
		reason     string
		line       int
		message    string
	}{
		{
			name: "syntax error between two valid models", reason: ReasonInvalidExposition,
			body: edit(t, intact, qwenRunning, `vllm:num_requests_running{engine="1",model_name="Qwen/Qwen2.5-7B-Instruct" 11.0`),
			line: lineOf(t, intact, qwenRunning),
		},
		{
			name: "truncated paste of a one-model server", reason: ReasonInvalidHistogram,
			body: truncated, line: cut + 1,
			message: `line ` + strconv.Itoa(cut+1) + `: family "vllm:e2e_request_latency_seconds" model "Qwen/Qwen2.5-7B-Instruct": invalid_histogram: {engine="0", model_name="Qwen/Qwen2.5-7B-Instruct"}: no +Inf bucket (highest le=5)`,
		},
		{
			name: "both models broken: the first rejection in profile order", reason: ReasonInvalidHistogram,
			body: edit(t, edit(t, intact, llamaTTFTInf+"\n", ""), qwenRunning, strings.Replace(qwenRunning, "11.0", "NaN", 1)),
			line: lineOf(t, intact, llamaTTFTTop),
		},
		{
			name: "both models broken in one family: the first model", reason: ReasonInvalidHistogram,
			body: oneFamily, line: lineOf(t, oneFamily, strings.Replace(broken, "32.0", "3.0", 1)),
			message: "below le=160 count 30",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.body), ctText004, VLLM, scrapeTime)
			var pe *ParseError
			if s != nil || !errors.As(err, &pe) {
				t.Fatalf("snapshot %v, error %v: want a *ParseError alone", s, err)
			}
			if pe.Reason != tc.reason || pe.Line != tc.line {
				t.Errorf("reason %s line %d, want %s line %d (%v)", pe.Reason, pe.Line, tc.reason, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message\n%s\nwant\n%s", err, tc.message)
			}
		})
	}
}

// TestParseUnusedNameErrorsIgnored checks that an error in a name the
// profile does not use (an older generation served beside the newest) rejects
// nothing.
func TestParseUnusedNameErrorsIgnored(t *testing.T) {
	body := "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:gpu_cache_usage_perc{model_name=\"m\"} NaN\n"
	s := mustParse(t, []byte(body), "")
	if len(s.Rejected) != 0 || s.Models["m"].Gauges[KVCacheUsage] != 0.5 {
		t.Errorf("rejected %+v, gauges %v", s.Rejected, s.Models["m"].Gauges)
	}
}
