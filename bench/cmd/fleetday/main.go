// Command fleetday plays the held-out fleet days with each autoscaling
// signal at the threshold a grid search chose on the training days, and
// prints the table of docs/autoscaling.md:
//
//	go run ./bench/cmd/fleetday [-workers 2] [-knees bench/fleetday/testdata/knees.json] [-kinds 0,1,2]
//	go run ./bench/cmd/fleetday knees [-out bench/fleetday/testdata/knees.json] [-seeds 8]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench/fleetday"
)

const defaultKnees = "bench/fleetday/testdata/knees.json"

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "knees" {
		err = runKnees(os.Args[2:])
	} else {
		err = runTable(os.Args[1:], os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleetday: %v\n", err)
		os.Exit(1)
	}
}

// runKnees measures the fleet's true knees and writes them.
func runKnees(args []string) error {
	fs := flag.NewFlagSet("knees", flag.ContinueOnError)
	out := fs.String("out", defaultKnees, "where to write the knees")
	nSeeds := fs.Int("seeds", 8, "seeds per rate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var seeds []uint64
	for s := range *nSeeds {
		seeds = append(seeds, uint64(101+s))
	}
	cfg := fleetday.DefaultConfig()
	guess := map[string]float64{}
	mixes := []fleetday.Mix{fleetday.DemoMix(), fleetday.LongMix()}
	for _, m := range mixes {
		var rates []float64
		for r := 1.0; r <= 10; r += 0.25 {
			rates = append(rates, r)
		}
		guess[m.Name] = fleetday.TrueKnee(cfg.Engine, m, rates, seeds[:2]).Knee
	}
	k, err := fleetday.MeasureKnees(cfg, mixes, guess, []int{1, 2, 3, 4, 6, 8, 12, 16}, seeds)
	if err != nil {
		return err
	}
	return fleetday.WriteKnees(*out, k)
}

// runTable chooses the thresholds, plays the held-out days and prints.
func runTable(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("fleetday", flag.ContinueOnError)
	workers := fs.Int("workers", 2, "days played at once")
	kneesPath := fs.String("knees", defaultKnees, "the fleet's true knees (written by the knees command)")
	only := fs.String("kinds", "", "comma-separated indexes of the signals to play (all when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	knees, err := fleetday.ReadKnees(*kneesPath)
	if err != nil {
		return err
	}
	kinds, err := pick(fleetday.Kinds(), *only)
	if err != nil {
		return err
	}
	cfg := fleetday.DefaultConfig()
	began := time.Now()
	res, err := fleetday.Evaluate(cfg, kinds, fleetday.Training(), fleetday.HeldOut(), knees, *workers)
	if err != nil {
		return err
	}
	printGrid(w, res)
	printTable(w, res)
	printError(w, res)
	fmt.Fprintf(w, "\n(%d signals, %d training and %d held-out days, %v)\n", len(kinds), len(fleetday.Training()), len(fleetday.HeldOut()), time.Since(began).Round(time.Second))
	return nil
}

// pick keeps the kinds whose indexes only lists (all when empty).
func pick(kinds []fleetday.Kind, only string) ([]fleetday.Kind, error) {
	if only == "" {
		return kinds, nil
	}
	var out []fleetday.Kind
	for _, f := range strings.Split(only, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= len(kinds) {
			return nil, fmt.Errorf("-kinds: %q is not an index below %d", f, len(kinds))
		}
		out = append(out, kinds[i])
	}
	return out, nil
}

func printGrid(w io.Writer, res []fleetday.Result) {
	fmt.Fprintln(w, "Grid search on the training days (worst day's attainment / replica-hours of all; * chosen):")
	fmt.Fprintln(w)
	for _, r := range res {
		var cells []string
		for _, g := range r.Grid {
			mark := ""
			if g.Threshold == r.Threshold {
				mark = "*"
			}
			cells = append(cells, fmt.Sprintf("%s%g: %.2f%%/%.0f", mark, g.Threshold, 100*g.MinAttainment, g.ReplicaHours))
		}
		fmt.Fprintf(w, "- %s: %s\n", r.Kind, strings.Join(cells, ", "))
	}
	fmt.Fprintln(w)
}

// agg sums the scores of some days.
type agg struct {
	days, met, breach, pages, peak              int
	worst, attainment, rh, cost, tokens, length float64
}

func (g *agg) add(sc fleetday.Score) {
	if g.days == 0 {
		g.worst = math.Inf(1)
	}
	g.days++
	if sc.Attainment >= fleetday.SLO.Goal {
		g.met++
	}
	g.worst = math.Min(g.worst, sc.Attainment)
	g.attainment += sc.Attainment
	g.breach, g.pages, g.peak = g.breach+sc.BreachMinutes, g.pages+sc.Pages, max(g.peak, sc.PeakReplicas)
	g.rh, g.cost, g.tokens = g.rh+sc.ReplicaHours, g.cost+sc.ReplicaHours*fleetday.PricePerGPUHour, g.tokens+sc.GoodTokens
	g.length += sc.ReplicaHours / sc.MeanReplicas
}

func printTable(w io.Writer, res []fleetday.Result) {
	fmt.Fprintf(w, "Held-out days, each shape on two seeds (SLO: TTFT ≤ 500 ms and TPOT ≤ 50 ms for %.0f%%; $%.2f per GPU-hour; ✗: a day below the goal):\n\n", 100*fleetday.SLO.Goal, fleetday.PricePerGPUHour)
	fmt.Fprintln(w, "| day | signal (threshold) | attainment, each day | minutes in breach | pages | replica-hours per day (mean replicas, peak) | $ per M good tokens |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	if len(res) == 0 {
		return
	}
	var shapes []string
	for _, sc := range res[0].HeldOut {
		if len(shapes) == 0 || shapes[len(shapes)-1] != sc.Day {
			shapes = append(shapes, sc.Day)
		}
	}
	for _, shape := range shapes {
		for _, r := range res {
			var g agg
			var att []string
			for _, sc := range r.HeldOut {
				if sc.Day != shape {
					continue
				}
				g.add(sc)
				mark := ""
				if sc.Attainment < fleetday.SLO.Goal {
					mark = " ✗"
				}
				att = append(att, fmt.Sprintf("%.2f%%%s", 100*sc.Attainment, mark))
			}
			fmt.Fprintf(w, "| %s | %s (%g) | %s | %d | %d | %.1f (%.2f, %d) | %.3f |\n", shape, r.Kind, r.Threshold, strings.Join(att, ", "),
				g.breach, g.pages, g.rh/float64(g.days), g.rh/g.length, g.peak, g.cost/(g.tokens/1e6))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "All held-out days together:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| signal (threshold) | days at goal | worst day | minutes in breach | pages | replica-hours | $ per M good tokens |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range res {
		var g agg
		for _, sc := range r.HeldOut {
			g.add(sc)
		}
		fmt.Fprintf(w, "| %s (%g) | %d of %d | %.2f%% | %d | %d | %.1f | %.3f |\n", r.Kind, r.Threshold, g.met, g.days, 100*g.worst, g.breach, g.pages, g.rh, g.cost/(g.tokens/1e6))
	}
	fmt.Fprintln(w)
}

func printError(w io.Writer, res []fleetday.Result) {
	for _, r := range res {
		e := r.Error
		if e == nil {
			continue
		}
		fmt.Fprintf(w, "%s, its own recommendation ⌈Replicas⌉ against the fleet's true knee: past it at %d of %d ticks (%.1f%%); "+
			"capacity counted above the true knee at %d of %d ticks on a bounded answer (%.1f%%, nominal 5%%) and %d of %d on a lower_only one (%.1f%%); "+
			"the replicas' bounded 90%% intervals held the knee %d times of %d (%.1f%%), lay below it %d times (%.1f%%).\n",
			r.Kind, e.Breached, e.Evaluations, pct(e.Breached, e.Evaluations), e.AboveBounded, e.Bounded, pct(e.AboveBounded, e.Bounded),
			e.AboveLowerOnly, e.LowerOnly, pct(e.AboveLowerOnly, e.LowerOnly), e.Covered, e.Intervals, pct(e.Covered, e.Intervals), e.Below, pct(e.Below, e.Intervals))
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * float64(a) / float64(b)
}
