package benchreport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
)

// Options choose what a report reads and how it computes and writes it:
// the report command's flags, as plain values.
type Options struct {
	// Bench are `vllm bench serve` result files; several make a sweep.
	Bench []string
	// Recording is a recording of vLLM's /metrics (package recording).
	Recording string
	// URL, Duration and Interval: scrape a live target for Duration.
	URL                string
	Duration, Interval time.Duration
	// Window limits the histogram window (0: all scrapes).
	Window time.Duration
	// Goodput are vLLM --goodput items ("ttft:500", "tpot:50", "e2el:…"),
	// in milliseconds; one under 1 ms is used, and warned about
	// (GoodputWarnings).
	Goodput []string
	// Percentiles in percent; empty means DefaultPercentiles.
	Percentiles []float64
	// Rank is "linear" (vLLM's, default) or "nearest".
	Rank string
	// GPUHourlyCost prices the GPUs per hour (0: no cost rows).
	GPUHourlyCost float64
	// Format is "text" (default), "json" or "markdown".
	Format string
	// Plot, when set, is where the sweep's SVG goes.
	Plot string
	// Clock paces and stamps the scrapes of a live target; nil means the
	// wall clock.
	Clock recording.Clock
	// HTML, when set, is where the console's charts of the recording (or
	// live scrapes) go, as one self-contained HTML file.
	HTML string
	// CapacityGoal is the goal of the SLO a request-rate sweep's knee and
	// the recording's online capacity are judged by (0:
	// DefaultCapacityGoal); see Capacity.
	CapacityGoal float64
}

// Output is everything one report run found; --format json writes it.
type Output struct {
	Sweep       *Sweep        `json:"bench,omitempty"`
	Server      []ServerModel `json:"server,omitempty"`
	Comparisons []Comparison  `json:"comparison,omitempty"`
	// Capacity sets a request-rate sweep's knee beside the capacity learned
	// online from the recording, when both are given.
	Capacity *Capacity `json:"capacity,omitempty"`
	Notes    []string  `json:"notes,omitempty"`
	// Warnings are about the options themselves (a goodput threshold that
	// looks like seconds given as milliseconds); they come before the tables.
	Warnings []string `json:"warnings,omitempty"`

	// scrapes and server are what the HTML page is drawn from.
	scrapes []recording.Entry
	server  ServerOptions
}

