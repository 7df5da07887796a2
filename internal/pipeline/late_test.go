package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// lateRequest is one request served by lateServer: when it arrived, got its
// first token and finished, its per-request TPOT, and how long after its
// finish its e2e, TPOT and finished-request observations land (zero: at the
// finish). Its TTFT and prefill are observed at the first token.
type lateRequest struct {
	arrival, first, finish time.Time
	tpot                   float64
	tokens                 int
	e2eLag, tpotLag        time.Duration
	successLag             time.Duration
}

// e2eAt is when the request's e2e histogram observes it: when the
// exporter counts it finished, and when it leaves the running gauge.
func (r lateRequest) e2eAt() time.Time { return r.finish.Add(r.e2eLag) }

func (r lateRequest) ttft() float64 { return r.first.Sub(r.arrival).Seconds() }

// lateServer writes the exposition llm-d-inference-sim writes for its
// requests: the `vllm:` names without an `engine` label, `finish_reason`
// on the finished-request counter, integer bucket edges without ".0", and
// every histogram and counter series absent until its first observation
// (prometheus client_golang creates a labelled child when it is first
// used); only the gauges exist from the start. TTFT and prefill are
// observed at the first token, the rest at the finish (plus each request's
// lags).
type lateServer struct {
	model string
	reqs  []lateRequest
	// hidden, when set, is left out of the exposition at hiddenAt (a
	// family missing from one scrape though observed before it).
	hidden   string
	hiddenAt time.Time
}

