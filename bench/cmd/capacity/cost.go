package main

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// costCase is one configuration measured: a number of targets, capacity
// off, or on with a RefitEvery and a ShapeFrom.
type costCase struct {
	targets   int
	capacity  bool
	refit     time.Duration
	shapeFrom float64
}

func (c costCase) String() string {
	if !c.capacity {
		return "off"
	}
	s := "on, refit every " + c.refit.String()
	if c.refit <= 0 {
		s = "on, refit every window"
	}
	if c.shapeFrom <= 0 {
		s += ", Gumbel curve off"
	}
	return s
}

// costRow is one measurement of a case.
type costRow struct {
	costCase
	heapPerTarget      float64 // MiB
	evalCPU, scrapeCPU float64 // ms per evaluation of every target, µs per scrape of one target
	windows            int     // the first learner's windows
	first              capacity.Estimate
	kinds              map[capacity.Kind]int
	// bounded counts the published capacity series
	// (vllm_slo_capacity_requests_per_second) with kind="bounded", of series.
	bounded, series int
}

// runCost measures what the capacity learners cost the daemon: the
// workload of BENCHMARKS.md sections 2 and 9 (bench.DefaultWorkload, a
// 30-day history filled with bench.FillTimes), then hours more of 15 s
// scrapes of every target, so that the learners hold what a daemon that
// ran that long holds (24 h: a full day of windows), then an hour of
// scrapes and evaluations every 15 s (a window closes every two minutes;
// an hour holds two refits at the default RefitEvery; more evaluations
// for few targets): heap per target after a full GC, CPU per evaluation
// (pipeline.Evaluate, with online.Stage amending it when capacity is on, as the daemon
// runs them) and per scrape.
//
// -workload steady scrapes bench.Synth at its constant rate, below the
// knee (the learners answer lower_only, no bootstrap); -workload knee
// drives it through its knee four times a day (kneeSynth), so that every
// learner publishes a bounded answer, bootstrap included. -runs repeats
// every case, the order of the cases rotated from one run to the next,
// and the medians are printed.
func runCost(args []string) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	targetsFlag := fs.String("targets", "1,100", "comma-separated target counts")
	hours := fs.Float64("hours", 24, "hours of 15 s scrapes after the fill")
	workload := fs.String("workload", "steady", "steady (below the knee) or knee (through it, bounded answers)")
	refitFlag := fs.String("refit", "30m", "comma-separated capacity.Config.RefitEvery values measured with capacity on (0: every window)")
	runs := fs.Int("runs", 1, "runs of every case, alternating")
	shapeFlag := fs.String("shape-from", strconv.FormatFloat(capacity.DefaultConfig(0).ShapeFrom, 'g', -1, 64), "comma-separated capacity.Config.ShapeFrom values measured with capacity on (0: the Gumbel curve off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workload != "steady" && *workload != "knee" {
		return fmt.Errorf("workload %q: want steady or knee", *workload)
	}
	cases, per, err := costCases(*targetsFlag, *refitFlag, *shapeFlag)
	if err != nil {
		return err
	}
	rows := make([][]costRow, len(cases))
	for run := range *runs {
		for g := 0; g < len(cases); g += per {
			for j := range per {
				i := g + (j+run)%per
				r, err := measureCost(cases[i], *workload == "knee", time.Duration(*hours*float64(time.Hour)))
				if err != nil {
					return err
				}
				rows[i] = append(rows[i], r)
				printRow(fmt.Sprintf("run %d", run+1), r)
				runtime.GC()
			}
		}
	}
	fmt.Printf("\nworkload %s, %d run(s), medians:\n\n", *workload, *runs)
	fmt.Println("| targets | capacity | heap per target MiB | CPU per evaluation ms | CPU per scrape µs | learner windows, kinds | bounded series |")
	fmt.Println("|---|---|---|---|---|---|---|")
	med := make([]costRow, len(cases))
	for i, rs := range rows {
		med[i] = medianRow(rs)
		printRow("", med[i])
	}
	for g := 0; g < len(med); g += per {
		off := med[g]
		for _, on := range med[g+1 : g+per] {
			fmt.Printf("\n%d targets, %s: heap %.3f×, CPU per evaluation %.3f×, per scrape %.3f×", off.targets, on.costCase,
				on.heapPerTarget/off.heapPerTarget, on.evalCPU/off.evalCPU, on.scrapeCPU/off.scrapeCPU)
		}
	}
	fmt.Println()
	return nil
}

