package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
)

// Options are the report subcommand's flags.
type Options struct {
	// Bench are `vllm bench serve` result files; several make a sweep.
	Bench []string
	// Recording is a recording of vLLM's /metrics (SPEC §7).
	Recording string
	// URL, Duration and Interval: scrape a live target for Duration.
	URL                string
	Duration, Interval time.Duration
	// Window limits the histogram window (0: all scrapes).
	Window time.Duration
	// Goodput are vLLM --goodput items ("ttft:500", "tpot:50", "e2el:…").
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
	// HTML, when set, is where the console's charts of the recording (or
	// live scrapes) go, as one self-contained HTML file.
	HTML string
}

// Register adds the report flags to a kingpin command and returns the
// Options they fill.
func Register(cmd *kingpin.CmdClause) *Options {
	o := &Options{}
	cmd.Flag("bench", "vllm bench serve result file (saved with --save-result --save-detailed); repeat for a sweep.").StringsVar(&o.Bench)
	cmd.Flag("recording", "Recording of vLLM's /metrics (from the record command).").StringVar(&o.Recording)
	cmd.Flag("url", "Live vLLM /metrics URL to scrape for --duration.").StringVar(&o.URL)
	cmd.Flag("duration", "How long to scrape --url.").Default("1m").DurationVar(&o.Duration)
	cmd.Flag("interval", "Scrape interval for --url.").Default("5s").DurationVar(&o.Interval)
	cmd.Flag("window", "Histogram window ending at the last scrape (0: all of it).").Default("0s").DurationVar(&o.Window)
	cmd.Flag("goodput", "Goodput objective as vLLM's flag, KEY:MS with KEY ttft, tpot or e2el; repeatable.").StringsVar(&o.Goodput)
	cmd.Flag("percentile", "Percentile to report (percent); repeatable. Default 50 90 95 99.").Float64ListVar(&o.Percentiles)
	cmd.Flag("rank", "Percentile rule for per-request data: linear (numpy's, as vLLM) or nearest.").Default("linear").EnumVar(&o.Rank, "linear", "nearest")
	cmd.Flag("gpu-hourly-cost", "GPU cost per hour, for cost per million tokens.").Default("0").Float64Var(&o.GPUHourlyCost)
	cmd.Flag("format", "Output format: text, json or markdown.").Default("text").EnumVar(&o.Format, "text", "json", "markdown")
	cmd.Flag("plot", "Write the sweep's plot (SVG) to this file.").StringVar(&o.Plot)
	cmd.Flag("html", "Write the SLO console's charts of --recording or --url to this file (one self-contained HTML page; the SLO is the --goodput objectives with a 99% goal).").StringVar(&o.HTML)
	return o
}

// Output is everything one report run found; --format json writes it.
type Output struct {
	Sweep       *Sweep        `json:"bench,omitempty"`
	Server      []ServerModel `json:"server,omitempty"`
	Comparisons []Comparison  `json:"comparison,omitempty"`
	Notes       []string      `json:"notes,omitempty"`

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
	objs, err := ParseGoodput(opts.Goodput)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	pcts := opts.Percentiles
	if len(pcts) == 0 {
		pcts = DefaultPercentiles
	}
	for _, p := range pcts {
		if !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("report: percentile %v is not in [0, 100]", p)
		}
	}
	if opts.Rank != "" && opts.Rank != "linear" && opts.Rank != "nearest" {
		return nil, fmt.Errorf("report: rank %q: want linear or nearest", opts.Rank)
	}
	if !(opts.GPUHourlyCost >= 0) {
		return nil, fmt.Errorf("report: gpu hourly cost %v is negative", opts.GPUHourlyCost)
	}
	if len(opts.Bench) == 0 && opts.Recording == "" && opts.URL == "" {
		return nil, errors.New("report: nothing to report: give --bench files, --recording or --url")
	}
	if opts.Plot != "" && len(opts.Bench) == 0 {
		return nil, errors.New("report: --plot needs --bench files")
	}
	if opts.Recording != "" && opts.URL != "" {
		return nil, errors.New("report: --recording and --url exclude each other")
	}
	if opts.HTML != "" && (opts.Recording == "" && opts.URL == "" || len(objs) == 0) {
		return nil, errors.New("report: --html needs --recording or --url, and --goodput objectives for its SLO")
	}
	out := &Output{}
	bopts := BenchOptions{Percentiles: pcts, Nearest: opts.Rank == "nearest", Goodput: objs, GPUHourlyCost: opts.GPUHourlyCost}
	var results []BenchResult
	for _, path := range opts.Bench {
		f, err := ReadBench(path)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		results = append(results, Evaluate(f, bopts))
	}
	if len(results) > 0 {
		s := NewSweep(results)
		out.Sweep = &s
	}
	var entries []recording.Entry
	switch {
	case opts.Recording != "":
		if entries, err = ReadRecording(opts.Recording); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	case opts.URL != "":
		scr, err := FetchScraper(opts.URL, max(opts.Interval, time.Second), time.Now)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if entries, err = Record(ctx, scr, opts.Duration, opts.Interval); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	if entries != nil {
		qs := make([]float64, len(pcts))
		for i, p := range pcts {
			qs[i] = p / 100
		}
		out.scrapes = entries
		out.server = ServerOptions{Window: opts.Window, Quantiles: qs, Goodput: objs, GPUHourlyCost: opts.GPUHourlyCost}
		models, notes, err := EvaluateScrapes(entries, out.server)
		out.Notes = append(out.Notes, notes...)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		out.Server = models
		for _, b := range results {
			for _, s := range pairs(b, models) {
				out.Comparisons = append(out.Comparisons, Compare(b, s))
			}
		}
	}
	return out, nil
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
