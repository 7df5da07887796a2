package reliability

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// heapDays selects the long form of TestPipelineHeapBounded: that many
// simulated days of 15 s scrapes (7: 40,320 scrapes per pattern).
var heapDays = flag.Int("reliability.days", 0, "simulated days of 15 s scrapes for TestPipelineHeapBounded (0: the short CI form)")

// heapPlan sizes TestPipelineHeapBounded.
type heapPlan struct {
	// days of length day are simulated; day is also the SLO period, so
	// that every retention tier is full after day 1 and nothing a
	// well-behaved target sends makes the history grow after it.
	days int
	day  time.Duration
	// limit is global.history_size_limit.
	limit int64
	// sampleEvery is how many scrapes pass between two heap samples.
	sampleEvery int
}

func heapPlanFor() heapPlan {
	if *heapDays > 0 {
		return heapPlan{days: *heapDays, day: 24 * time.Hour, limit: 4 << 20, sampleEvery: 240}
	}
	return heapPlan{days: 4, day: 2 * time.Hour, limit: 256 << 10, sampleEvery: 40}
}

// heapEvaluationInterval is the evaluation_interval of the run: the
// pipeline is evaluated every fourth scrape (a shorter interval adds CPU
// time, not memory: each evaluation's report replaces the previous one).
const heapEvaluationInterval = time.Minute

// ceiling is the heap one target may hold above the process's baseline
// under a history limit: the limit, plus a quarter of it for what follows
// the history's points outside its estimate, plus a fixed MiB for what
// does not grow with the data at all. Where each part comes from:
//   - The history's estimate counts its points and layouts by length
//     (history/budget.go) and stays within the limit; its heap is above
//     the estimate by slice headroom and map buckets: 16% at the limit
//     when every scrape is a new segment (2.43 MB of heap for 2.10 MB
//     estimated, three 20-bucket histograms, a restart every scrape).
//   - The ledger keeps one checkpoint (about 150 B with one SLO) per point
//     the history holds (ledger.Ledger's bound): 8% of such a point (about
//     1.9 KB estimated).
//   - Fixed: the ledger's hour of intervals (241, about 120 KB), the HTTP
//     client and the exposition being parsed, one report, the pipeline's
//     maps; well under a MiB for one model.
//
// Together (1.16 + 0.08 < 1.25) the quarter is not a tolerance fitted to
// the run: a structure that grows with scrapes or resets outside the
// history's limit passes it within days.
func (p heapPlan) ceiling() int64 {
	return p.limit + p.limit/4 + 1<<20
}

// flatSlack is how much a later day's largest heap sample may exceed day
// 2's: once every tier is full and the limit holds, the data retained is
// constant in size, and what still moves is capacity headroom (the
// ledger gives back slack beyond an eighth of its arrays, the history's
// tiers grow by doubling point headers of about 80 B) and the report of
// the last evaluation: a few percent of the heap. Growth of 48 B per
// scrape (276 KB a day, under 1% of the 40 MB a day once reported for a
// target resetting at every scrape) exceeds 5% within two days in both
// forms (CI: 960 scrapes, 46 KB against about 0.5 MiB; long: 11,520
// scrapes, 553 KB against about 5.4 MiB).
const flatSlack = 0.05

// heapPattern is what the target does at every scrape.
type heapPattern int

const (
	patternNormal heapPattern = iota
	patternReset              // restarts before every scrape
	patternLayout             // another bucket layout and pid at every scrape
)

func (p heapPattern) String() string {
	return [...]string{"normal", "reset every scrape", "layout change every scrape"}[p]
}

// heapTarget serves a synthetic vLLM's exposition under one pattern.
type heapTarget struct {
	mu      sync.Mutex
	pattern heapPattern
	s       *synthTarget
	n       int
}

