package scrape

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// FamilySpec maps one logical family to the names an engine exposes it under.
type FamilySpec struct {
	Family Family
	Kind   Kind
	// Names are the exposed family names (histograms and gauges as in `# TYPE`,
	// counters with their `_total` suffix), newest generation first. The first
	// name present in a scrape is used.
	//
	// A name may end in one label matcher, as in PromQL:
	// `vllm:request_success_total{finished_reason="abort"}` reads only the
	// series of that name whose label has that value, and is present only when
	// such a series is. Several families may read one exposed name this way
	// (the total over every finish reason and the aborted ones alone).
	Names []string
}

// SplitName splits a profile name into the exposed metric name and its
// optional label matcher: `foo_total{reason="abort"}` gives "foo_total",
// "reason", "abort"; a plain name gives itself and two empty strings. A
// malformed matcher leaves the whole name as the metric name, which no
// exposed series can carry, so the family reads as missing instead of
// reading the wrong series.
func SplitName(name string) (metric, label, value string) {
	open := strings.IndexByte(name, '{')
	if open < 0 || !strings.HasSuffix(name, "}") {
		return name, "", ""
	}
	inner := name[open+1 : len(name)-1]
	eq := strings.IndexByte(inner, '=')
	if eq <= 0 {
		return name, "", ""
	}
	v, err := strconv.Unquote(inner[eq+1:])
	if err != nil {
		return name, "", ""
	}
	return name[:open], inner[:eq], v
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

// vllmFamilies is vLLM's mapping, written with a prefix placeholder so that
// the same table serves vLLM itself and re-exports that rename its series.
// Within a family, names run newest first: the first one present is used.
//
// Versions, from what vLLM's own history shows:
//   - TTFT, e2e, the token counters and histograms, request_success and the
//     running/waiting gauges exist in every version from V0 (0.4) to today.
//   - queue/prefill/decode/inference histograms: V0 from about 0.6, V1 always.
//   - vllm:request_time_per_output_token_seconds (per-request TPOT): 0.11 on.
//     Older servers have none: a TPOT objective reads as missing there.
//   - The per-output-gap histogram was vllm:time_per_output_token_seconds
//     until 0.10.1, both names in 0.10.2 to 0.14 (same observations), and
//     vllm:inter_token_latency_seconds only from 0.15.
//   - The KV-cache gauge was vllm:gpu_cache_usage_perc until 0.9.1, both in
//     0.9.2 to 0.11, vllm:kv_cache_usage_perc only from 0.12.
//   - request_success_total carries finished_reason. V1 creates the series
//     of every reason at start-up (abort included, at 0); V0 creates one at
//     the first request that finishes for that reason, so its abort series
//     (and the aborted family) is absent until then. Released vLLM does not
//     count client cancellations there, only requests the engine itself
//     finishes as aborted.
//
// Bucket edges are never assumed: each scrape carries its own (vLLM widened
// TTFT to 2560 s and request latencies to 7680 s in 0.8.4), and a layout that
// changes between scrapes starts a new history segment.
var vllmFamilies = []FamilySpec{
	{TTFT, KindHistogram, []string{"@time_to_first_token_seconds"}},
	{TPOT, KindHistogram, []string{"@request_time_per_output_token_seconds"}},
	{ITL, KindHistogram, []string{"@inter_token_latency_seconds", "@time_per_output_token_seconds"}},
	{E2E, KindHistogram, []string{"@e2e_request_latency_seconds"}},
	{Queue, KindHistogram, []string{"@request_queue_time_seconds"}},
	{Prefill, KindHistogram, []string{"@request_prefill_time_seconds"}},
	{Decode, KindHistogram, []string{"@request_decode_time_seconds"}},
	{Inference, KindHistogram, []string{"@request_inference_time_seconds"}},
	{PromptTokensHist, KindHistogram, []string{"@request_prompt_tokens"}},
	{GenerationTokensHist, KindHistogram, []string{"@request_generation_tokens"}},
	{PromptTokens, KindCounter, []string{"@prompt_tokens_total"}},
	{GenerationTokens, KindCounter, []string{"@generation_tokens_total"}},
	{RequestSuccess, KindCounter, []string{"@request_success_total"}},
	{RequestAborted, KindCounter, []string{`@request_success_total{finished_reason="abort"}`}},
	{Running, KindGauge, []string{"@num_requests_running"}},
	{Waiting, KindGauge, []string{"@num_requests_waiting"}},
	{KVCacheUsage, KindGauge, []string{"@kv_cache_usage_perc", "@gpu_cache_usage_perc"}},
	{RequestRejected, KindCounter, []string{"@admission_rejections_total"}},
	{WaitingCapacity, KindGauge, []string{`@num_requests_waiting_by_reason{reason="capacity"}`}},
	{WaitingDeferred, KindGauge, []string{`@num_requests_waiting_by_reason{reason="deferred"}`}},
	{Preemptions, KindCounter, []string{"@num_preemptions_total"}},
	{PreemptionsHist, KindHistogram, []string{"@request_num_preemptions"}},
	{PromptTokensComputed, KindCounter, []string{`@prompt_tokens_by_source_total{source="local_compute"}`}},
	{PromptTokensCached, KindCounter, []string{`@prompt_tokens_by_source_total{source="local_cache_hit"}`}},
	{PromptTokensExternal, KindCounter, []string{`@prompt_tokens_by_source_total{source="external_kv_transfer"}`}},
}

// prefixed returns families with the placeholder "@" of every name replaced
// by each prefix in turn (all names of the first prefix, then the next), so
// that one family may be read from any of several spellings.
func prefixed(families []FamilySpec, prefixes ...string) []FamilySpec {
	out := make([]FamilySpec, len(families))
	for i, f := range families {
		out[i] = FamilySpec{Family: f.Family, Kind: f.Kind}
		for _, prefix := range prefixes {
			for _, n := range f.Names {
				out[i].Names = append(out[i].Names, prefix+strings.TrimPrefix(n, "@"))
			}
		}
	}
	return out
}

// VLLM is the profile of vLLM, V0 (0.4) to today: one profile that adapts,
// since every scrape names the families it has (see vllmFamilies for which
// version has which). The families of the newest servers (admission
// rejections, waiting by reason, preemptions, prompt tokens by source) are
// optional (Family.Optional): read where present, never reported missing on
// older servers. Families no series is computed from
// (request_prefill_kv_computed_tokens, the speculative-decoding counters)
// are left out.
var VLLM = Profile{Name: "vllm", Families: prefixed(vllmFamilies, "vllm:")}

// RayVLLM is the profile of vLLM served by Ray Serve (LLMConfig with
// log_engine_metrics), whose metrics Ray's agent re-exports on each node:
// every name gains Ray's "ray_" namespace, and vLLM from about 0.10 replaces
// the colon by an underscore for OpenTelemetry (ray_vllm_...), while older
// ones keep it (ray_vllm:...). Both spellings are accepted, the newer first.
//
// Ray adds the labels WorkerId, ReplicaId, Component, NodeAddress,
// SessionName and Version. Each replica is its own engine, so its series are
// summed with the others per model_name, as vLLM's engine label is. Ray
// before 2.10 exported counters as gauges, which this profile refuses (the
// counter families then read as missing); Ray 2.10 on exports real counters,
// and by default a gauge of the same name beside each, which hides them too
// unless the cluster runs with RAY_EXPORT_COUNTER_AS_GAUGE=0.
var RayVLLM = Profile{Name: "ray-vllm", Families: prefixed(vllmFamilies, "ray_vllm_", "ray_vllm:")}

// SGLang is the profile of SGLang's metrics (served with --enable-metrics),
// checked against a capture of 0.5.10. SGLang has no per-request TPOT,
// prefill, decode or inference histograms, its inter-token histogram counts
// one observation per token, and its token-count histograms exist only with
// --collect-tokens-histogram. The tp_rank label is summed over like vLLM's
// engine: by default only rank 0 of each scheduler reports, and with metrics
// for every scheduler each reports its own requests. Its aborted-request
// counter has no series until the first abort, so that family reads as
// missing until then.
var SGLang = Profile{
	Name: "sglang",
	Families: []FamilySpec{
		{TTFT, KindHistogram, []string{"sglang:time_to_first_token_seconds"}},
		{ITL, KindHistogram, []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
		{E2E, KindHistogram, []string{"sglang:e2e_request_latency_seconds"}},
		{Queue, KindHistogram, []string{"sglang:queue_time_seconds"}},
		{PromptTokensHist, KindHistogram, []string{"sglang:prompt_tokens_histogram"}},
		{GenerationTokensHist, KindHistogram, []string{"sglang:generation_tokens_histogram"}},
		{PromptTokens, KindCounter, []string{"sglang:prompt_tokens_total"}},
		{GenerationTokens, KindCounter, []string{"sglang:generation_tokens_total"}},
		{RequestSuccess, KindCounter, []string{"sglang:num_requests_total"}},
		{RequestAborted, KindCounter, []string{"sglang:num_aborted_requests_total"}},
		{Running, KindGauge, []string{"sglang:num_running_reqs"}},
		{Waiting, KindGauge, []string{"sglang:num_queue_reqs"}},
		{KVCacheUsage, KindGauge, []string{"sglang:token_usage"}},
	},
}

// Profiles lists the built-in profiles by name.
var Profiles = map[string]Profile{
	VLLM.Name:    VLLM,
	RayVLLM.Name: RayVLLM,
	SGLang.Name:  SGLang,
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
