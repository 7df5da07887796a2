// Command perf prints the tables of BENCHMARKS.md: per-scrape cost against
// the textparse floor and the expfmt alternative, how that cost grows,
// memory with many targets after 30 days of history, a fleet run of the
// real daemon against 500 simulated targets, and the generated rules'
// evaluation cost on Prometheus and VictoriaMetrics over a backfilled fleet,
// and the rules evaluated live on both engines over the same scrapes.
//
//	go run ./bench/cmd/perf scrape  [-runs 5] [-benchtime 1s]
//	go run ./bench/cmd/perf growth  [-runs 3] [-benchtime 500ms]
//	go run ./bench/cmd/perf mem     [-targets 1,100,1000] [-periods 1d,7d,30d] [-runs 3]
//	go run ./bench/cmd/perf fleet   [-targets 500] [-duration 5m]
//	go run ./bench/cmd/perf fleet-rules [-targets 10] [-days 1] [-full 75m] [-engines prometheus,victoriametrics] [-flat] [-query-times 3] [-vm-flags -search.disableCache] [-pad-rules 60] [-import-ahead] [-aligned] [-prometheus-backfill-only]
//	go run ./bench/cmd/perf live-rules [-active 30s]
//	go run ./bench/cmd/perf resets  [-days 1,7]
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: perf scrape|growth|mem|mem-one|fleet|fleet-rules|live-rules|resets|resets-one [flags]")
		os.Exit(2)
	}
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "scrape":
		err = runScrape(args)
	case "growth":
		err = runGrowth(args)
	case "mem":
		err = runMem(args)
	case "mem-one":
		err = runMemOne(args)
	case "fleet":
		err = runFleet(args)
	case "fleet-rules":
		err = runFleetRules(args)
	case "live-rules":
		err = runLiveRules(args)
	case "resets":
		err = runResets(args)
	case "resets-one":
		err = runResetsOne(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "perf %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

// setBenchtime sets how long testing.Benchmark runs each case.
func setBenchtime(d string) error {
	if err := flag.Set("test.benchtime", d); err != nil {
		return fmt.Errorf("benchtime %q: %w", d, err)
	}
	return nil
}

func mb(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
