package sim

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Exposition renders /metrics as the server serves it now, in the configured
// style, and returns the body with its Content-Type.
func (s *Sim) Exposition() (body []byte, contentType string) {
	return s.ExpositionStyle(s.cfg.Style)
}

// ExpositionStyle renders the current state in any style, so that one run can
// be seen through every format.
func (s *Sim) ExpositionStyle(st Style) (body []byte, contentType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &expWriter{s: s, st: st, created: seconds(s.cfg.Start.UnixNano() + s.created)}
	w.render()
	return w.buf.Bytes(), st.ContentType()
}

// expWriter renders one exposition.
type expWriter struct {
	s       *Sim
	st      Style
	buf     bytes.Buffer
	created float64 // Unix seconds of the latest (re)start
}

// child is one (model, engine) label set with its metrics.
type child struct {
	model, engine string
	e             *engine
}

func (w *expWriter) children() []child {
	var out []child
	for _, m := range w.s.models {
		for _, e := range m.engines {
			out = append(out, child{model: m.cfg.Name, engine: strconv.Itoa(e.idx), e: e})
		}
	}
	return out
}

func (w *expWriter) py() bool { return w.st.Format != OpenMetrics }

// label is one label pair, in declaration order.
type label struct{ name, value string }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// line writes one sample line; Python formats sort the label names.
func (w *expWriter) line(name string, labels []label, value string) {
	w.buf.WriteString(name)
	if len(labels) > 0 {
		if w.py() {
			labels = slices.Clone(labels)
			slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.name, b.name) })
		}
		w.buf.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.buf.WriteString(l.name)
			w.buf.WriteString(`="`)
			w.buf.WriteString(labelEscaper.Replace(l.value))
			w.buf.WriteByte('"')
		}
		w.buf.WriteByte('}')
	}
	w.buf.WriteByte(' ')
	w.buf.WriteString(value)
	w.buf.WriteByte('\n')
}

func (w *expWriter) header(name, help, typ string) {
	w.buf.WriteString("# HELP " + name + " " + strings.ReplaceAll(help, "\n", `\n`) + "\n")
	w.buf.WriteString("# TYPE " + name + " " + typ + "\n")
}

// count formats an integral count: a Python float or an OpenMetrics integer.
func (w *expWriter) count(n uint64) string {
	if w.py() {
		return pyGoString(float64(n))
	}
	return strconv.FormatUint(n, 10)
}

// float formats a real value.
func (w *expWriter) float(v float64) string {
	if w.py() {
		return pyGoString(v)
	}
	return rustFloat(v)
}

func (w *expWriter) le(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case w.st.IntegerLE:
		return goShort(v)
	case w.py():
		return pyGoString(v)
	default:
		return rustFloat(v)
	}
}

func baseLabels(c child) []label {
	return []label{{"model_name", c.model}, {"engine", c.engine}}
}

// createdFamily writes prometheus_client's `_created` gauge family that
// generate_latest prints right after a counter or histogram family.
func (w *expWriter) createdFamily(base, help string, sets [][]label) {
	if w.st.Format != SingleProcess {
		return
	}
	w.header(base+"_created", help, "gauge")
	v := pyGoString(w.created)
	for _, ls := range sets {
		w.line(base+"_created", ls, v)
	}
}

func (w *expWriter) render() {
	if w.st.Format == SingleProcess {
		w.pythonFamilies()
	}
	w.vllmFamilies()
	if w.st.Format != OpenMetrics {
		w.httpFamilies()
	}
	if w.st.Format == OpenMetrics {
		w.buf.WriteString("# EOF\n")
	}
}

