package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJitteredScrapesShareEdges replays, through the shipped test rules
// with promtool, a server scraped every 15 s give or take 3 s, so that a
// group interval holds no scrape, one or two, and a window's nominal start
// falls between two scrapes with the next one inside the window. Each
// scrape moves every counter by a different amount, so that a part taken
// over other scrapes shows. Every part of a window must then be over the
// same two scrapes: the one at or before the window's nominal start (the
// group's evaluation ceil(w/interval) intervals back) and the newest one.
// The finished requests, the first tokens, the requests turned away at
// admission and the in-flight bound at the start are checked to be those
// two scrapes' differences (and the gauges at the first), for a 2m and a
// 10m window; increase() over [w] would start from the first scrape inside
// the window instead, and extrapolate.
//
// promtool's input series have one fixed interval: the scrapes are written
// on a 1 s grid, blank ("_") between them, which is what a jittered scrape
// leaves in the TSDB.
func TestJitteredScrapesShareEdges(t *testing.T) {
	const (
		base     = 15 * time.Second
		length   = 12 * time.Minute
		evalTime = 11 * time.Minute
	)
	jitter := []int{0, 2, -3, 1, 3, -2, 0, -1, 2, -3, 3, 1, -2}
	var scrapes []int // seconds
	for k := 0; ; k++ {
		s := k*int(base/time.Second) + jitter[k%len(jitter)]
		if k == 0 {
			s = 0
		}
		if s > int(length/time.Second) {
			break
		}
		scrapes = append(scrapes, s)
	}
	// Cumulative values at scrape k.
	finished, first, rejected := make([]int, len(scrapes)), make([]int, len(scrapes)), make([]int, len(scrapes))
	inFlight := func(k int) (running, waiting int) { return 20 + k%5, k % 3 }
	for k := range scrapes {
		prev := 0
		if k > 0 {
			prev = finished[k-1]
		}
		finished[k] = prev + 5 + (3*k)%7
		first[k] = finished[k] + 2*k + 20
		rejected[k] = 2*k + k/4 // counters only grow
	}
	series := func(name string, value func(k int) int) string {
		vals := make([]string, int(length/time.Second)+1)
		for i := range vals {
			vals[i] = "_"
		}
		for k, s := range scrapes {
			vals[s] = fmt.Sprint(value(k))
		}
		return fmt.Sprintf("      - series: '%s'\n        values: '%s'\n", name, strings.Join(vals, " "))
	}
	labels := `{model_name="m",engine="0",instance="a",job="vllm"`
	var in strings.Builder
	for _, le := range []string{"0.5", "1.0", "+Inf"} {
		in.WriteString(series("vllm:time_to_first_token_seconds_bucket"+labels+`,le="`+le+`"}`, func(k int) int { return first[k] }))
	}
	in.WriteString(series("vllm:time_to_first_token_seconds_count"+labels+"}", func(k int) int { return first[k] }))
	for _, le := range []string{"0.05", "+Inf"} {
		in.WriteString(series("vllm:request_time_per_output_token_seconds_bucket"+labels+`,le="`+le+`"}`, func(k int) int { return finished[k] }))
	}
	in.WriteString(series("vllm:request_time_per_output_token_seconds_count"+labels+"}", func(k int) int { return finished[k] }))
	in.WriteString(series("vllm:e2e_request_latency_seconds_count"+labels+"}", func(k int) int { return finished[k] }))
	in.WriteString(series("vllm:num_requests_running"+labels+"}", func(k int) int { r, _ := inFlight(k); return r }))
	in.WriteString(series("vllm:num_requests_waiting"+labels+"}", func(k int) int { _, w := inFlight(k); return w }))
	in.WriteString(series("vllm:admission_rejections_total"+labels+`,reason="max_num_queued_reqs"}`, func(k int) int { return rejected[k] }))

	// at is the index of the newest scrape at or before s seconds.
	at := func(s int) int {
		k := -1
		for i, x := range scrapes {
			if x <= s {
				k = i
			}
		}
		return k
	}
	end := at(int(evalTime / time.Second))
	var checks strings.Builder
	expect := func(expr, labels string, v int) {
		fmt.Fprintf(&checks, "      - expr: '%s'\n        eval_time: %s\n        exp_samples:\n          - labels: '%s'\n            value: %d\n",
			expr, evalTime, labels, v)
	}
	for _, w := range []time.Duration{2 * time.Minute, 10 * time.Minute} {
		s0 := at(int((evalTime - w) / time.Second))
		if scrapes[s0+1] <= int((evalTime-w)/time.Second) {
			t.Fatalf("window %v: the scrape after its start scrape is not inside it", w)
		}
		win := fmt.Sprintf(`slo="interactive",window="%s"`, shortDuration(w))
		r, wt := inFlight(s0)
		expect("model_name:vllm_slo_finished_requests:increase"+shortDuration(w),
			"model_name:vllm_slo_finished_requests:increase"+shortDuration(w)+`{model_name="m",`+win+"}", finished[end]-finished[s0])
		expect("model_name:vllm_slo_rejected_requests:increase"+shortDuration(w),
			"model_name:vllm_slo_rejected_requests:increase"+shortDuration(w)+`{model_name="m",`+win+"}", rejected[end]-rejected[s0])
		expect("model_name:vllm_slo_in_flight_requests_at_start:sum"+shortDuration(w),
			"model_name:vllm_slo_in_flight_requests_at_start:sum"+shortDuration(w)+`{model_name="m",`+win+"}", r+wt)
		expect(fmt.Sprintf(`sum_over_time(model_name:vllm_slo_first_tokens:interval_increase{slo="interactive"}[%s])`, shortDuration(w-time.Millisecond)),
			`{model_name="m",slo="interactive"}`, first[end]-first[s0])
		t.Logf("window %v: scrapes %ds to %ds (the first inside it at %ds); finished %d, rejected %d, in flight at the start %d",
			w, scrapes[s0], scrapes[end], scrapes[s0+1], finished[end]-finished[s0], rejected[end]-rejected[s0], r+wt)
	}
	rules, err := filepath.Abs(filepath.Join(deployDir, "rules_test_rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("rule_files:\n  - %s\n\nevaluation_interval: 15s\n\ntests:\n  - interval: 1s\n    input_series:\n%s    promql_expr_test:\n%s",
		rules, in.String(), checks.String())
	path := filepath.Join(t.TempDir(), "jitter_test.yml")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "test", "rules", path)
}

// shortDuration writes a duration as Prometheus does (2m, 1m59s999ms).
func shortDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}
