package sim

import (
	"fmt"
	"math"
)

// ExpositionSGLang renders the current state as SGLang (0.5, started with
// --enable-metrics and --collect-tokens-histogram) serves /metrics, so that
// the simulator can stand in for an SGLang server: SGLang's family names,
// `tp_rank` on gauges and counters but not on histograms, one finished-request
// counter without a finish reason, and none of the families SGLang lacks
// (per-request TPOT, prefill, decode and inference time). The bucket edges
// are the simulator's configured ones (SGLang's own defaults differ and are
// set with its --bucket-* flags); the simulator emits one token per step, so
// its inter-token histogram is per token, as SGLang's is. SGLang's scheduler
// reports for the whole model, so every model must have one engine.
func (s *Sim) ExpositionSGLang() (body []byte, contentType string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.models {
		if len(m.engines) != 1 {
			return nil, "", fmt.Errorf("sim: SGLang exposition of model %q: %d engines, want 1", m.cfg.Name, len(m.engines))
		}
	}
	w := &expWriter{s: s, st: Style{}}
	w.sglangFamilies()
	return w.buf.Bytes(), w.st.ContentType(), nil
}

// sglangFamilies writes the families SGLang shares with vLLM, in SGLang's names.
func (w *expWriter) sglangFamilies() {
	cs := w.children()
	ranked := func(c child) []label { return []label{{"model_name", c.model}, {"tp_rank", "0"}} }
	value := func(name, help, typ string, v func(c child) float64) {
		w.header(name, help, typ)
		for _, c := range cs {
			w.line(name, ranked(c), pyGoString(v(c)))
		}
	}
	value("sglang:num_running_reqs", "The number of running requests.", "gauge",
		func(c child) float64 { return float64(len(c.e.running)) })
	value("sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge",
		func(c child) float64 { return float64(c.e.numQueued()) })
	value("sglang:token_usage", "The token usage.", "gauge", func(c child) float64 {
		return math.Min(1, float64(c.e.kvUsed)/float64(c.e.m.cfg.Engine.KVCapacityTokens))
	})
	value("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter",
		func(c child) float64 { return float64(c.e.met.promptTokens) })
	value("sglang:generation_tokens_total", "Number of generation tokens processed.", "counter",
		func(c child) float64 { return float64(c.e.met.genTokens) })
	value("sglang:num_requests_total", "Number of requests processed.", "counter", func(c child) float64 {
		var n uint64
		for _, v := range c.e.met.success {
			n += v
		}
		return float64(n)
	})
	// SGLang creates this series at its first abort; the simulator writes
	// it from the start, with what the config lets it count.
	value("sglang:num_aborted_requests_total", "Number of requests aborted.", "counter",
		func(c child) float64 { return float64(c.e.met.success[abortReason]) })
	for _, h := range []struct {
		name, help string
		id         histID
	}{
		{"sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", hTTFT},
		{"sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", hITL},
		{"sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", hE2E},
		{"sglang:queue_time_seconds", "Histogram of queueing time in seconds.", hQueue},
		{"sglang:prompt_tokens_histogram", "Histogram of prompt token length.", hPromptTokens},
		{"sglang:generation_tokens_histogram", "Histogram of generation token length.", hGenerationTokens},
	} {
		w.sglangHistogram(h.name, h.help, cs, h.id)
	}
}

// sglangHistogram writes one histogram labelled by model_name only.
func (w *expWriter) sglangHistogram(name, help string, cs []child, id histID) {
	w.header(name, help, "histogram")
	for _, c := range cs {
		ls := []label{{"model_name", c.model}}
		h := &c.e.met.hists[id]
		for i, n := range h.cumulative() {
			edge := math.Inf(1)
			if i < len(h.edges) {
				edge = h.edges[i]
			}
			w.line(name+"_bucket", append(ls, label{"le", w.le(edge)}), w.count(n))
		}
		w.line(name+"_count", ls, w.count(h.n))
		w.line(name+"_sum", ls, w.float(h.sum))
	}
}