// body advances the target by one scrape at now and renders its exposition
// as vLLM (prometheus_client, single process) does.
func (h *heapTarget) body(now time.Time) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	if h.pattern == patternReset {
		h.s.reset()
		h.s.created = float64(now.Unix())
	}
	h.s.advance(30)
	pid := 0
	if h.pattern == patternLayout {
		pid = h.n
	}
	// drop is the interior edge left out of a histogram of n edges: under
	// the layout pattern a different one at each scrape, so that no two
	// consecutive scrapes share a layout.
	drop := func(n int) int {
		if h.pattern != patternLayout {
			return -1
		}
		return 1 + h.n%(n-2)
	}
	var b strings.Builder
	labels := fmt.Sprintf(`engine="0",model_name=%q,pid="%d"`, victimModel, pid)
	hist := func(name string, hg slo.Histogram, drop int) {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		for i, e := range hg.Edges {
			if i == drop {
				continue
			}
			le := "+Inf"
			if !math.IsInf(e, 1) {
				le = strconv.FormatFloat(e, 'g', -1, 64)
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %g\n", name, labels, le, hg.Counts[i])
		}
		fmt.Fprintf(&b, "%s_count{%s} %g\n%s_sum{%s} %g\n", name, labels, hg.Counts[len(hg.Counts)-1], name, labels, hg.Sum)
		fmt.Fprintf(&b, "# TYPE %s_created gauge\n%s_created{%s} %g\n", name, name, labels, h.s.created)
	}
	hist("vllm:time_to_first_token_seconds", h.s.ttft, drop(len(h.s.ttft.Edges)))
	hist("vllm:request_time_per_output_token_seconds", h.s.tpot, -1)
	hist("vllm:e2e_request_latency_seconds", h.s.e2e, drop(len(h.s.e2e.Edges)))
	fmt.Fprintf(&b, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{%s,finished_reason=\"stop\"} %g\n", labels, h.s.reqs)
	fmt.Fprintf(&b, "# TYPE vllm:request_success_created gauge\nvllm:request_success_created{%s,finished_reason=\"stop\"} %g\n", labels, h.s.created)
	fmt.Fprintf(&b, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{%s} %g\n", labels, h.s.genTokens)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{%s} 0\n", labels)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{%s} 0\n", labels)
	return []byte(b.String())
}

// heapRun is one pattern's run: its heap samples and what it held.
type heapRun struct {
	pattern heapPattern
	// samples[i] is the heap above the baseline after scrape
	// (i+1)·sampleEvery.
	samples []int64
	// states holds the size of each hourly state save.
	states   []int
	history  history.Usage
	retired  int // reloads that retired the target and revived it
	duration time.Duration
}

// dayMax is the largest of day d's (1-based) values of v.
func dayMax[T int | int64](v []T, perDay, d int) T {
	lo, hi := (d-1)*perDay, min(d*perDay, len(v))
	if lo >= hi {
		return 0
	}
	return slices.Max(v[lo:hi])
}

// TestPipelineHeapBounded drives the whole pipeline through the real
// scrape path (an httptest target, scrape.Fetcher.Scrape, Pipeline.Ingest,
// Evaluate every heapEvaluationInterval) on a virtual clock, for simulated
// days of 15 s scrapes, with a target that (a) restarts at every scrape,
// (b) changes its bucket layout and its pid label at every scrape, or (c)
// behaves (the control). Everything the pipeline holds is in the Go heap,
// sampled after GC every sampleEvery scrapes: the history, the ledger's
// intervals and checkpoints, the good-request totals, the alert book. The
// state is saved every hour (its size recorded), the pipeline is restored
// from it once a day as a restarted daemon would be, and four times a day
// a reload retires the target and the next revives it (the retired list
// and its place in the state).
//
// At every sample the heap above the baseline (before the pipeline and the
// target existed) must be under plan.ceiling(); from day 3 on, each day's
// largest sample within flatSlack of day 2's, and so must the saved state
// be. The hostile patterns must actually reach the history's limit. The
// CI form runs four 2-hour days (SLO period 2h) at a 256 KiB limit;
// -reliability.days=7 runs seven 24-hour days (40,320 scrapes per
// pattern) at 4 MiB.
func TestPipelineHeapBounded(t *testing.T) {
	plan := heapPlanFor()
	perDay := int(plan.day/rigInterval) / plan.sampleEvery
	savesPerDay := int(plan.day / time.Hour)
	for _, pat := range []heapPattern{patternNormal, patternReset, patternLayout} {
		r := runHeapPattern(t, plan, pat)
		var days []string
		for d := 1; d <= plan.days; d++ {
			days = append(days, fmt.Sprintf("%.2f", float64(dayMax(r.samples, perDay, d))/(1<<20)))
		}
		t.Logf("%s: heap MiB above the baseline, largest of each day's %d samples: %s (ceiling %.2f); history %.2f of %.2f MiB, %d points dropped; largest state %.2f MiB; %d retire/revive; %v",
			r.pattern, perDay, strings.Join(days, " "), float64(plan.ceiling())/(1<<20), float64(r.history.Bytes)/(1<<20), float64(r.history.Limit)/(1<<20),
			r.history.DroppedPoints, float64(slices.Max(r.states))/(1<<20), r.retired, r.duration.Round(time.Second))
		for i, h := range r.samples {
			if h > plan.ceiling() {
				t.Errorf("%s: heap %d B above the baseline after scrape %d, over the ceiling of %d", pat, h, (i+1)*plan.sampleEvery, plan.ceiling())
			}
		}
		if pat != patternNormal && r.history.DroppedPoints == 0 {
			t.Errorf("%s: the history never reached its limit: the run does not exercise it", pat)
		}
		flat(t, pat, "heap", r.samples, perDay, plan.days)
		flat(t, pat, "saved state", r.states, savesPerDay, plan.days)
	}
}

// flat fails the test when a day from day 3 on has a value more than
// flatSlack above day 2's largest.
func flat[T int | int64](t *testing.T, pat heapPattern, what string, v []T, perDay, days int) {
	t.Helper()
	ref := float64(dayMax(v, perDay, 2))
	for d := 3; d <= days; d++ {
		if got := float64(dayMax(v, perDay, d)); got > ref*(1+flatSlack) {
			t.Errorf("%s: %s not flat: day %d reached %.0f B, day 2 %.0f B (+%.1f%%, more than %.0f%%)",
				pat, what, d, got, ref, 100*(got/ref-1), 100*flatSlack)
		}
	}
}

// heapRig is one pattern's target, scraper and pipeline.
type heapRig struct {
	t       *testing.T
	pat     heapPattern
	clk     *clock
	fetcher *scrape.Fetcher
	profile scrape.Profile
	spec    pipeline.Spec
	pipe    *pipeline.Pipeline
}

func newHeapRig(t *testing.T, plan heapPlan, pat heapPattern) (*heapRig, func()) {
	t.Helper()
	r := &heapRig{t: t, pat: pat, clk: &clock{now: rigStart}}
	src := &heapTarget{pattern: pat, s: newSynth("heap", uint64(pat)+1, rigStart, false)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(src.body(r.clk.Now()))
	}))
	url := srv.URL + "/metrics"
	r.fetcher = newFetcher(t, hostileName, url, commoncfg.DefaultHTTPClientConfig)
	profile, err := scrape.LookupProfile("vllm")
	if err != nil {
		t.Fatal(err)
	}
	r.profile = profile
	r.spec = testSpec(targetSpec(t, hostileName, url))
	r.spec.Windows = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}
	r.spec.SLOs[0].Period = plan.day
	r.spec.Retention = history.NewRetention(time.Hour, plan.day)
	r.spec.HistoryLimit = plan.limit
	r.pipe = pipeline.New(r.spec)
	return r, func() {
		r.fetcher.Close()
		srv.Close()
	}
}

