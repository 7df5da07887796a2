package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// memResult is what one mem-one process reports.
type memResult struct {
	Targets        int
	Period         string
	Scrapes        int
	Empty, Full    bench.Memory
	FullFreed      bench.Memory // after debug.FreeOSMemory
	FillSeconds    float64
	EvaluateMillis float64
}

// runMemOne fills a pipeline in this process and prints a memResult as JSON.
func runMemOne(args []string) error {
	fs := flag.NewFlagSet("mem-one", flag.ContinueOnError)
	targets := fs.Int("targets", 1, "targets")
	period := fs.String("period", "30d", "SLO period (history length)")
	heapProfile := fs.String("heapprofile", "", "write a heap profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := model.ParseDuration(*period)
	if err != nil {
		return fmt.Errorf("period %q: %w", *period, err)
	}
	w := bench.DefaultWorkload()
	w.SLOs[0].Period = time.Duration(p)
	synth, err := bench.NewSynth()
	if err != nil {
		return err
	}
	spec := w.Spec(*targets)
	end := bench.Epoch.Add(60 * 24 * time.Hour)
	times := bench.FillTimes(spec.Retention, end, bench.Interval)
	res := memResult{Targets: *targets, Period: *period, Scrapes: len(times)}
	pipe := pipeline.New(spec)
	res.Empty = bench.ReadMemory()
	start := time.Now()
	if err := bench.Fill(pipe, *targets, synth, times); err != nil {
		return err
	}
	res.FillSeconds = time.Since(start).Seconds()
	start = time.Now()
	rep := pipe.Evaluate(end) // the daemon holds its latest report
	res.EvaluateMillis = float64(time.Since(start).Microseconds()) / 1e3
	res.Full = bench.ReadMemory()
	debug.FreeOSMemory()
	res.FullFreed = bench.ReadMemory()
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			return err
		}
	}
	runtime.KeepAlive(pipe)
	runtime.KeepAlive(rep)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// runMem runs mem-one in a fresh process per configuration (RSS never
// shrinks, so each size needs its own process) and prints the tables.
func runMem(args []string) error {
	fs := flag.NewFlagSet("mem", flag.ContinueOnError)
	targets := fs.String("targets", "1,100,1000", "target counts (30-day period)")
	periods := fs.String("periods", "1d,7d,30d", "periods (one target)")
	runs := fs.Int("runs", 3, "processes per configuration; figures are medians")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	one := func(n int, period string) (memResult, error) {
		var rs []memResult
		for range *runs {
			out, err := exec.Command(self, "mem-one", "-targets", strconv.Itoa(n), "-period", period).Output()
			if err != nil {
				return memResult{}, fmt.Errorf("mem-one %d %s: %w", n, period, err)
			}
			var r memResult
			if err := json.Unmarshal(out, &r); err != nil {
				return memResult{}, fmt.Errorf("mem-one output %q: %w", out, err)
			}
			rs = append(rs, r)
		}
		slices.SortFunc(rs, func(a, b memResult) int { return int(a.Full.HeapAlloc) - int(b.Full.HeapAlloc) })
		return rs[len(rs)/2], nil
	}
	fmt.Printf("| targets | period | heap live MiB | heap per target MiB | RSS MiB | RSS after FreeOSMemory MiB | peak RSS MiB | fill s | Evaluate ms |\n|---|---|---|---|---|---|---|---|---|\n")
	row := func(r memResult) {
		per := float64(r.Full.HeapAlloc-r.Empty.HeapAlloc) / float64(r.Targets) / (1 << 20)
		fmt.Printf("| %d | %s | %s | %.2f | %s | %s | %s | %.1f | %.1f |\n", r.Targets, r.Period, mb(r.Full.HeapAlloc), per,
			mb(r.Full.RSS), mb(r.FullFreed.RSS), mb(r.Full.HWM), r.FillSeconds, r.EvaluateMillis)
	}
	for _, s := range strings.Split(*targets, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("targets %q: %w", s, err)
		}
		r, err := one(n, "30d")
		if err != nil {
			return err
		}
		row(r)
	}
	for _, p := range strings.Split(*periods, ",") {
		r, err := one(1, p)
		if err != nil {
			return err
		}
		row(r)
	}
	return nil
}