// The emulator's bucket edges (its common.TTFTBucketsBoundaries,
// TPOTBucketsBoundaries and RequestLatencyBucketsBoundaries).
var (
	lateTTFTEdges    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	lateTPOTEdges    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	lateLatencyEdges = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	lateTokenEdges   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// observed is one observation of a family: when, and its value.
type observed struct {
	at time.Time
	v  float64
}

// exposition is the server's /metrics at t.
func (s *lateServer) exposition(t time.Time) []byte {
	var b strings.Builder
	lbl := `model_name="` + s.model + `"`
	gauge := func(name string, v float64) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{%s} %s\n", name, name, lbl, strconv.FormatFloat(v, 'g', -1, 64))
	}
	running := 0.0
	for _, r := range s.reqs {
		if !r.arrival.After(t) && r.e2eAt().After(t) {
			running++
		}
	}
	gauge("vllm:num_requests_running", running)
	gauge("vllm:num_requests_waiting", 0)
	gauge("vllm:kv_cache_usage_perc", 0)
	hist := func(name string, edges []float64, of func(r lateRequest) []observed) {
		var vs []float64
		for _, r := range s.reqs {
			for _, o := range of(r) {
				if !o.at.After(t) {
					vs = append(vs, o.v)
				}
			}
		}
		if len(vs) == 0 || (name == s.hidden && t.Equal(s.hiddenAt)) {
			return // no series before the first observation
		}
		fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		sum := 0.0
		for _, v := range vs {
			sum += v
		}
		for _, e := range append(slices.Clone(edges), math.Inf(1)) {
			n := 0
			for _, v := range vs {
				if v <= e {
					n++
				}
			}
			le := strconv.FormatFloat(e, 'g', -1, 64)
			if math.IsInf(e, 1) {
				le = "+Inf"
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, lbl, le, n)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %s\n%s_count{%s} %d\n", name, lbl, strconv.FormatFloat(sum, 'g', -1, 64), name, lbl, len(vs))
	}
	one := func(at time.Time, v float64) []observed { return []observed{{at, v}} }
	hist("vllm:time_to_first_token_seconds", lateTTFTEdges, func(r lateRequest) []observed { return one(r.first, r.ttft()) })
	hist("vllm:request_prefill_time_seconds", lateLatencyEdges, func(r lateRequest) []observed { return one(r.first, r.ttft()) })
	hist("vllm:e2e_request_latency_seconds", lateLatencyEdges, func(r lateRequest) []observed {
		return one(r.e2eAt(), r.finish.Sub(r.arrival).Seconds())
	})
	hist("vllm:request_inference_time_seconds", lateLatencyEdges, func(r lateRequest) []observed {
		return one(r.finish, r.finish.Sub(r.arrival).Seconds())
	})
	hist("vllm:request_decode_time_seconds", lateLatencyEdges, func(r lateRequest) []observed {
		return one(r.finish, r.finish.Sub(r.first).Seconds())
	})
	hist("vllm:request_time_per_output_token_seconds", lateTPOTEdges, func(r lateRequest) []observed {
		return one(r.finish.Add(r.tpotLag), r.tpot)
	})
	hist("vllm:inter_token_latency_seconds", lateTPOTEdges, func(r lateRequest) []observed {
		out := make([]observed, r.tokens-1)
		for i := range out {
			out[i] = observed{r.first.Add(time.Duration(float64(i+1) * r.tpot * float64(time.Second))), r.tpot}
		}
		return out
	})
	hist("vllm:request_generation_tokens", lateTokenEdges, func(r lateRequest) []observed { return one(r.finish, float64(r.tokens)) })
	hist("vllm:request_prompt_tokens", lateTokenEdges, func(r lateRequest) []observed { return one(r.finish, 20) })
	counter := func(name, labels string, at func(r lateRequest) time.Time, v func(r lateRequest) float64) {
		n, seen := 0.0, false
		for _, r := range s.reqs {
			if !at(r).After(t) {
				n, seen = n+v(r), true
			}
		}
		if seen {
			fmt.Fprintf(&b, "# TYPE %s counter\n%s{%s%s} %s\n", name, name, labels, lbl, strconv.FormatFloat(n, 'g', -1, 64))
		}
	}
	finish := func(r lateRequest) time.Time { return r.finish }
	counter("vllm:generation_tokens_total", "", finish, func(r lateRequest) float64 { return float64(r.tokens) })
	counter("vllm:prompt_tokens_total", "", finish, func(lateRequest) float64 { return 20 })
	counter("vllm:request_success_total", `finish_reason="stop",`, func(r lateRequest) time.Time { return r.finish.Add(r.successLag) },
		func(lateRequest) float64 { return 1 })
	return []byte(b.String())
}

// lateWorkload is a fresh emulator's first requests: the first one's TTFT
// and prefill are scraped one interval before its e2e; the lags of first
// say which of its other families come later still. Then a steady stream
// with TTFT on both sides of 0.5 s, TPOT on both sides of 50 ms and decodes
// spanning several scrapes.
func lateWorkload(t0 time.Time, first lateRequest) []lateRequest {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	first.arrival, first.first, first.finish, first.tpot, first.tokens = at(7.8), at(8), at(13), 0.04, 126
	reqs := []lateRequest{first}
	// The second finishes in the interval where the first's late families land.
	reqs = append(reqs, lateRequest{arrival: at(14), first: at(14.3), finish: at(18), tpot: 0.06, tokens: 62})
	rng := rand.New(rand.NewPCG(7, 11))
	for s := 19.0; s < 9*60; s += 1 + 3*rng.Float64() {
		ttft := []float64{0.08, 0.2, 0.45, 0.7, 1.8}[rng.IntN(5)]
		tpot := []float64{0.02, 0.04, 0.05, 0.06, 0.09}[rng.IntN(5)]
		tokens := 2 + rng.IntN(300)
		decode := tpot * float64(tokens-1)
		reqs = append(reqs, lateRequest{arrival: at(s), first: at(s + ttft), finish: at(s + ttft + decode), tpot: tpot, tokens: tokens})
	}
	return reqs
}

// lateSLOs are judged over the late workload: the TTFT-only SLO of the
// live run, and one with a TPOT objective (its family comes late too).
var lateSLOs = []slo.SLO{
	{Name: "ttft-only", Objectives: []slo.Objective{{Metric: slo.TTFT, Threshold: 0.5}}, Goal: 0.9, Period: 24 * time.Hour},
	interactive,
}

// lateTruth is what the requests did over a window (from, to]: finished is
// counted by the e2e observation, the exporter's finish.
type lateTruth struct {
	finished, firstTokens, tpotObserved float64
	good                                []float64 // per lateSLOs
	ttftGood, tpotGood                  float64   // among the finished
	ttftGoodFirst, tpotGoodObserved     float64   // among first tokens, TPOT observations
}

func lateTruthOf(reqs []lateRequest, from, to time.Time) lateTruth {
	in := func(t time.Time) bool { return t.After(from) && !t.After(to) }
	wt := lateTruth{good: make([]float64, len(lateSLOs))}
	for _, r := range reqs {
		ttftOK, tpotOK := r.ttft() <= 0.5, r.tpot <= 0.05 // as the emulator buckets them
		if in(r.first) {
			wt.firstTokens++
			if ttftOK {
				wt.ttftGoodFirst++
			}
		}
		if in(r.finish.Add(r.tpotLag)) {
			wt.tpotObserved++
			if tpotOK {
				wt.tpotGoodObserved++
			}
		}
		if !in(r.e2eAt()) {
			continue
		}
		wt.finished++
		if ttftOK {
			wt.ttftGood++
			wt.good[0]++
		}
		if tpotOK {
			wt.tpotGood++
		}
		if ttftOK && tpotOK {
			wt.good[1]++
		}
	}
	return wt
}

// TestLateFamiliesHoldTruth serves a fresh llm-d-inference-sim's
// exposition, whose families appear one scrape apart: TTFT and prefill a
// scrape before e2e, then (in one case) the per-request TPOT and the
// finished-request counter a scrape after e2e, (in another) the
// finished-request counter a scrape before e2e; in a third, e2e is also
// missing from one scrape later on. Evaluated at every scrape, every bound
// of every window must hold the truth with no tolerance, so nothing is
// exact that is not; where e2e, the family that counts the finished
// requests, is absent at an end of a scrape interval, no window holding it
// publishes "all", goodput, a burn rate or abandoned requests.
//
// One thing is left out in the third case: a window whose start or end is
// the scrape without e2e reports e2e's count over the window (requests,
// not a bound) from the value the history carries across that scrape, not
// from the requests that finished in it.
func TestLateFamiliesHoldTruth(t *testing.T) {
	for _, c := range []struct {
		name  string
		first lateRequest
		// hidden is a family left out of the scrape at 200 s.
		hidden string
	}{
		{"tpot and success after e2e", lateRequest{tpotLag: 7 * time.Second, successLag: 9 * time.Second}, ""},
		{"success before e2e", lateRequest{e2eLag: 4 * time.Second}, ""},
		{"e2e missing from one scrape", lateRequest{}, "vllm:e2e_request_latency_seconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := &lateServer{model: "fake-model", reqs: lateWorkload(start, c.first), hidden: c.hidden, hiddenAt: start.Add(200 * time.Second)}
			spec := testSpec(t)
			spec.Targets[0].Interval = 5 * time.Second
			spec.SLOs = lateSLOs
			spec.Alerts = nil
			spec.Retention = history.NewRetention(10*time.Minute, 24*time.Hour)
			p := New(spec)
			checked, joints := 0, 0
			// uncounted are the scrape intervals with e2e absent at an end.
			var uncounted [][2]time.Time
			hadE2E := false
			for at := start; !at.After(start.Add(9 * time.Minute)); at = at.Add(5 * time.Second) {
				snap, err := scrape.Parse(srv.exposition(at), "", scrape.VLLM, at)
				if err != nil {
					t.Fatalf("parse at %v: %v", at.Sub(start), err)
				}
				_, hasE2E := snap.Models[srv.model].Histograms[scrape.E2E]
				if at.After(start) && !(hadE2E && hasE2E) {
					uncounted = append(uncounted, [2]time.Time{at.Add(-5 * time.Second), at})
				}
				hadE2E = hasE2E
				if err := p.Ingest("gpu0", snap, 0); err != nil {
					t.Fatal(err)
				}
				rep := p.Evaluate(at)
				if len(rep.Targets[0].Models) == 0 {
					continue
				}
				m := rep.Targets[0].Models[0]
				for _, w := range m.Windows {
					where := fmt.Sprintf("at %v window %v (%v, %v]", at.Sub(start), w.Window.Nominal, w.Window.Start.Sub(start), w.Window.End.Sub(start))
					// The history carries a family missing from a scrape
					// at its last value, so a window with an end there
					// counts e2e wrongly; the scrape intervals judge it.
					hiddenEnd := c.hidden != "" && (w.Window.Start.Equal(srv.hiddenAt) || w.Window.End.Equal(srv.hiddenAt))
					n := checkLateWindow(t, where, w, lateTruthOf(srv.reqs, w.Window.Start, w.Window.End), hiddenEnd)
					holds := slices.ContainsFunc(uncounted, func(iv [2]time.Time) bool {
						return !iv[0].Before(w.Window.Start) && !iv[1].After(w.Window.End)
					})
					if n > 0 && holds {
						t.Errorf("%s: a joint over a scrape interval with e2e absent at an end", where)
					}
					joints += n
					checked++
				}
				for _, b := range m.Budgets {
					checkLateBudget(t, at, b, srv.reqs)
				}
			}
			if checked == 0 || joints == 0 {
				t.Fatalf("%d windows checked, %d with a joint: the test shows nothing", checked, joints)
			}
			t.Logf("%d windows checked, %d with a joint", checked, joints)
		})
	}
}

