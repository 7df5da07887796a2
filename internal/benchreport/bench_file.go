package benchreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// BenchRequest is one request of a `vllm bench serve` run, as saved with
// --save-detailed. Times are in seconds.
type BenchRequest struct {
	// PromptLen and OutputLen are the prompt and output lengths in tokens;
	// vLLM saves OutputLen 0 for a failed request.
	PromptLen, OutputLen int
	// TTFT is the time to the first streamed chunk.
	TTFT float64
	// ITLs are the gaps between consecutive streamed chunks (a chunk may hold
	// several tokens, so there can be fewer than OutputLen−1).
	ITLs []float64
	// Latency is the e2e latency: the file's `latencies` entry, or, for
	// files without it, TTFT plus the sum of ITLs (vLLM's latency is the
	// last chunk's time, so they agree up to floating-point rounding). The
	// gaps are summed first, then added to TTFT.
	Latency float64
	// Start is the send time on the client's monotonic clock, when the file
	// has `start_times` (BenchFile.HasStartTimes).
	Start float64
	// Error is the client's error text; empty when the request succeeded.
	Error string
	// OK is vLLM's success: no error and an answer (a failed request has
	// output length 0 and TTFT 0).
	OK bool
}

// BenchFile is one `vllm bench serve` result file.
type BenchFile struct {
	// Name is where the file was read from.
	Name string
	// Date, Backend and ModelID describe the run.
	Date, Backend, ModelID string
	// RequestRate is the configured request rate (+Inf for "inf"); Burstiness
	// its gamma shape; MaxConcurrency the client's concurrency cap (0: none).
	RequestRate, Burstiness float64
	MaxConcurrency          int
	// Duration is the benchmark's wall-clock duration in seconds: vLLM's
	// denominator of every rate.
	Duration float64
	// Requests are in the order vLLM saved them.
	Requests []BenchRequest
	// HasStartTimes is true when the file holds per-request send times, and
	// HasLatencies when it holds vLLM's own latencies (older files do not).
	HasStartTimes, HasLatencies bool
	// Completed and Failed are the counts vLLM saved (-1 when absent), kept to
	// cross-check our own reading.
	Completed, Failed int
	// Reported holds vLLM's own summary numbers from the file (for example
	// "p99_ttft_ms", "request_goodput"), for cross-checking.
	Reported map[string]float64
}

// rawBench mirrors the JSON keys report reads; everything else is ignored.
type rawBench struct {
	Date           string          `json:"date"`
	Backend        string          `json:"backend"`
	ModelID        string          `json:"model_id"`
	RequestRate    json.RawMessage `json:"request_rate"`
	Burstiness     *float64        `json:"burstiness"`
	MaxConcurrency *int            `json:"max_concurrency"`
	Duration       *float64        `json:"duration"`
	Completed      *int            `json:"completed"`
	Failed         *int            `json:"failed"`
	InputLens      []int           `json:"input_lens"`
	OutputLens     []int           `json:"output_lens"`
	TTFTs          []float64       `json:"ttfts"`
	ITLs           [][]float64     `json:"itls"`
	Latencies      []float64       `json:"latencies"`
	StartTimes     []float64       `json:"start_times"`
	Errors         []string        `json:"errors"`
}

// reportedKeys are the summary numbers kept in BenchFile.Reported.
var reportedKeys = []string{"completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput"}

// benchKeys are keys every `vllm bench serve` result has (the first six
// named in the error for a file with none of them); a JSON object with
// none of these is some other file, not a result saved without details.
var benchKeys = []string{"duration", "completed", "request_rate", "ttfts", "backend", "model_id",
	"date", "failed", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput",
	"input_lens", "output_lens", "itls", "num_prompts"}

// hasBenchKey reports whether data, a JSON object, has any of benchKeys.
func hasBenchKey(data []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return true // not an object: let the typed decoding say what is wrong
	}
	for _, k := range benchKeys {
		if _, ok := keys[k]; ok {
			return true
		}
	}
	return false
}

// ReadBench reads a `vllm bench serve` result file saved with --save-result
// --save-detailed.
func ReadBench(path string) (*BenchFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench file: %w", err)
	}
	return ParseBench(data, path)
}

// ParseBench parses and validates a bench result; name labels errors. Every
// per-request list must be present (ttfts, itls, input_lens, output_lens) or
// optional (latencies, start_times, errors) and all must have one entry per
// request; times and lengths must be finite and non-negative.
func ParseBench(data []byte, name string) (*BenchFile, error) {
	var raw rawBench
	if err := json.Unmarshal(data, &raw); err != nil {
		hint := ""
		if bytes.Contains(data, []byte("NaN")) || bytes.Contains(data, []byte("Infinity")) {
			hint = " (NaN and Infinity are not JSON numbers)"
		}
		return nil, fmt.Errorf("bench file %s: not a vllm bench serve result%s: %w", name, hint, err)
	}
	if !hasBenchKey(data) {
		return nil, fmt.Errorf("bench file %s: not a vllm bench serve result: it has none of its keys (%s); save one with vllm bench serve --save-result --save-detailed",
			name, strings.Join(benchKeys[:6], ", "))
	}
	f := &BenchFile{Name: name, Date: raw.Date, Backend: raw.Backend, ModelID: raw.ModelID,
		Completed: -1, Failed: -1, Burstiness: 1}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("bench file %s: "+format, append([]any{name}, args...)...)
	}
	rate, err := parseRate(raw.RequestRate)
	if err != nil {
		return nil, errf("request_rate: %w", err)
	}
	f.RequestRate = rate
	if raw.Burstiness != nil {
		f.Burstiness = *raw.Burstiness
	}
	if raw.MaxConcurrency != nil {
		if *raw.MaxConcurrency < 0 {
			return nil, errf("max_concurrency %d is negative", *raw.MaxConcurrency)
		}
		f.MaxConcurrency = *raw.MaxConcurrency
	}
	if raw.Duration == nil {
		return nil, errf("no duration: save the result with vllm bench serve --save-result")
	}
	if d := *raw.Duration; !(d > 0) || math.IsInf(d, 0) {
		return nil, errf("duration %v is not a positive number of seconds", d)
	}
	f.Duration = *raw.Duration
	if raw.Completed != nil {
		f.Completed = *raw.Completed
	}
	if raw.Failed != nil {
		f.Failed = *raw.Failed
	}
	if err := f.readRequests(raw); err != nil {
		return nil, errf("%w", err)
	}
	f.Reported = reportedNumbers(data)
	return f, nil
}