// settle waits until the goroutines are back to n (those of a closed
// server and client exit asynchronously), so that nothing of a finished
// run is still reachable when the next one takes its baseline; it fails
// the test when they are not back within 30 s.
func settle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 30 s after the run, %d before it", runtime.NumGoroutine(), n)
		}
		runtime.Gosched()
	}
}

// scrape scrapes the target at the next 15 s and ingests the snapshot.
func (r *heapRig) scrape(k int) time.Time {
	now := r.clk.Advance(rigInterval)
	snap, resp, err := r.fetcher.Scrape(context.Background(), r.profile, now)
	if err != nil {
		r.t.Fatalf("%s: scrape %d: %v", r.pat, k, err)
	}
	if err := r.pipe.Ingest(hostileName, snap, resp.Duration); err != nil {
		r.t.Fatalf("%s: ingest %d: %v", r.pat, k, err)
	}
	return now
}

// save returns the state the daemon would write now.
func (r *heapRig) save(k int) []byte {
	state, err := r.pipe.MarshalState()
	if err != nil {
		r.t.Fatalf("%s: save at scrape %d: %v", r.pat, k, err)
	}
	return state
}

// restart replaces the pipeline by one restored from its state.
func (r *heapRig) restart(k int) {
	state := r.save(k)
	r.pipe = pipeline.New(r.spec)
	if n, err := r.pipe.UnmarshalState(state); err != nil || n != 1 {
		r.t.Fatalf("%s: restore at scrape %d: %d targets, %v", r.pat, k, n, err)
	}
}

