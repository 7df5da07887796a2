package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
)

// runResets prints the CPU a target costs per simulated day, scraped and
// evaluated every 15 s from an empty pipeline (bench.RunFeed): a normal
// server against one whose counters restart at every scrape, over 1 day
// and over 7, under the default history size limit (which holds about a
// day of such restarts) and without one (which holds them all). Each case
// runs in a process of its own, so that one case's heap does not tax the
// next one's collector.
func runResets(args []string) error {
	fs := flag.NewFlagSet("resets", flag.ContinueOnError)
	days := fs.String("days", "1,7", "simulated days per case")
	limits := fs.String("limits", strconv.FormatInt(bench.DefaultHistoryLimit, 10)+",0", "history size limits in bytes (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("| history limit | server | days | scrapes | CPU s | CPU s per day | ms per scrape |\n|---|---|---|---|---|---|---|\n")
	for _, limit := range strings.Split(*limits, ",") {
		for _, resets := range []bool{false, true} {
			for _, d := range strings.Split(*days, ",") {
				if err := resetsRow(self, limit, d, resets); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resetsRow runs one case of runResets in a process of its own and prints
// its row.
func resetsRow(self, limit, days string, resets bool) error {
	n, err := strconv.Atoi(days)
	if err != nil {
		return fmt.Errorf("days %q: %w", days, err)
	}
	out, err := exec.Command(self, "resets-one", "-days", days, "-limit", limit, "-resets="+strconv.FormatBool(resets)).Output()
	if err != nil {
		return fmt.Errorf("resets-one %d days, limit %s: %w", n, limit, err)
	}
	cpu, err := time.ParseDuration(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("resets-one output %q: %w", out, err)
	}
	name, lim := "normal", limit+" B"
	if resets {
		name = "restarts every scrape"
	}
	if limit == "0" {
		lim = "none"
	}
	scrapes := n * int(24*time.Hour/bench.Interval)
	fmt.Printf("| %s | %s | %d | %d | %.1f | %.2f | %.3f |\n", lim, name, n, scrapes, cpu.Seconds(), cpu.Seconds()/float64(n),
		float64(cpu.Microseconds())/1e3/float64(scrapes))
	return nil
}

// runResetsOne runs one case of runResets and prints its CPU time.
func runResetsOne(args []string) error {
	fs := flag.NewFlagSet("resets-one", flag.ContinueOnError)
	days := fs.Int("days", 1, "simulated days")
	resets := fs.Bool("resets", false, "counters restart at every scrape")
	limit := fs.Int64("limit", bench.DefaultHistoryLimit, "history size limit in bytes (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cpu, err := bench.RunFeed(*resets, time.Duration(*days)*24*time.Hour, *limit)
	if err != nil {
		return err
	}
	fmt.Println(cpu)
	return nil
}
