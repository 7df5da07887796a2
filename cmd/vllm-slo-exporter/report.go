package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/benchreport"
)

// addReportFlags adds the report command's flags to cmd and returns the
// options they fill when the command line is parsed.
func addReportFlags(cmd *kingpin.CmdClause) *benchreport.Options {
	o := &benchreport.Options{}
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
	cmd.Flag("capacity-goal", "Goal of the SLO (every --goodput objective) by which a request-rate sweep's knee and the capacity learned from --recording are compared.").Default("0.99").Float64Var(&o.CapacityGoal)
	cmd.Flag("html", "Write the SLO console's charts of --recording or --url to this file (one self-contained HTML page; the SLO is the --goodput objectives with a 99% goal).").StringVar(&o.HTML)
	return o
}

// runReport is the report command; Ctrl-C ends a live report early.
func runReport(logger *slog.Logger, opts *benchreport.Options) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := benchreport.Run(ctx, *opts, os.Stdout); err != nil {
		return fail(logger, "report", err)
	}
	return 0
}