// costCases builds the cases of the comma-separated flags: per target
// count, capacity off, then on for every RefitEvery and ShapeFrom; per is
// the number of cases per target count.
func costCases(targetsFlag, refitFlag, shapeFlag string) (cases []costCase, per int, err error) {
	var refits []time.Duration
	for _, f := range strings.Split(refitFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, 0, fmt.Errorf("refit %q: %w", f, err)
		}
		refits = append(refits, d)
	}
	var shapes []float64
	for _, f := range strings.Split(shapeFlag, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 {
			return nil, 0, fmt.Errorf("shape-from %q: want numbers at least 0", f)
		}
		shapes = append(shapes, v)
	}
	for _, f := range strings.Split(targetsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, 0, fmt.Errorf("targets %q: want positive integers", f)
		}
		cases = append(cases, costCase{targets: n})
		for _, r := range refits {
			for _, sf := range shapes {
				cases = append(cases, costCase{targets: n, capacity: true, refit: r, shapeFrom: sf})
			}
		}
	}
	return cases, 1 + len(refits)*len(shapes), nil
}

// printRow prints one row of the table, prefixed by label when not empty.
func printRow(label string, r costRow) {
	learned, bounded := "–", "–"
	if r.capacity {
		var ks []string
		for _, k := range []capacity.Kind{capacity.Bounded, capacity.LowerOnly, capacity.Unknown} {
			if r.kinds[k] > 0 {
				ks = append(ks, fmt.Sprintf("%d %s", r.kinds[k], k))
			}
		}
		learned, bounded = fmt.Sprintf("%d; %s", r.windows, strings.Join(ks, ", ")), fmt.Sprintf("%d/%d", r.bounded, r.series)
		if label != "" {
			e := r.first
			learned += fmt.Sprintf(" (first: %.2f [%.2f, %.2f] req/s at load %.2f)", e.Requests.Estimate, e.Requests.Lower, e.Requests.Upper, e.Load)
		}
	}
	if label != "" {
		fmt.Printf("%s: ", label)
	}
	fmt.Printf("| %d | %s | %.3f | %.2f | %.1f | %s | %s |\n", r.targets, r.costCase, r.heapPerTarget, r.evalCPU, r.scrapeCPU, learned, bounded)
}