// reportedNumbers returns vLLM's own summary numbers in a result: the
// reportedKeys and every number whose key ends in _ms.
func reportedNumbers(data []byte) map[string]float64 {
	out := map[string]float64{}
	var all map[string]any
	if json.Unmarshal(data, &all) != nil {
		return out
	}
	for k, v := range all {
		x, ok := v.(float64)
		if ok && (strings.HasSuffix(k, "_ms") || slices.Contains(reportedKeys, k)) {
			out[k] = x
		}
	}
	return out
}

// readRequests checks the per-request lists and builds Requests.
func (f *BenchFile) readRequests(raw rawBench) error {
	if raw.TTFTs == nil || raw.ITLs == nil || raw.OutputLens == nil || raw.InputLens == nil {
		return errors.New("no per-request data (ttfts, itls, input_lens, output_lens): save the result with vllm bench serve --save-result --save-detailed")
	}
	if err := checkListLengths(raw); err != nil {
		return err
	}
	f.HasStartTimes, f.HasLatencies = raw.StartTimes != nil, raw.Latencies != nil
	f.Requests = make([]BenchRequest, len(raw.TTFTs))
	for i := range f.Requests {
		r, err := readRequest(raw, i)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		f.Requests[i] = r
	}
	return nil
}

// checkListLengths checks that every per-request list present has one entry
// per request (as many as ttfts).
func checkListLengths(raw rawBench) error {
	n := len(raw.TTFTs)
	lists := []struct {
		key     string
		n       int
		present bool
	}{
		{"itls", len(raw.ITLs), true},
		{"input_lens", len(raw.InputLens), true},
		{"output_lens", len(raw.OutputLens), true},
		{"latencies", len(raw.Latencies), raw.Latencies != nil},
		{"start_times", len(raw.StartTimes), raw.StartTimes != nil},
		{"errors", len(raw.Errors), raw.Errors != nil},
	}
	for _, l := range lists {
		if l.present && l.n != n {
			return fmt.Errorf("%s has %d entries, ttfts has %d: the lists must have one entry per request", l.key, l.n, n)
		}
	}
	return nil
}

// readRequest reads request i from the per-request lists (whose lengths
// checkListLengths has checked) and checks its values: token counts and
// times non-negative, times finite. Without vLLM's latencies, the latency
// is TTFT plus the sum of the gaps.
func readRequest(raw rawBench, i int) (BenchRequest, error) {
	r := BenchRequest{PromptLen: raw.InputLens[i], OutputLen: raw.OutputLens[i], TTFT: raw.TTFTs[i], ITLs: raw.ITLs[i]}
	if r.PromptLen < 0 || r.OutputLen < 0 {
		return r, fmt.Errorf("negative token count (input %d, output %d)", r.PromptLen, r.OutputLen)
	}
	if !nonNegative(r.TTFT) {
		return r, fmt.Errorf("ttft %v is not a non-negative number of seconds", r.TTFT)
	}
	sum := 0.0
	for j, g := range r.ITLs {
		if !nonNegative(g) {
			return r, fmt.Errorf("itl %d is %v, not a non-negative number of seconds", j, g)
		}
		sum += g
	}
	r.Latency = r.TTFT + sum
	if raw.Latencies != nil {
		r.Latency = raw.Latencies[i]
	}
	if !nonNegative(r.Latency) || math.IsInf(r.Latency, 0) {
		return r, fmt.Errorf("latency %v is not a non-negative number of seconds", r.Latency)
	}
	if raw.StartTimes != nil {
		r.Start = raw.StartTimes[i]
		if math.IsNaN(r.Start) || math.IsInf(r.Start, 0) {
			return r, fmt.Errorf("start time %v is not a number", r.Start)
		}
	}
	if raw.Errors != nil {
		r.Error = raw.Errors[i]
	}
	r.OK = r.Error == "" && !(r.OutputLen == 0 && r.TTFT == 0)
	return r, nil
}

// parseRate reads request_rate: a number, or the string "inf" vLLM writes
// for an unthrottled run (absent also means inf, vLLM's default).
func parseRate(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return math.Inf(1), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(v) || v <= 0 {
			return 0, fmt.Errorf("%q is neither a positive number nor \"inf\"", s)
		}
		return v, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", raw, err)
	}
	if !(v > 0) {
		return 0, fmt.Errorf("%v is not a positive rate", v)
	}
	return v, nil
}

func nonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
