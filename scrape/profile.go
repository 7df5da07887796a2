package scrape

import (
	"fmt"
	"sort"
)

// FamilySpec maps one logical family to the names an engine exposes it under.
type FamilySpec struct {
	Family Family
	Kind   Kind
	// Names are the exposed family names (histograms and gauges as in `# TYPE`,
	// counters with their `_total` suffix), newest generation first. The first
	// name present in a scrape is used.
	Names []string
}

// Profile is an engine's metric-name mapping: metric names are data, chosen per
// target.
type Profile struct {
	Name     string
	Families []FamilySpec
}

// Spec returns the profile's mapping for a family.
func (p Profile) Spec(f Family) (FamilySpec, bool) {
	for _, s := range p.Families {
		if s.Family == f {
			return s, true
		}
	}
	return FamilySpec{}, false
}

// Measures reports whether the profile maps the family at all, so a config can
// reject objectives the engine cannot measure.
func (p Profile) Measures(f Family) bool {
	_, ok := p.Spec(f)
	return ok
}

// VLLM is the profile of vLLM's V1 engine. It accepts both generations of names:
// the per-token-gap histogram was `vllm:time_per_output_token_seconds` before
// it became `vllm:inter_token_latency_seconds`, and the KV-cache gauge was
// `vllm:gpu_cache_usage_perc` before `vllm:kv_cache_usage_perc`.
var VLLM = Profile{
	Name: "vllm",
	Families: []FamilySpec{
		{TTFT, KindHistogram, []string{"vllm:time_to_first_token_seconds"}},
		{TPOT, KindHistogram, []string{"vllm:request_time_per_output_token_seconds"}},
		{ITL, KindHistogram, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
		{E2E, KindHistogram, []string{"vllm:e2e_request_latency_seconds"}},
		{Queue, KindHistogram, []string{"vllm:request_queue_time_seconds"}},
		{Prefill, KindHistogram, []string{"vllm:request_prefill_time_seconds"}},
		{Decode, KindHistogram, []string{"vllm:request_decode_time_seconds"}},
		{Inference, KindHistogram, []string{"vllm:request_inference_time_seconds"}},
		{PromptTokensHist, KindHistogram, []string{"vllm:request_prompt_tokens"}},
		{GenerationTokensHist, KindHistogram, []string{"vllm:request_generation_tokens"}},
		{PromptTokens, KindCounter, []string{"vllm:prompt_tokens_total"}},
		{GenerationTokens, KindCounter, []string{"vllm:generation_tokens_total"}},
		{RequestSuccess, KindCounter, []string{"vllm:request_success_total"}},
		{Running, KindGauge, []string{"vllm:num_requests_running"}},
		{Waiting, KindGauge, []string{"vllm:num_requests_waiting"}},
		{KVCacheUsage, KindGauge, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
	},
}

// SGLang is the profile of SGLang's metrics (served with --enable-metrics).
// SGLang has no per-request TPOT, prefill, decode or inference histograms, and
// its inter-token histogram counts one observation per token.
var SGLang = Profile{
	Name: "sglang",
	Families: []FamilySpec{
		{TTFT, KindHistogram, []string{"sglang:time_to_first_token_seconds"}},
		{ITL, KindHistogram, []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
		{E2E, KindHistogram, []string{"sglang:e2e_request_latency_seconds"}},
		{Queue, KindHistogram, []string{"sglang:queue_time_seconds"}},
		{PromptTokens, KindCounter, []string{"sglang:prompt_tokens_total"}},
		{GenerationTokens, KindCounter, []string{"sglang:generation_tokens_total"}},
		{Running, KindGauge, []string{"sglang:num_running_reqs"}},
		{Waiting, KindGauge, []string{"sglang:num_queue_reqs"}},
		{KVCacheUsage, KindGauge, []string{"sglang:token_usage"}},
	},
}

// Profiles lists the built-in profiles by name.
var Profiles = map[string]Profile{
	VLLM.Name:   VLLM,
	SGLang.Name: SGLang,
}

// LookupProfile returns the named built-in profile.
func LookupProfile(name string) (Profile, error) {
	p, ok := Profiles[name]
	if !ok {
		names := make([]string, 0, len(Profiles))
		for n := range Profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return Profile{}, fmt.Errorf("unknown profile %q (known: %v)", name, names)
	}
	return p, nil
}