// checkLateWindow compares one window's report with its truth and returns
// how many SLOs it published a joint for.
func checkLateWindow(t *testing.T, where string, w slo.WindowReport, wt lateTruth, skipCount bool) int {
	t.Helper()
	holds := func(what string, b slo.Bounded, truth float64) {
		t.Helper()
		if truth < b.Lower || truth > b.Upper || b.Estimate < b.Lower || b.Estimate > b.Upper {
			t.Errorf("%s: %s truth %v outside [%v, %v] (estimate %v)", where, what, truth, b.Lower, b.Upper, b.Estimate)
		}
	}
	if n, ok := w.Requests[slo.E2E]; ok && n != wt.finished && !skipCount {
		t.Errorf("%s: %v e2e requests, truth %v", where, n, wt.finished)
	}
	joints := 0
	secs := w.Window.Seconds()
	for k, r := range w.SLOs {
		name := r.Name + " "
		if g, ok := r.GoodRequests["ttft"]; ok {
			holds(name+"ttft good finishers", g, wt.ttftGood)
		}
		if a, ok := r.Objectives["ttft"]; ok && wt.firstTokens > 0 {
			holds(name+"ttft attainment", a, wt.ttftGoodFirst/wt.firstTokens)
		}
		if g, ok := r.GoodRequests["tpot"]; ok {
			holds(name+"tpot good finishers", g, wt.tpotGood)
		}
		if a, ok := r.Objectives["tpot"]; ok && wt.tpotObserved > 0 {
			holds(name+"tpot attainment", a, wt.tpotGoodObserved/wt.tpotObserved)
		}
		good, ok := r.GoodRequests[slo.AllKey]
		if !ok {
			if r.HasAbandoned || r.HasBurnRate || r.GoodputRequestsPerSecond.Upper != 0 {
				t.Errorf("%s: %s has no all, yet abandoned %v, burn %v, goodput %+v", where, r.Name, r.HasAbandoned, r.HasBurnRate, r.GoodputRequestsPerSecond)
			}
			continue
		}
		joints++
		if r.Requests != wt.finished {
			t.Errorf("%s: %s all over %v finished requests, truth %v", where, r.Name, r.Requests, wt.finished)
		}
		holds(name+"all good", good, wt.good[k])
		holds(name+"goodput requests/s", r.GoodputRequestsPerSecond, wt.good[k]/secs)
		holds(name+"abandoned", r.Abandoned, 0)
		if wt.finished > 0 {
			att := wt.good[k] / wt.finished
			holds(name+"all attainment", r.Objectives[slo.AllKey], att)
			if r.HasBurnRate {
				burn, _ := slo.BurnRate(slo.Exact(att), lateSLOs[k].Goal)
				holds(name+"burn rate", r.BurnRate, burn.Estimate)
			}
		}
	}
	return joints
}

// checkLateBudget compares an error budget with the truth over its window.
func checkLateBudget(t *testing.T, at time.Time, b Budget, reqs []lateRequest) {
	t.Helper()
	if !b.Known {
		return
	}
	k := slices.IndexFunc(lateSLOs, func(s slo.SLO) bool { return s.Name == b.SLO })
	wt := lateTruthOf(reqs, b.End.Add(-b.Covered), b.End)
	if wt.finished == 0 {
		t.Errorf("at %v: budget of %s known over no finished request", at.Sub(start), b.SLO)
		return
	}
	truth := slo.ErrorBudgetRemaining(slo.Exact(wt.good[k]/wt.finished), lateSLOs[k].Goal).Estimate
	if truth < b.Remaining.Lower || truth > b.Remaining.Upper {
		t.Errorf("at %v: budget of %s: truth %v outside [%v, %v]", at.Sub(start), b.SLO, truth, b.Remaining.Lower, b.Remaining.Upper)
	}
}
