package sim_test

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// TestAdmissionLimit overloads a two-engine model capped at 40 unfinished
// requests, and checks the rejections as vLLM's front end makes them: the
// counter (per model and reason, no engine label) equals the truth's
// rejected requests, which are in no histogram and no gauge; the requests
// unfinished at a scrape never exceed the cap; without a cap the family is
// absent, as on servers without admission control.
func TestAdmissionLimit(t *testing.T) {
	cfg := cancelConfig(6)
	cfg.Models[0].Workload.Cancel = sim.Cancellation{}
	cfg.Models[0].Workload.Phases[0].Rate *= 4
	cfg.Models[0].MaxNumQueuedReqs = 40
	s := mustNew(t, cfg)
	for range 8 {
		s.Advance(15 * time.Second)
		body, ct := s.Exposition()
		p := parse(t, body, ct)
		unfinished := 0.0
		for _, eng := range []string{"0", "1"} {
			unfinished += p.must(t, "vllm:num_requests_running", "engine", eng, "model_name", "m")
			unfinished += p.must(t, "vllm:num_requests_waiting", "engine", eng, "model_name", "m")
		}
		if unfinished > 40 {
			t.Errorf("at %v: %v unfinished, cap 40", s.Now().Sub(t0), unfinished)
		}
		truth := s.Truth()
		rejected := len(simtruth.RejectedIn(truth, t0, s.Now()))
		if got := p.must(t, "vllm:admission_rejections_total", "model_name", "m", "reason", "max_num_queued_reqs"); got != float64(rejected) {
			t.Errorf("at %v: rejections counter %v, truth %d", s.Now().Sub(t0), got, rejected)
		}
		finished := 0
		for _, r := range truth {
			if r.Finished() {
				finished++
			}
			if r.Rejected && (r.Finished() || !r.FirstToken.IsZero() || r.Outcome() != sim.OutcomeRejected) {
				t.Fatalf("rejected request %d: finished %v, first token %v, outcome %s", r.ID, r.Finished(), r.FirstToken, r.Outcome())
			}
		}
		e2e := 0.0
		for _, eng := range []string{"0", "1"} {
			e2e += p.must(t, "vllm:e2e_request_latency_seconds_count", "engine", eng, "model_name", "m")
		}
		if e2e != float64(finished) {
			t.Errorf("at %v: e2e count %v, finished %d (a rejection reached a histogram?)", s.Now().Sub(t0), e2e, finished)
		}
	}
	if len(simtruth.RejectedIn(s.Truth(), t0, s.Now())) == 0 {
		t.Fatal("no request rejected: the overload shows nothing")
	}
	cfg.Models[0].MaxNumQueuedReqs = 0
	s = mustNew(t, cfg)
	s.Advance(time.Minute)
	body, ct := s.Exposition()
	if _, ok := parse(t, body, ct).types["vllm:admission_rejections"]; ok {
		t.Error("admission_rejections exposed by a server without an admission limit")
	}
}
