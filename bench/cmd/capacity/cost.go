package main

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
)

// costRow is one measurement: a number of targets with capacity off or on.
type costRow struct {
	targets               int
	capacity              bool
	heapPerTarget         float64 // MiB
	evalCPU, scrapeCPU    float64 // ms per evaluation of every target, µs per scrape of one target
	windows               int     // the first learner's windows
	kind                  string
	fillSeconds, runHours float64
}

// runCost measures what the capacity learners cost the daemon: the
// workload of BENCHMARKS.md sections 2 and 9 (bench.DefaultWorkload, a
// 30-day history filled with bench.FillTimes), then hours more of 15 s
// scrapes of every target, so that the learners hold what a daemon that
// ran that long holds (24 h: a full day of windows), then two minutes of
// scrapes and evaluations every 15 s (a window closes every two minutes
// and each learner then refits; more evaluations for few targets):
// heap per target after a full GC,
// CPU per evaluation (pipeline.Evaluate, and online.Publish with
// capacity on, as the daemon runs them) and per scrape.
func runCost(args []string) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	targetsFlag := fs.String("targets", "1,100", "comma-separated target counts")
	hours := fs.Float64("hours", 24, "hours of 15 s scrapes after the fill")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rows []costRow
	for _, f := range strings.Split(*targetsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("targets %q: want positive integers", f)
		}
		for _, on := range []bool{false, true} {
			r, err := measureCost(n, on, time.Duration(*hours*float64(time.Hour)))
			if err != nil {
				return err
			}
			rows = append(rows, r)
			runtime.GC()
		}
	}
	fmt.Println("| targets | capacity | heap per target MiB | CPU per evaluation ms | CPU per scrape µs | learner windows, kind |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		state := "off"
		learned := "–"
		if r.capacity {
			state, learned = "on", fmt.Sprintf("%d, %s", r.windows, r.kind)
		}
		fmt.Printf("| %d | %s | %.2f | %.2f | %.1f | %s |\n", r.targets, state, r.heapPerTarget, r.evalCPU, r.scrapeCPU, learned)
	}
	for i := 0; i+1 < len(rows); i += 2 {
		off, on := rows[i], rows[i+1]
		fmt.Printf("\n%d targets: heap %.3f×, CPU per evaluation %.3f×, per scrape %.3f×", off.targets,
			on.heapPerTarget/off.heapPerTarget, on.evalCPU/off.evalCPU, on.scrapeCPU/off.scrapeCPU)
	}
	fmt.Println()
	return nil
}

// measureCost runs the workload for n targets, with the learners wired as
// the daemon wires them when on.
func measureCost(n int, on bool, after time.Duration) (costRow, error) {
	row := costRow{targets: n, capacity: on, runHours: after.Hours()}
	synth, err := bench.NewSynth()
	if err != nil {
		return row, err
	}
	spec := bench.DefaultWorkload().Spec(n)
	learners, tickets := online.New(nil), online.NewHeadroomAlerts()
	if on {
		spec.Intervals = learners
	}
	end := bench.Epoch.Add(60 * 24 * time.Hour)
	p := pipeline.New(spec)
	start := time.Now()
	if err := bench.Fill(p, n, synth, bench.FillTimes(spec.Retention, end, bench.Interval)); err != nil {
		return row, err
	}
	evaluate := func(at time.Time) *pipeline.Report {
		rep := p.Evaluate(at)
		if on {
			rep = online.Publish(learners, tickets, rep, 0.2, 15*time.Minute)
		}
		return rep
	}
	at := end
	for stop := end.Add(after); at.Before(stop); {
		at = at.Add(bench.Interval)
		if err := scrapeAll(p, n, synth, at); err != nil {
			return row, err
		}
		if at.Sub(end)%(30*time.Minute) == 0 {
			evaluate(at) // the learners forget and refit now and then
		}
	}
	row.fillSeconds = time.Since(start).Seconds()
	rep := evaluate(at)
	mem := bench.ReadMemory()
	row.heapPerTarget = float64(mem.HeapAlloc) / float64(n) / (1 << 20)
	var evalCPU, scrapeCPU time.Duration
	// At least four minutes (two windows close, so every learner refits
	// twice), more for few targets, whose evaluations are short.
	evaluations := max(16, 1600/n/8*8)
	for range evaluations {
		at = at.Add(bench.Interval)
		c := cpuTime()
		if err := scrapeAll(p, n, synth, at); err != nil {
			return row, err
		}
		scrapeCPU += cpuTime() - c
		c = cpuTime()
		rep = evaluate(at)
		evalCPU += cpuTime() - c
	}
	row.evalCPU = float64(evalCPU.Microseconds()) / 1e3 / float64(evaluations)
	row.scrapeCPU = float64(scrapeCPU.Microseconds()) / float64(evaluations) / float64(n)
	if reps := learners.Reports(); len(reps) > 0 {
		row.windows, row.kind = reps[0].Estimate.Windows, string(reps[0].Estimate.Kind)
	}
	runtime.KeepAlive(rep)
	runtime.KeepAlive(p)
	return row, nil
}

// scrapeAll ingests one synthetic scrape of every target at t.
func scrapeAll(p *pipeline.Pipeline, n int, s *bench.Synth, t time.Time) error {
	snap := s.Snapshot(t)
	for i := range n {
		if err := p.Ingest(bench.TargetName(i), snap, 0); err != nil {
			return fmt.Errorf("scrape at %s: %w", t.Format(time.RFC3339), err)
		}
	}
	return nil
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
