package sim

import "fmt"

// Format is the overall shape of the exposition, after the way a given vLLM
// deployment serves /metrics.
type Format int

// The exposition formats.
const (
	// SingleProcess is prometheus_client's generate_latest (one API server):
	// HELP/TYPE for every family, sorted labels, buckets then _count then _sum,
	// `_created` gauge families, python_/process_ families.
	SingleProcess Format = iota
	// MultiProcess is prometheus_client's multiprocess collector
	// (--api-server-count > 1): _sum lines first, no `_created`, no python_/
	// process_ families, http_* summaries with only _count/_sum, and a
	// pid-labelled KV-cache gauge.
	MultiProcess
	// OpenMetrics is vLLM's experimental Rust frontend: labels in declaration
	// order, integer counts, no `_created`, `# EOF` at the end.
	OpenMetrics
)

// Content types served per format.
const (
	ContentTypeText004     = "text/plain; version=0.0.4; charset=utf-8"
	ContentTypeText100     = "text/plain; version=1.0.0; charset=utf-8"
	ContentTypeOpenMetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// Style is how the simulated server renders /metrics.
type Style struct {
	Format Format
	// TextVersion1 serves the text formats with `version=1.0.0` in the
	// Content-Type, as prometheus_client >= 0.23 does (the body is the same).
	TextVersion1 bool
	// IntegerLE prints integral bucket edges without ".0" (`le="1"`).
	IntegerLE bool
	// OldNames uses the names of vLLM before v0.11/v0.12:
	// vllm:time_per_output_token_seconds for the per-gap histogram (and no
	// per-request TPOT histogram) and vllm:gpu_cache_usage_perc.
	OldNames bool
	// NoRequestTPOT drops vllm:request_time_per_output_token_seconds, the
	// per-request TPOT family vLLM has only since v0.11 (OldNames drops it too).
	NoRequestTPOT bool
	// Newest adds the families of the newest vLLM (0.30 on) that the other
	// styles leave out: vllm:num_preemptions_total, the per-request
	// vllm:request_num_preemptions (edges 1, 2, 3, 4, 5, 10, 20, from
	// vllm/v1/metrics/buckets.py) and vllm:num_requests_waiting_by_reason
	// {reason="capacity"|"deferred"}, whose reasons sum to
	// num_requests_waiting.
	Newest bool
	// APIServers is the number of API-server processes in MultiProcess format,
	// each of which writes a pid-labelled KV-cache series; 0 means 2.
	APIServers int
}

// ContentType returns the Content-Type header value of the style.
func (s Style) ContentType() string {
	switch {
	case s.Format == OpenMetrics:
		return ContentTypeOpenMetrics
	case s.TextVersion1:
		return ContentTypeText100
	default:
		return ContentTypeText004
	}
}

func (s Style) apiServers() int {
	if s.APIServers <= 0 {
		return 2
	}
	return s.APIServers
}

func (s Style) validate() error {
	if s.Format < SingleProcess || s.Format > OpenMetrics {
		return fmt.Errorf("style: unknown format %d", int(s.Format))
	}
	if s.APIServers < 0 {
		return fmt.Errorf("style: api servers %d, want >= 0", s.APIServers)
	}
	return nil
}
