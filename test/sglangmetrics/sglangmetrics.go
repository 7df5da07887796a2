// Package sglangmetrics renders the simulator's state as SGLang (0.5,
// started with --enable-metrics and --collect-tokens-histogram) serves
// /metrics, from the simulator's vLLM exposition of the same instant, so
// that the tests can read the simulator with the sglang profile. It is test
// harness: no product package imports it.
//
// SGLang's exposition differs from vLLM's in its family names, in `tp_rank`
// on gauges and counters but not on histograms, in one finished-request
// counter without a finish reason (and one of aborted requests), and in the
// families it lacks (per-request TPOT, prefill, decode and inference time,
// and every `_created` family). The bucket edges are the simulator's
// configured ones (SGLang's own defaults differ and are set with its
// --bucket-* flags); the simulator emits one token per step, so its
// inter-token histogram is per token, as SGLang's is. SGLang's scheduler
// reports for the whole model, so every model must have one engine.
package sglangmetrics

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ContentType is the content type SGLang's /metrics is served with.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one SGLang family and the vLLM family it is read from.
type family struct {
	vllm, name, help, typ string
}

// scalars are SGLang's gauges and token counters, in its order.
var scalars = []family{
	{"vllm:num_requests_running", "sglang:num_running_reqs", "The number of running requests.", "gauge"},
	{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge"},
	{"vllm:kv_cache_usage_perc", "sglang:token_usage", "The token usage.", "gauge"},
	{"vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter"},
	{"vllm:generation_tokens_total", "sglang:generation_tokens_total", "Number of generation tokens processed.", "counter"},
}

// histograms are SGLang's histograms, in its order.
var histograms = []family{
	{"vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "histogram"},
	{"vllm:inter_token_latency_seconds", "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", "histogram"},
	{"vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", "histogram"},
	{"vllm:request_queue_time_seconds", "sglang:queue_time_seconds", "Histogram of queueing time in seconds.", "histogram"},
	{"vllm:request_prompt_tokens", "sglang:prompt_tokens_histogram", "Histogram of prompt token length.", "histogram"},
	{"vllm:request_generation_tokens", "sglang:generation_tokens_histogram", "Histogram of generation token length.", "histogram"},
}

// sample is one sample line of the vLLM exposition.
type sample struct {
	name   string
	labels [][2]string // name and escaped value, in their order
	value  string
}

// label returns the escaped value of label k ("" when absent).
func (s sample) label(k string) string {
	for _, l := range s.labels {
		if l[0] == k {
			return l[1]
		}
	}
	return ""
}

// model is what one model_name's samples say.
type model struct {
	engines  map[string]bool
	scalars  map[string]string   // vLLM family -> value
	lines    map[string][]sample // vLLM histogram family -> its _bucket, _count and _sum samples
	finished float64             // request_success_total over every reason
	aborted  float64             // request_success_total{finished_reason="abort"}
}

// FromVLLM renders, from the simulator's vLLM exposition in the default
// single-process text style (sim.Style{}), what SGLang serves for the same
// state; it fails when a model has more than one engine or a line is not
// understood.
func FromVLLM(body []byte) ([]byte, string, error) {
	models, order, err := read(body)
	if err != nil {
		return nil, "", err
	}
	for _, name := range order {
		if n := len(models[name].engines); n != 1 {
			return nil, "", fmt.Errorf("sglang exposition of model %q: %d engines, want 1", name, n)
		}
	}
	var out bytes.Buffer
	for _, f := range scalars {
		writeScalar(&out, f, order, models, func(m *model) string { return m.scalars[f.vllm] })
	}
	writeScalar(&out, family{name: "sglang:num_requests_total", help: "Number of requests processed.", typ: "counter"}, order, models,
		func(m *model) string { return pyFloat(m.finished) })
	// SGLang creates this series at its first abort; it is written from the
	// start here, with what the simulator's configuration lets it count.
	writeScalar(&out, family{name: "sglang:num_aborted_requests_total", help: "Number of requests aborted.", typ: "counter"}, order, models,
		func(m *model) string { return pyFloat(m.aborted) })
	for _, f := range histograms {
		writeHistogram(&out, f, order, models)
	}
	return out.Bytes(), ContentType, nil
}

// read gathers the vLLM exposition's samples per model, the models in the
// order they first appear.
func read(body []byte) (map[string]*model, []string, error) {
	models := map[string]*model{}
	var order []string
	for i, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || !strings.HasPrefix(line, "vllm:") {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, nil, fmt.Errorf("sglang exposition: line %d: %w", i+1, err)
		}
		name := s.label("model_name")
		m := models[name]
		if m == nil {
			m = &model{engines: map[string]bool{}, scalars: map[string]string{}, lines: map[string][]sample{}}
			models[name] = m
			order = append(order, name)
		}
		if err := m.add(s); err != nil {
			return nil, nil, fmt.Errorf("sglang exposition: line %d: %w", i+1, err)
		}
	}
	return models, order, nil
}

// add files one sample of the model.
func (m *model) add(s sample) error {
	if e := s.label("engine"); e != "" {
		m.engines[e] = true
	}
	if s.name == "vllm:request_success_total" {
		v, err := strconv.ParseFloat(s.value, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		m.finished += v
		if s.label("finished_reason") == "abort" {
			m.aborted += v
		}
		return nil
	}
	for _, f := range scalars {
		if s.name == f.vllm {
			m.scalars[f.vllm] = s.value
			return nil
		}
	}
	for _, f := range histograms {
		if base, ok := histogramBase(s.name, f.vllm); ok {
			m.lines[base] = append(m.lines[base], s)
			return nil
		}
	}
	return nil
}

// histogramBase reports whether name is a _bucket, _count or _sum series of
// the histogram family base.
func histogramBase(name, base string) (string, bool) {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if name == base+suffix {
			return base, true
		}
	}
	return "", false
}

// parseLine splits one sample line: name{k="v",...} value.
func parseLine(line string) (sample, error) {
	open := strings.IndexByte(line, '{')
	if open < 0 {
		return sample{}, fmt.Errorf("no labels in %q", line)
	}
	s := sample{name: line[:open]}
	rest := line[open+1:]
	for !strings.HasPrefix(rest, "}") {
		eq := strings.Index(rest, `="`)
		if eq < 0 {
			return sample{}, fmt.Errorf("bad labels in %q", line)
		}
		end := closingQuote(rest, eq+2)
		if end < 0 {
			return sample{}, fmt.Errorf("unterminated label value in %q", line)
		}
		s.labels = append(s.labels, [2]string{rest[:eq], rest[eq+2 : end]})
		rest = strings.TrimPrefix(rest[end+1:], ",")
	}
	s.value = strings.TrimSpace(rest[1:])
	return s, nil
}

// closingQuote is the index of the first unescaped '"' in s from i, -1 if none.
func closingQuote(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// writeScalar writes one gauge or counter family, one series per model with
// `tp_rank` 0.
func writeScalar(out *bytes.Buffer, f family, order []string, models map[string]*model, value func(*model) string) {
	header(out, f)
	for _, name := range order {
		fmt.Fprintf(out, "%s{model_name=\"%s\",tp_rank=\"0\"} %s\n", f.name, name, value(models[name]))
	}
}

// writeHistogram writes one histogram family, labelled by model_name (and
// le) only.
func writeHistogram(out *bytes.Buffer, f family, order []string, models map[string]*model) {
	header(out, f)
	for _, name := range order {
		for _, s := range models[name].lines[f.vllm] {
			fmt.Fprintf(out, "%s%s{", f.name, strings.TrimPrefix(s.name, f.vllm))
			if le := s.label("le"); le != "" {
				fmt.Fprintf(out, "le=\"%s\",", le) // sorted labels, as prometheus_client writes them
			}
			fmt.Fprintf(out, "model_name=\"%s\"} %s\n", name, s.value)
		}
	}
}

// header writes a family's HELP and TYPE lines.
func header(out *bytes.Buffer, f family) {
	fmt.Fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
}

// pyFloat writes a count as Python's prometheus_client does: 837.0.
func pyFloat(v float64) string {
	t := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(t, ".eEnN") {
		t += ".0"
	}
	return t
}
