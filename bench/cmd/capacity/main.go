// Command capacity measures the capacity estimate against the simulator's
// truth and prints the tables of BENCHMARKS.md:
//
//	go run ./bench/cmd/capacity knees  [-out test/capacitydays/testdata/knees.json]
//	go run ./bench/cmd/capacity table  [-knees F] [-seeds 5] [-seed-from 1] [-hours 6] [-transient 0.04] [-shape-from 0.7] [-floor=true] [-strata 0.7,1]
//	go run ./bench/cmd/capacity converge [-knees F] [-seeds 5] [-hours 8]
//	go run ./bench/cmd/capacity mixunit [-knees F] [-seeds 10] [-hours 6] [-weights 1:0,1:1,1:5] [-span 20m] [-days 'mix shift|diurnal, peak 110%']
//	go run ./bench/cmd/capacity cost [-targets 1,100] [-hours 24] [-workload steady|knee] [-refit 30m,0] [-shape-from 0.7,0] [-runs 1]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/capacitydays"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: capacity knees|table|converge|cost|mixunit [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "knees":
		err = runKnees(args)
	case "table":
		err = runTable(args)
	case "converge":
		err = runConverge(args)
	case "cost":
		err = runCost(args)
	case "mixunit":
		err = runMixUnit(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "capacity %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

const defaultKnees = "test/capacitydays/testdata/knees.json"

func runKnees(args []string) error {
	fs := flag.NewFlagSet("knees", flag.ContinueOnError)
	out := fs.String("out", defaultKnees, "where to write the knees")
	if err := fs.Parse(args); err != nil {
		return err
	}
	k, sweeps, err := days.SweepAll(days.KneeSeeds)
	if err != nil {
		return err
	}
	for _, s := range days.ServersUsed {
		sw := sweeps[s.Name]
		fmt.Printf("%-28s knee %.3f req/s;", s.Name, k[s.Name])
		for i, r := range sw.Rates {
			fmt.Printf(" %.2f:%.4f", r, sw.Attainment[i])
		}
		fmt.Println()
	}
	return days.WriteKnees(*out, k)
}

func runTable(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	path := fs.String("knees", defaultKnees, "true knees (from the knees command)")
	seeds := fs.Int("seeds", 5, "seeds per day")
	seedFrom := fs.Int("seed-from", 1, "the first seed (seeds run from it on: a range held out from the one the method was developed on)")
	hours := fs.Float64("hours", 6, "simulated hours per day")
	transient := fs.Float64("transient", capacity.DefaultConfig(0).Transient, "the interval's transient margin (capacity.Config.Transient)")
	shapeFrom := fs.Float64("shape-from", capacity.DefaultConfig(0).ShapeFrom, "where the Gumbel shape's fit starts, relative to the isotonic knee; 0 turns it off (capacity.Config.ShapeFrom)")
	floor := fs.Bool("floor", capacity.DefaultConfig(0).ShapeFloor, "fit the Gumbel shape with the floor of misses below shape-from of the knee too (capacity.Config.ShapeFloor)")
	strataFlag := fs.String("strata", joinFloats(capacity.DefaultConfig(0).Strata), "comma-separated load cuts, relative to the knee, of the bootstrap's strata; empty resamples the whole day (capacity.Config.Strata)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	strata, err := parseFloats(*strataFlag)
	if err != nil {
		return fmt.Errorf("strata: %w", err)
	}
	k, err := days.ReadKnees(*path)
	if err != nil {
		return err
	}
	var scores []days.Score
	for _, d := range days.Suite(k, time.Duration(*hours*float64(time.Hour))) {
		for s := *seedFrom; s < *seedFrom+*seeds; s++ {
			cfg := capacity.DefaultConfig(days.SLO.Goal)
			cfg.Transient, cfg.ShapeFrom, cfg.ShapeFloor, cfg.Strata = *transient, *shapeFrom, *floor, strata
			r, err := days.Run(d, uint64(s), cfg)
			if err != nil {
				return err
			}
			scores = append(scores, days.ScoreOf(r, k))
		}
	}
	days.Table(os.Stdout, scores)
	fmt.Println()
	days.Errors(os.Stdout, scores)
	inside, oneSidedAbove, gumbel := 0, 0, 0
	for _, s := range scores {
		if s.Inside {
			inside++
		}
		if s.Method == string(capacity.Gumbel) {
			gumbel++
		}
		if s.Kind == "lower_only" && s.Lower > s.Knee {
			oneSidedAbove++
		}
	}
	fmt.Printf("\ninside: %d of %d (%.0f%%); one-sided answers above the knee: %d; intervals placed by the Gumbel shape: %d\n", inside, len(scores), 100*float64(inside)/float64(len(scores)), oneSidedAbove, gumbel)
	return nil
}

func runConverge(args []string) error {
	fs := flag.NewFlagSet("converge", flag.ContinueOnError)
	path := fs.String("knees", defaultKnees, "true knees (from the knees command)")
	seeds := fs.Int("seeds", 5, "seeds")
	hours := fs.Int("hours", 8, "simulated hours of the day")
	if err := fs.Parse(args); err != nil {
		return err
	}
	k, err := days.ReadKnees(*path)
	if err != nil {
		return err
	}
	d := days.Suite(k, time.Duration(*hours)*time.Hour)[0]
	knee := d.Knee(k)
	type acc struct{ err, width, n, inside, bounded, lower float64 }
	per := make([]acc, *hours)
	for s := 1; s <= *seeds; s++ {
		r, err := days.Run(d, uint64(s), capacity.DefaultConfig(days.SLO.Goal))
		if err != nil {
			return err
		}
		for h, e := range r.Hourly {
			a := &per[h]
			a.n++
			if e.Requests.Lower <= knee && knee <= e.Requests.Upper {
				a.inside++
			}
			a.lower += e.Requests.Lower / knee
			if e.Kind == capacity.Bounded {
				a.bounded++
				a.err += math.Abs(e.Requests.Estimate-knee) / knee
				a.width += (e.Requests.Upper - e.Requests.Lower) / knee
			}
		}
	}
	fmt.Printf("diurnal day of %d h (peak 110%% of the knee at hour %d), %d seeds, knee %.2f req/s\n\n", *hours, *hours/2, *seeds, knee)
	fmt.Println("| hours of history | bounded | inside | mean error | mean width | mean lower end / knee |")
	fmt.Println("|---|---|---|---|---|---|")
	for h, a := range per {
		e, w := "–", "–"
		if a.bounded > 0 {
			e, w = fmt.Sprintf("%.1f%%", 100*a.err/a.bounded), fmt.Sprintf("%.1f%%", 100*a.width/a.bounded)
		}
		fmt.Printf("| %d | %.0f/%.0f | %.0f/%.0f | %s | %s | %.2f |\n", h+1, a.bounded, a.n, a.inside, a.n, e, w, a.lower/a.n)
	}
	return nil
}

// joinFloats writes xs comma-separated, as parseFloats reads them.
func joinFloats(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(out, ",")
}

// parseFloats reads comma-separated numbers; the empty string is none.
func parseFloats(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}