func (w *expWriter) vllmFamilies() {
	cs := w.children()
	gauge := func(name, help string, v func(c child) string) {
		w.header(name, help, "gauge")
		for _, c := range cs {
			w.line(name, baseLabels(c), v(c))
		}
	}
	gaugeCount := func(n int) string {
		if w.py() {
			return pyGoString(float64(n))
		}
		return strconv.Itoa(n)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
		func(c child) string { return gaugeCount(len(c.e.running)) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
		func(c child) string { return gaugeCount(c.e.numQueued()) })
	if w.st.Newest {
		w.waitingByReason(cs, gaugeCount)
	}
	kvName, kvHelp := "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
	if w.st.OldNames {
		kvName, kvHelp = "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage."
	}
	kv := func(c child) float64 {
		return min(1, float64(c.e.kvUsed)/float64(c.e.m.cfg.Engine.KVCapacityTokens))
	}
	if w.st.Format == MultiProcess {
		// Before vLLM 0.12 (https://github.com/vllm-project/vllm/pull/28792)
		// this gauge had no multiprocess mode, so every API-server process
		// wrote its own pid-labelled series.
		w.header(kvName, kvHelp, "gauge")
		for _, c := range cs {
			for p := range w.st.apiServers() {
				ls := append(baseLabels(c), label{"pid", strconv.Itoa(4100 + p)})
				w.line(kvName, ls, w.float(kv(c)))
			}
		}
	} else {
		gauge(kvName, kvHelp, func(c child) string { return w.float(kv(c)) })
	}

	w.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", cs,
		func(c child) uint64 { return c.e.met.promptTokens })
	w.counter("vllm:generation_tokens", "Number of generation tokens processed.", cs,
		func(c child) uint64 { return c.e.met.genTokens })
	w.successCounter(cs)
	w.admissionRejections()
	if w.st.Newest {
		w.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", cs,
			func(c child) uint64 { return c.e.met.preemptions })
		w.histogram("vllm:request_num_preemptions", "Histogram of the number of preemptions per finished request.", cs, hPreemptions)
	}

	w.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", cs, hPromptTokens)
	w.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", cs, hGenerationTokens)
	w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", cs, hTTFT)
	if w.st.OldNames {
		w.histogram("vllm:time_per_output_token_seconds",
			"Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.", cs, hITL)
	} else {
		w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", cs, hITL)
		if !w.st.NoRequestTPOT {
			w.histogram("vllm:request_time_per_output_token_seconds",
				"Histogram of time_per_output_token_seconds per request.", cs, hTPOT)
		}
	}
	w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", cs, hE2E)
	w.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", cs, hQueue)
	w.histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", cs, hInference)
	w.histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", cs, hPrefill)
	w.histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", cs, hDecode)
}

// counter writes a counter family of one value per (model, engine).
func (w *expWriter) counter(base, help string, cs []child, v func(c child) uint64) {
	if w.py() {
		w.header(base+"_total", help, "counter")
	} else {
		w.header(base, help, "counter")
	}
	sets := make([][]label, len(cs))
	for i, c := range cs {
		sets[i] = baseLabels(c)
		w.line(base+"_total", sets[i], w.count(v(c)))
	}
	w.createdFamily(base, help, sets)
}

// waitingByReason writes vllm:num_requests_waiting_by_reason: the waiting
// requests split into those waiting for capacity and the deferred ones
// (vLLM's skipped waiting requests), whose sum is num_requests_waiting.
func (w *expWriter) waitingByReason(cs []child, count func(int) string) {
	const name = "vllm:num_requests_waiting_by_reason"
	w.header(name, "Number of requests waiting to be processed, by reason. Sum of all reasons equals vllm:num_requests_waiting.", "gauge")
	for _, reason := range []string{"capacity", "deferred"} {
		for _, c := range cs {
			n := c.e.numWaiting()
			if reason == "deferred" {
				n = len(c.e.deferredReqs)
			}
			w.line(name, append(baseLabels(c), label{"reason", reason}), count(n))
		}
	}
}

// admissionRejections writes vllm:admission_rejections_total, per model and
// reason without an engine label (the front end counts a request it turns
// away before any engine sees it), when some model has an admission limit:
// servers without one (and vLLM before the limit existed) have no such
// family. The simulator's only reason is the request cap.
func (w *expWriter) admissionRejections() {
	const base, help = "vllm:admission_rejections", "Number of admission attempts rejected."
	var sets [][]label
	for _, m := range w.s.models {
		if m.cfg.MaxNumQueuedReqs > 0 {
			sets = append(sets, []label{{"model_name", m.cfg.Name}, {"reason", "max_num_queued_reqs"}})
		}
	}
	if len(sets) == 0 {
		return
	}
	if w.py() {
		w.header(base+"_total", help, "counter")
	} else {
		w.header(base, help, "counter")
	}
	for i, m := range w.s.models {
		if m.cfg.MaxNumQueuedReqs > 0 {
			w.line(base+"_total", []label{{"model_name", m.cfg.Name}, {"reason", "max_num_queued_reqs"}}, w.count(w.s.models[i].rejected))
		}
	}
	w.createdFamily(base, help, sets)
}

// successCounter writes vllm:request_success_total, whose children exist for
// every finish reason from startup (reason outer, engine inner, as vLLM
// creates them).
func (w *expWriter) successCounter(cs []child) {
	const base, help = "vllm:request_success", "Count of successfully processed requests."
	if w.py() {
		w.header(base+"_total", help, "counter")
	} else {
		w.header(base, help, "counter")
	}
	var sets [][]label
	for _, m := range w.s.models {
		for i, reason := range finishReasons {
			for _, e := range m.engines {
				ls := []label{{"model_name", m.cfg.Name}, {"engine", strconv.Itoa(e.idx)}, {"finished_reason", reason}}
				sets = append(sets, ls)
				w.line(base+"_total", ls, w.count(e.met.success[i]))
			}
		}
	}
	w.createdFamily(base, help, sets)
}

