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
// and over 7. Each case runs in a process of its own, so that one case's
// heap does not tax the next one's collector.
func runResets(args []string) error {
	fs := flag.NewFlagSet("resets", flag.ContinueOnError)
	days := fs.String("days", "1,7", "simulated days per case")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("| server | days | scrapes | CPU s | CPU s per day | ms per scrape |\n|---|---|---|---|---|---|\n")
	for _, resets := range []bool{false, true} {
		for _, d := range strings.Split(*days, ",") {
			n, err := strconv.Atoi(d)
			if err != nil {
				return fmt.Errorf("days %q: %w", d, err)
			}
			out, err := exec.Command(self, "resets-one", "-days", d, "-resets="+strconv.FormatBool(resets)).Output()
			if err != nil {
				return fmt.Errorf("resets-one %d days: %w", n, err)
			}
			cpu, err := time.ParseDuration(strings.TrimSpace(string(out)))
			if err != nil {
				return fmt.Errorf("resets-one output %q: %w", out, err)
			}
			name := "normal"
			if resets {
				name = "restarts every scrape"
			}
			scrapes := n * int(24*time.Hour/bench.Interval)
			fmt.Printf("| %s | %d | %d | %.1f | %.2f | %.3f |\n", name, n, scrapes, cpu.Seconds(), cpu.Seconds()/float64(n),
				float64(cpu.Microseconds())/1e3/float64(scrapes))
		}
	}
	return nil
}

// runResetsOne runs one case of runResets and prints its CPU time.
func runResetsOne(args []string) error {
	fs := flag.NewFlagSet("resets-one", flag.ContinueOnError)
	days := fs.Int("days", 1, "simulated days")
	resets := fs.Bool("resets", false, "counters restart at every scrape")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cpu, err := bench.RunFeed(*resets, time.Duration(*days)*24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Println(cpu)
	return nil
}
