package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/capacitydays"
)

// runMixUnit measures whether counting load in work (prompt·wp +
// output·wo tokens per request, relative to the final mix) and keeping
// what was learned across a mix shift beats starting over at the shift:
// each day of the suite runs once per seed, and the intervals its learner
// was fed are replayed into a learner that starts over on a shift (the
// daemon's) and, for each pair of weights, into one that never does and
// counts work.
func runMixUnit(args []string) error {
	fs := flag.NewFlagSet("mixunit", flag.ContinueOnError)
	path := fs.String("knees", defaultKnees, "true knees (from the knees command)")
	seeds := fs.Int("seeds", 10, "seeds per day")
	hours := fs.Float64("hours", 6, "simulated hours per day")
	weights := fs.String("weights", "1:0,1:1,1:5", "comma-separated prompt:output token weights")
	span := fs.Duration("span", 20*time.Minute, "the span the mix of each interval is pooled over")
	only := fs.String("days", "mix shift|diurnal, peak 110%", "|-separated parts of the names of the days replayed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	k, err := days.ReadKnees(*path)
	if err != nil {
		return err
	}
	type pair struct{ wp, wo float64 }
	var ws []pair
	for _, f := range strings.Split(*weights, ",") {
		var p pair
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%g:%g", &p.wp, &p.wo); err != nil {
			return fmt.Errorf("weights %q: %w", f, err)
		}
		ws = append(ws, p)
	}
	by := map[string][]days.Score{}
	var order []string
	add := func(name string, s days.Score) {
		if _, ok := by[name]; !ok {
			order = append(order, name)
		}
		by[name] = append(by[name], s)
	}
	for _, d := range days.Suite(k, time.Duration(*hours*float64(time.Hour))) {
		if !named(d.Name, strings.Split(*only, "|")) {
			continue
		}
		for s := 1; s <= *seeds; s++ {
			cfg := capacity.DefaultConfig(days.SLO.Goal)
			r, err := days.Run(d, uint64(s), cfg)
			if err != nil {
				return err
			}
			add("start over on a shift\t"+d.Name, days.Replay(d, uint64(s), r.Fed, cfg, k))
			keep := cfg
			keep.MixTolerance = math.Inf(1)
			for _, w := range ws {
				n := int(*span / (15 * time.Second))
				add(fmt.Sprintf("work %g:%g, kept\t%s", w.wp, w.wo, d.Name), days.Replay(d, uint64(s), days.InWorkUnits(r.Fed, w.wp, w.wo, n), keep, k))
			}
		}
	}
	fmt.Fprintln(os.Stdout, "| learner | day | inside | within ±15% | bounded | mean error | largest error | over 5% | mean width |")
	fmt.Fprintln(os.Stdout, "|---|---|---|---|---|---|---|---|---|")
	for _, name := range order {
		ss := by[name]
		inside, within, bounded, over := 0, 0, 0, 0
		var sum, largest, width float64
		for _, s := range ss {
			if s.Inside {
				inside++
			}
			if s.Within15 {
				within++
			}
			if !math.IsNaN(s.Error) {
				bounded++
				sum, width, largest = sum+s.Error, width+s.Width, math.Max(largest, s.Error)
				if s.Error > 0.05 {
					over++
				}
			}
		}
		mean, w := "–", "–"
		if bounded > 0 {
			mean, w = fmt.Sprintf("%.1f%%", 100*sum/float64(bounded)), fmt.Sprintf("%.1f%%", 100*width/float64(bounded))
		}
		learner, day, _ := strings.Cut(name, "\t")
		fmt.Fprintf(os.Stdout, "| %s | %s | %d/%d | %d/%d | %d | %s | %.1f%% | %d | %s |\n", learner, day, inside, len(ss), within, len(ss), bounded, mean, 100*largest, over, w)
	}
	return nil
}

// named reports whether name contains one of parts.
func named(name string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}
