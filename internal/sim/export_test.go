package sim

// The sim's tests live in package sim_test, to read the truth through
// test/simtruth (which imports this package); these are the internals they
// check, exposed to them alone.

// FinishReasons are the finished_reason children of
// vllm:request_success_total, in vLLM's enum order.
var FinishReasons = finishReasons

// Never is the virtual time (ns since Start) that is never reached.
const Never = never

// Layout is the bucket edges of one model's histograms.
type Layout struct {
	TTFT    []float64 // time_to_first_token_seconds
	ITL     []float64 // inter_token_latency_seconds, request_time_per_output_token_seconds
	Latency []float64 // e2e, queue, prefill, decode and inference time
	Tokens  []float64 // request_prompt_tokens, request_generation_tokens
}

// Layout returns the edges model i's histograms have now: a restart may have
// changed them.
func (s *Sim) Layout(i int) Layout {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.models[i].layout
	return Layout{TTFT: l.ttft, ITL: l.itl, Latency: l.latency, Tokens: l.tokens}
}

// EngineBooks is what one engine holds at the sim's current time.
type EngineBooks struct {
	KVUsed           int   // KV cache tokens held by the running requests
	Running          int   // requests in the running batch
	Waiting          int   // requests waiting for capacity
	WaitingCancelled int   // waiting requests whose clients have gone
	NextCancel       int64 // the earliest pending client abort, or Never
}

// Books returns the books of model i's engines, by engine index.
func (s *Sim) Books(i int) []EngineBooks {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []EngineBooks
	for _, e := range s.models[i].engines {
		out = append(out, EngineBooks{
			KVUsed: e.kvUsed, Running: len(e.running), Waiting: e.numWaiting(),
			WaitingCancelled: e.waitingCancelled, NextCancel: e.nextCancel(),
		})
	}
	return out
}

// SampleLength draws one length from d with model i's random stream.
func (s *Sim) SampleLength(i int, d LengthDist) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.Sample(s.models[i].rng)
}

// EffectiveAPIServers is the number of API server processes the style
// exposes: APIServers, or its default when unset.
func (s Style) EffectiveAPIServers() int { return s.apiServers() }