// histogram writes one histogram family in the style's sample order.
func (w *expWriter) histogram(name, help string, cs []child, id histID) {
	w.header(name, help, "histogram")
	buckets := func(c child) {
		h := &c.e.met.hists[id]
		cum := h.cumulative()
		for i, n := range cum {
			edge := math.Inf(1)
			if i < len(h.edges) {
				edge = h.edges[i]
			}
			w.line(name+"_bucket", append(baseLabels(c), label{"le", w.le(edge)}), w.count(n))
		}
	}
	sum := func(c child) { w.line(name+"_sum", baseLabels(c), w.float(c.e.met.hists[id].sum)) }
	cnt := func(c child) { w.line(name+"_count", baseLabels(c), w.count(c.e.met.hists[id].n)) }
	switch w.st.Format {
	case SingleProcess:
		sets := make([][]label, len(cs))
		for i, c := range cs {
			buckets(c)
			cnt(c)
			sum(c)
			sets[i] = baseLabels(c)
		}
		w.createdFamily(name, help, sets)
	case MultiProcess:
		for _, c := range cs {
			sum(c)
		}
		for _, c := range cs {
			buckets(c)
			cnt(c)
		}
	default:
		for _, c := range cs {
			sum(c)
			cnt(c)
			buckets(c)
		}
	}
}

// totals sums the finished requests and their token counts over every engine,
// for the HTTP families.
func (w *expWriter) totals() (reqs uint64, promptSum, genSum float64) {
	for _, m := range w.s.models {
		for _, e := range m.engines {
			reqs += e.met.hists[hE2E].n
			promptSum += e.met.hists[hPromptTokens].sum
			genSum += e.met.hists[hGenerationTokens].sum
		}
	}
	return reqs, promptSum, genSum
}

// pythonFamilies writes the python_gc_*, python_info and process_* families
// prometheus_client adds in single-process mode. Their values are plausible
// functions of the virtual uptime.
func (w *expWriter) pythonFamilies() {
	up := seconds(w.s.now - w.s.created)
	gens := []string{"0", "1", "2"}
	gc := func(name, help string, v func(g int) float64) {
		w.header(name, help, "counter")
		for i, g := range gens {
			w.line(name, []label{{"generation", g}}, pyGoString(v(i)))
		}
	}
	gc("python_gc_objects_collected_total", "Objects collected during gc",
		func(g int) float64 { return math.Floor((12000 + 35*up) / float64(1+g*g*8)) })
	gc("python_gc_objects_uncollectable_total", "Uncollectable objects found during GC",
		func(int) float64 { return 0 })
	gc("python_gc_collections_total", "Number of times this generation was collected",
		func(g int) float64 { return math.Floor((900 + 2*up) / float64(1+g*g*10)) })
	w.header("python_info", "Python platform information", "gauge")
	w.line("python_info", []label{{"implementation", "CPython"}, {"major", "3"}, {"minor", "12"},
		{"patchlevel", "11"}, {"version", "3.12.11"}}, "1.0")
	proc := func(name, help, typ string, v float64) {
		w.header(name, help, typ)
		w.line(name, nil, pyGoString(v))
	}
	proc("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", 4.1779265536e+10)
	proc("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", 2.384510976e+09)
	proc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge",
		math.Round(w.created*100)/100)
	proc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
		math.Round((25+1.3*up)*100)/100)
	proc("process_open_fds", "Number of open file descriptors.", "gauge", 87)
	proc("process_max_fds", "Maximum number of open file descriptors.", "gauge", 1.048576e+06)
}

// httpFamilies writes the prometheus-fastapi-instrumentator families: a
// request counter and size summaries (in multi-process mode only _count/_sum,
// no `_created`).
func (w *expWriter) httpFamilies() {
	reqs, prompt, gen := w.totals()
	const handler = "/v1/chat/completions"
	counterLabels := []label{{"handler", handler}, {"method", "POST"}, {"status", "2xx"}}
	w.header("http_requests_total", "Total number of requests by method, status and handler.", "counter")
	w.line("http_requests_total", counterLabels, pyGoString(float64(reqs)))
	w.createdFamily("http_requests", "Total number of requests by method, status and handler.", [][]label{counterLabels})
	summary := func(name, help string, sum float64) {
		ls := []label{{"handler", handler}}
		w.header(name, help, "summary")
		w.line(name+"_count", ls, pyGoString(float64(reqs)))
		w.line(name+"_sum", ls, pyGoString(sum))
		w.createdFamily(name, help, [][]label{ls})
	}
	summary("http_request_size_bytes",
		"Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ",
		math.Round(prompt*4.2+180*float64(reqs)))
	summary("http_response_size_bytes",
		"Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ",
		math.Round(gen*4.6+310*float64(reqs)))
}
