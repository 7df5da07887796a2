package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
)

func runScrape(args []string) error {
	runs, err := timingFlags("scrape", args, 5, "1s")
	if err != nil {
		return err
	}
	fmt.Printf("| exposition | bytes | case | µs/scrape | allocs | KiB alloc | × floor | expfmt ÷ case |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range []bench.Shape{bench.Realistic, bench.Large} {
		body, ct, err := bench.Body(s, 10*time.Minute)
		if err != nil {
			return err
		}
		sc, st, err := bench.NewWarmScraper(s, bench.DefaultWorkload())
		if err != nil {
			return err
		}
		cases := append(bench.ParseCases(body, ct), bench.FullCase(sc, st))
		res, err := bench.Measure(runs, cases)
		if err != nil {
			return err
		}
		floor, exp := res[bench.CaseFloor], res[bench.CaseExpfmt]
		for _, c := range cases {
			r := res[c.Name]
			fmt.Printf("| %s | %d | %s | %.0f | %d | %.0f | %.2f | %.2f |\n", s, len(body), c.Name,
				bench.MedianNs(r)/1e3, r[0].AllocsPerOp, float64(r[0].BytesPerOp)/1024,
				bench.MedianRatio(r, floor), bench.MedianRatio(exp, r))
		}
	}
	return nil
}

func runGrowth(args []string) error {
	runs, err := timingFlags("growth", args, 3, "500ms")
	if err != nil {
		return err
	}
	fmt.Printf("By exposition size (default workload: 4 windows × 4 quantiles × 1 SLO)\n\n")
	fmt.Printf("| models | engines/model | bytes | floor µs | Parse µs | Parse × floor | full scrape µs | full − Parse µs |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range []int{1, 2, 4} {
		for _, e := range []int{1, 2, 4, 8} {
			s := bench.Shape{Models: m, Engines: e}
			body, ct, err := bench.Body(s, 10*time.Minute)
			if err != nil {
				return err
			}
			sc, st, err := bench.NewWarmScraper(s, bench.DefaultWorkload())
			if err != nil {
				return err
			}
			cases := append(bench.ParseCases(body, ct)[:2], bench.FullCase(sc, st))
			res, err := bench.Measure(runs, cases)
			if err != nil {
				return err
			}
			fl, pa, fu := bench.MedianNs(res[bench.CaseFloor]), bench.MedianNs(res[bench.CaseParse]), bench.MedianNs(res[bench.CaseFull])
			fmt.Printf("| %d | %d | %d | %.0f | %.0f | %.2f | %.0f | %.0f |\n", m, e, len(body), fl/1e3, pa/1e3,
				bench.MedianRatio(res[bench.CaseParse], res[bench.CaseFloor]), fu/1e3, (fu-pa)/1e3)
		}
	}
	fmt.Printf("\nBy windows and quantiles (realistic exposition, 1 SLO)\n\n")
	fmt.Printf("| windows | quantiles | full scrape µs | allocs |\n|---|---|---|---|\n")
	allWindows := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour,
		2 * time.Minute, 10 * time.Minute, 15 * time.Minute, 45 * time.Minute}
	allQuantiles := []float64{0.5, 0.9, 0.95, 0.99, 0.75, 0.8, 0.999, 0.25}
	for _, nw := range []int{1, 2, 4, 8} {
		for _, nq := range []int{1, 4, 8} {
			w := bench.DefaultWorkload()
			w.Windows, w.Quantiles = allWindows[:nw], allQuantiles[:nq]
			sc, st, err := bench.NewWarmScraper(bench.Realistic, w)
			if err != nil {
				return err
			}
			res, err := bench.Measure(runs, []bench.Case{bench.FullCase(sc, st)})
			if err != nil {
				return err
			}
			r := res[bench.CaseFull]
			fmt.Printf("| %d | %d | %.0f | %d |\n", nw, nq, bench.MedianNs(r)/1e3, r[0].AllocsPerOp)
		}
	}
	return nil
}

// timingFlags parses the -runs and -benchtime flags every timing table takes
// and applies the bench time; it returns the number of runs.
func timingFlags(name string, args []string, runs int, benchtime string) (int, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	n := fs.Int("runs", runs, "runs per case; figures are medians")
	bt := fs.String("benchtime", benchtime, "time per case per run")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	return *n, setBenchtime(*bt)
}