// retireAndRevive reloads without the target (it is retired, and saved as
// such), lets a minute pass unscraped, and reloads with it again (revived
// with its history).
func (r *heapRig) retireAndRevive(k int) {
	without := r.spec
	without.Targets = nil
	if err := r.pipe.Reconfigure(without); err != nil {
		r.t.Fatalf("%s: reload without the target at scrape %d: %v", r.pat, k, err)
	}
	if got := r.pipe.Retired(); len(got) != 1 {
		r.t.Fatalf("%s: retired %v after the reload without the target", r.pat, got)
	}
	r.save(k)
	r.clk.Advance(time.Minute)
	if err := r.pipe.Reconfigure(r.spec); err != nil {
		r.t.Fatalf("%s: reload with the target at scrape %d: %v", r.pat, k, err)
	}
	if got := r.pipe.Retired(); len(got) != 0 {
		r.t.Fatalf("%s: %v still retired after the reload that configures it again", r.pat, got)
	}
}

func runHeapPattern(t *testing.T, plan heapPlan, pat heapPattern) heapRun {
	t.Helper()
	began := time.Now()
	goroutines := runtime.NumGoroutine()
	baseline := int64(heapNow())
	r, stop := newHeapRig(t, plan, pat)
	defer func() {
		stop()
		settle(t, goroutines)
	}()
	run := heapRun{pattern: pat}
	scrapes := int(time.Duration(plan.days) * plan.day / rigInterval)
	perHour, perDay := int(time.Hour/rigInterval), int(plan.day/rigInterval)
	perEval := int(heapEvaluationInterval / rigInterval)
	for k := 1; k <= scrapes; k++ {
		now := r.scrape(k)
		if k%perEval == 0 {
			rep := r.pipe.Evaluate(now)
			run.history = rep.Targets[0].History
		}
		if k%perHour == 0 {
			run.states = append(run.states, len(r.save(k)))
		}
		switch k % perDay {
		case perDay / 2:
			r.restart(k)
		case perDay / 8, 3 * perDay / 8, 5 * perDay / 8, 7 * perDay / 8:
			r.retireAndRevive(k)
			run.retired++
		}
		if k%plan.sampleEvery == 0 {
			run.samples = append(run.samples, int64(heapNow())-baseline)
		}
	}
	run.duration = time.Since(began)
	runtime.KeepAlive(r)
	return run
}