// Run executes the report: bench files, a recording or a live target (or a
// bench file with a recording, to compare), and writes it to stdout in the
// chosen format, plus the plot when asked.
func Run(ctx context.Context, opts Options, stdout io.Writer) error {
	out, err := Build(ctx, opts)
	if err != nil {
		return err
	}
	if opts.Plot != "" {
		if err := writePlotFile(opts.Plot, *out.Sweep); err != nil {
			return err
		}
	}
	if opts.HTML != "" {
		if err := WriteHTML(opts.HTML, out.scrapes, out.server); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return Write(stdout, out, opts.Format)
}

// Build computes the report without writing it.
func Build(ctx context.Context, opts Options) (*Output, error) {
	objs, pcts, err := checkComputation(opts)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := checkSources(opts, objs); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	out := &Output{Warnings: GoodputWarnings(objs)}
	bopts := BenchOptions{Percentiles: pcts, Nearest: opts.Rank == "nearest", Goodput: objs, GPUHourlyCost: opts.GPUHourlyCost}
	results, err := evaluateBenchFiles(opts.Bench, bopts)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if len(results) > 0 {
		s := NewSweep(results)
		out.Sweep = &s
	}
	entries, err := readScrapes(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if entries != nil {
		sopts := ServerOptions{Window: opts.Window, Quantiles: fractions(pcts), Goodput: objs, GPUHourlyCost: opts.GPUHourlyCost}
		if err := out.addServer(entries, sopts, results); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		out.addCapacity(entries, objs, opts.CapacityGoal)
	}
	return out, nil
}

// addCapacity compares a request-rate sweep with goodput objectives with
// the capacity learned from the recording; nothing without such a sweep,
// and a note when the sweep cannot be used.
func (out *Output) addCapacity(entries []recording.Entry, objs []Objective, goal float64) {
	if out.Sweep == nil || out.Sweep.Load != LoadRate || len(out.Sweep.Points) < 2 || len(objs) == 0 {
		return
	}
	if goal == 0 {
		goal = DefaultCapacityGoal
	}
	c, err := NewCapacity(*out.Sweep, entries, objs, goal)
	if err != nil {
		// A sweep the comparison cannot use (fewer than two finite
		// rates) leaves the rest of the report as it is.
		out.Notes = append(out.Notes, err.Error())
		return
	}
	out.Capacity = c
}

// checkComputation checks the options that say how to compute (goodput
// objectives, percentiles, rank rule, GPU cost) and returns the parsed
// objectives and the percentiles to report (DefaultPercentiles when none).
func checkComputation(opts Options) ([]Objective, []float64, error) {
	objs, err := ParseGoodput(opts.Goodput)
	if err != nil {
		return nil, nil, err
	}
	pcts := opts.Percentiles
	if len(pcts) == 0 {
		pcts = DefaultPercentiles
	}
	for _, p := range pcts {
		if !(p >= 0 && p <= 100) {
			return nil, nil, fmt.Errorf("percentile %v is not in [0, 100]", p)
		}
	}
	if opts.Rank != "" && opts.Rank != "linear" && opts.Rank != "nearest" {
		return nil, nil, fmt.Errorf("rank %q: want linear or nearest", opts.Rank)
	}
	if !(opts.GPUHourlyCost >= 0) {
		return nil, nil, fmt.Errorf("gpu hourly cost %v is negative", opts.GPUHourlyCost)
	}
	return objs, pcts, nil
}

// checkSources checks that the options name something to read, and that
// the outputs asked for have the inputs they are drawn from.
func checkSources(opts Options, objs []Objective) error {
	if len(opts.Bench) == 0 && opts.Recording == "" && opts.URL == "" {
		return errors.New("nothing to report: give --bench files, --recording or --url")
	}
	if opts.Plot != "" && len(opts.Bench) == 0 {
		return errors.New("--plot needs --bench files")
	}
	if opts.Recording != "" && opts.URL != "" {
		return errors.New("--recording and --url exclude each other")
	}
	if opts.HTML != "" && (opts.Recording == "" && opts.URL == "" || len(objs) == 0) {
		return errors.New("--html needs --recording or --url, and --goodput objectives for its SLO")
	}
	return nil
}

// evaluateBenchFiles reads and evaluates each bench file, in order.
func evaluateBenchFiles(paths []string, bopts BenchOptions) ([]BenchResult, error) {
	var results []BenchResult
	for _, path := range paths {
		f, err := ReadBench(path)
		if err != nil {
			return nil, err
		}
		results = append(results, Evaluate(f, bopts))
	}
	return results, nil
}

// readScrapes returns the recording's scrapes, or a live target's, or nil
// when the options name neither.
func readScrapes(ctx context.Context, opts Options) ([]recording.Entry, error) {
	switch {
	case opts.Recording != "":
		return recording.ReadAll(opts.Recording)
	case opts.URL != "":
		return recordLive(ctx, opts)
	}
	return nil, nil
}

// addServer evaluates the scrapes into the server table and its notes, and
// puts each bench result beside the server models it can be compared with.
// The notes are kept even when the evaluation fails.
func (out *Output) addServer(entries []recording.Entry, sopts ServerOptions, results []BenchResult) error {
	out.scrapes = entries
	out.server = sopts
	models, notes, err := EvaluateScrapes(entries, sopts)
	out.Notes = append(out.Notes, notes...)
	if err != nil {
		return err
	}
	out.Server = models
	for _, b := range results {
		for _, s := range pairs(b, models) {
			out.Comparisons = append(out.Comparisons, Compare(b, s))
		}
	}
	return nil
}

// fractions turns percentiles into quantile levels (99 → 0.99).
func fractions(pcts []float64) []float64 {
	qs := make([]float64, len(pcts))
	for i, p := range pcts {
		qs[i] = p / 100
	}
	return qs
}

// liveTarget names the target of a live report in its scrapes.
const liveTarget = "live"

// recordLive scrapes opts.URL on the recording schedule of opts.Duration and
// opts.Interval and returns the scrapes; it stops early, with what it has,
// when ctx ends. When every scrape failed it returns the last failure's
// cause (a refused port, an HTTP status) instead of scrapes nothing can use.
func recordLive(ctx context.Context, opts Options) ([]recording.Entry, error) {
	sched := recording.Schedule{Duration: opts.Duration, Interval: opts.Interval}
	if err := sched.Validate(); err != nil {
		return nil, err
	}
	scr, err := recording.HTTPScraper(liveTarget, opts.URL, max(opts.Interval, time.Second))
	if err != nil {
		return nil, err
	}
	clock := opts.Clock
	if clock == nil {
		clock = recording.WallClock{}
	}
	var entries []recording.Entry
	var outcome recording.Outcome
	_, err = recording.Record(ctx, scr, sched, clock, func(e recording.Entry) error {
		entries = append(entries, e)
		outcome.Add(e)
		return nil
	})
	if err != nil {
		return entries, err
	}
	if err := outcome.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", opts.URL, err)
	}
	return entries, nil
}

// Write renders the output as text, markdown or JSON.
func Write(w io.Writer, out *Output, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("report: encode json: %w", err)
		}
		return nil
	}
	if err := writeWarnings(w, out.Warnings, format); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	var tables []Table
	var objs []Objective
	if out.Sweep != nil {
		tables = append(tables, BenchTable(*out.Sweep))
		if len(out.Sweep.Points) > 0 && out.Sweep.Points[0].Goodput != nil {
			objs = out.Sweep.Points[0].Goodput.Objectives
		}
	}
	if out.Server != nil {
		for _, m := range out.Server {
			if m.Goodput != nil && objs == nil {
				objs = m.Goodput.Objectives
			}
		}
		st := ServerTable(out.Server, objs)
		st.Notes = append(st.Notes, out.Notes...)
		tables = append(tables, st)
	}
	if len(out.Comparisons) > 0 {
		tables = append(tables, CompareTable(out.Comparisons))
	}
	if out.Capacity != nil {
		tables = append(tables, CapacityTable(*out.Capacity))
	}
	for _, t := range tables {
		var err error
		if format == "markdown" {
			err = t.writeMarkdown(w)
		} else {
			err = t.writeText(w)
		}
		if err != nil {
			return fmt.Errorf("report: write: %w", err)
		}
	}
	return nil
}

// writeWarnings writes each warning on a line of its own, in bold in
// markdown, followed by a blank line; nothing when there are none.
func writeWarnings(w io.Writer, warnings []string, format string) error {
	if len(warnings) == 0 {
		return nil
	}
	var b strings.Builder
	for _, s := range warnings {
		if format == "markdown" {
			b.WriteString("**warning:** " + mdEscape(s) + "\n\n")
		} else {
			b.WriteString("warning: " + s + "\n")
		}
	}
	if format != "markdown" {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePlotFile writes the sweep's SVG to path.
func writePlotFile(path string, s Sweep) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: plot: %w", err)
	}
	if err := WritePlot(f, s); err != nil {
		f.Close()
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	return nil
}