// medianRow is the run of rs with the median figures, each taken alone.
func medianRow(rs []costRow) costRow {
	m := rs[0]
	pick := func(f func(costRow) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	m.heapPerTarget = pick(func(r costRow) float64 { return r.heapPerTarget })
	m.evalCPU = pick(func(r costRow) float64 { return r.evalCPU })
	m.scrapeCPU = pick(func(r costRow) float64 { return r.scrapeCPU })
	for _, r := range rs {
		m.bounded, m.series = min(m.bounded, r.bounded), max(m.series, r.series)
	}
	return m
}

// snapshotter is a synthetic server: bench.Synth or kneeSynth.
type snapshotter interface {
	Snapshot(t time.Time) *scrape.Snapshot
}

// measureCost runs the workload for c, with the learners wired as the
// daemon wires them when capacity is on.
func measureCost(c costCase, knee bool, after time.Duration) (costRow, error) {
	n := c.targets
	row := costRow{costCase: c, kinds: map[capacity.Kind]int{}}
	synth, err := bench.NewSynth()
	if err != nil {
		return row, err
	}
	w := bench.DefaultWorkload()
	spec := w.Spec(n)
	learners := online.New(func(goal float64) capacity.Config {
		cfg := capacity.DefaultConfig(goal)
		cfg.RefitEvery, cfg.ShapeFrom = c.refit, c.shapeFrom
		return cfg
	})
	if c.capacity {
		spec.Intervals = learners
	}
	end := bench.Epoch.Add(60 * 24 * time.Hour)
	p := pipeline.New(spec)
	if c.capacity {
		p.AddAmender(online.Stage{Learners: learners, Policy: func() online.HeadroomPolicy {
			return online.HeadroomPolicy{Margin: 0.2, Hold: 15 * time.Minute}
		}})
	}
	if err := bench.Fill(p, n, synth, bench.FillTimes(spec.Retention, end, bench.Interval)); err != nil {
		return row, err
	}
	var server snapshotter = synth
	if knee {
		server = newKneeSynth(synth, end, ttftThreshold(w.SLOs[0]))
	}
	evaluate := p.Evaluate
	at := end
	for stop := end.Add(after); at.Before(stop); {
		at = at.Add(bench.Interval)
		if err := scrapeAll(p, n, server, at); err != nil {
			return row, err
		}
		if at.Sub(end)%(30*time.Minute) == 0 {
			evaluate(at) // the learners forget and refit now and then
		}
	}
	rep := evaluate(at)
	mem := bench.ReadMemory()
	row.heapPerTarget = float64(mem.HeapAlloc) / float64(n) / (1 << 20)
	var evalCPU, scrapeCPU time.Duration
	// An hour (30 windows close; at the default RefitEvery every learner
	// refits twice), four for few targets, whose evaluations are short.
	evaluations := 240 * max(1, 4/n)
	for range evaluations {
		at = at.Add(bench.Interval)
		c := cpuTime()
		if err := scrapeAll(p, n, server, at); err != nil {
			return row, err
		}
		scrapeCPU += cpuTime() - c
		c = cpuTime()
		rep = evaluate(at)
		evalCPU += cpuTime() - c
	}
	row.evalCPU = float64(evalCPU.Microseconds()) / 1e3 / float64(evaluations)
	row.scrapeCPU = float64(scrapeCPU.Microseconds()) / float64(evaluations) / float64(n)
	reps := learners.Reports()
	for _, r := range reps {
		row.kinds[r.Estimate.Kind]++
	}
	if len(reps) > 0 {
		row.windows, row.first = reps[0].Estimate.Windows, reps[0].Estimate
	}
	if c.capacity {
		if row.bounded, row.series, err = boundedSeries(learners); err != nil {
			return row, err
		}
	}
	runtime.KeepAlive(rep)
	runtime.KeepAlive(p)
	return row, nil
}

// boundedSeries renders the learners' estimates as the exporter does and
// counts the vllm_slo_capacity_requests_per_second series, and those of
// them with kind="bounded".
func boundedSeries(ls *online.Learners) (bounded, series int, err error) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(exporter.NewCollector(func() *pipeline.Report { return &pipeline.Report{Capacity: ls.Reports()} })); err != nil {
		return 0, 0, fmt.Errorf("register the capacity collector: %w", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		return 0, 0, fmt.Errorf("gather the capacity series: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != exporter.Namespace+"_capacity_requests_per_second" {
			continue
		}
		for _, m := range mf.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == string(capacity.Bounded) {
					bounded++
				}
			}
		}
	}
	return bounded, series, nil
}

// ttftThreshold is the SLO's TTFT objective (+Inf without one).
func ttftThreshold(s slo.SLO) float64 {
	for _, o := range s.Objectives {
		if o.Metric == slo.TTFT {
			return o.Threshold
		}
	}
	return math.Inf(1)
}

// scrapeAll ingests one synthetic scrape of every target at t.
func scrapeAll(p *pipeline.Pipeline, n int, s snapshotter, t time.Time) error {
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
