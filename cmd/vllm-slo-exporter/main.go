// Command vllm-slo-exporter is a sidecar for vLLM: it scrapes vLLM's /metrics
// and serves SLO series (latency quantiles with honest bounds, attainment,
// goodput, Little's-Law concurrency, burn rates, error budget, cost).
//
// This package only wires flags, subcommands and signals to the packages that
// do the work.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// defaultListenAddress is outside 9100-9999, which Prometheus's default port
// allocation list has fully handed out.
const defaultListenAddress = ":10042"

const programName = "vllm-slo-exporter"

func main() {
	fillVersion()
	os.Exit(run(os.Args[1:]))
}

// fillVersion sets the version package's build metadata from the binary's
// build information where the release build's -ldflags did not set it (go
// build, go install, make build): the module version, and the VCS revision,
// time and whether the tree was modified. It runs once, before anything
// reads them (--version and vllm_slo_exporter_build_info).
func fillVersion() {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	info := buildVersion(bi)
	if version.Version == "" {
		version.Version = info.version
	}
	if version.Revision == "" {
		version.Revision = info.revision
	}
	if version.BuildDate == "" {
		version.BuildDate = info.date
	}
}

// builtVersion is what build information says of a binary.
type builtVersion struct{ version, revision, date string }

// buildVersion reads a binary's build information: the main module's
// version ("(devel)" for a build in a work tree) and the VCS settings; a
// revision built from a modified tree ends in "-modified".
func buildVersion(bi *debug.BuildInfo) builtVersion {
	v := builtVersion{version: bi.Main.Version}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.date = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && v.revision != "" {
		v.revision += "-modified"
	}
	return v
}

// run parses the command line and runs the chosen subcommand; it returns the
// process exit code.
func run(args []string) int {
	app := kingpin.New(programName, "SLO, goodput and latency-bound exporter for vLLM.")
	app.Version(version.Print(programName))
	app.HelpFlag.Short('h')
	logCfg := &promslog.Config{}
	promslogflag.AddFlags(app, logCfg)

	runCmd := app.Command("run", "Run the daemon (the default command).").Default()
	runOpts := addRunFlags(runCmd)

	demoCmd := app.Command("demo", "Run the built-in vLLM simulator and the daemon against it, on loopback.")
	var demoWebSet, demoSimSet bool
	demoWeb := demoCmd.Flag("web.listen-address", "Address of the daemon's endpoint (the default moves to a free port when taken).").Default("127.0.0.1:10042").IsSetByUser(&demoWebSet).String()
	demoSim := demoCmd.Flag("simulator.listen-address", "Address of the simulated vLLM (the default moves to a free port when taken).").Default("127.0.0.1:18000").IsSetByUser(&demoSimSet).String()
	var demoOTLPSet bool
	demoOTLP := demoCmd.Flag("otlp.listen-address", "Address where the daemon receives the simulator's spans, OTLP/gRPC (exact mode; the default moves to a free port when taken).").Default("127.0.0.1:14317").IsSetByUser(&demoOTLPSet).String()
	var demoOpts demoOptions
	demoCmd.Flag("config.file", "Configuration to run the demo with (its SLOs, windows and alerting; its targets and otlp are replaced by the simulator). Default: the built-in demo configuration.").StringVar(&demoOpts.configFile)
	demoCmd.Flag("alertmanager.url", "Alertmanager to push the demo's alerts to (base URL, as alerting.alertmanagers[].url).").StringVar(&demoOpts.alertmanagerURL)
	demoCmd.Flag("web.external-url", "URL the console is reached by, for the links in alerts (default: the address it listens on).").StringVar(&demoOpts.externalURL)

	checkCmd := app.Command("check-config", "Validate a configuration file.")
	checkConfig := checkCmd.Flag("config.file", "Configuration file.").Default("config.yaml").String()
	checkProbe := checkCmd.Flag("probe", "Also scrape every target once and say which objectives its histograms make exact, bracketed or unknown.").Bool()
	checkRecording := checkCmd.Flag("recording", "Say the same of the last scrape of each target in this recording.").String()

	rulesCmd := app.Command("rules", "Print Prometheus recording and alerting rules equivalent to the daemon's computation. "+
		"They read vLLM's classic histogram series (_bucket, _count): on Prometheus 3 with convert_classic_histograms_to_nhcb, "+
		"also set always_scrape_classic_histograms: true, or the SLO series are absent and VLLMSLOHistogramsMissing fires.")
	rulesConfig := rulesCmd.Flag("config.file", "Configuration file.").Default("config.yaml").String()
	rulesQueryOffset := rulesCmd.Flag("query-offset", "Write query_offset on every group: rules read this long before each evaluation, "+
		"after the scrapes stamped before it are stored (longer than the scrape timeout; the remote-write delay where data is written in). "+
		"Prometheus 2.53 or later, or Thanos; older Prometheus refuses the file. 0: left out.").Default("0s").Duration()

	recordCmd := app.Command("record", "Save timestamped scrapes of a target as JSON Lines.")
	recordURL := recordCmd.Flag("url", "The target's /metrics URL.").Required().String()
	recordTarget := recordCmd.Flag("target", "Target name written into the recording.").Default("target").String()
	recordDuration := recordCmd.Flag("duration", "How long to record.").Default("5m").Duration()
	recordInterval := recordCmd.Flag("interval", "Time between scrapes.").Default("15s").Duration()
	recordTimeout := recordCmd.Flag("timeout", "Timeout of one scrape.").Default("10s").Duration()
	recordOut := recordCmd.Flag("out", "Output file (gzip if it ends in .gz).").Required().String()

	replayCmd := app.Command("replay", "Run the pipeline over a recording and print the exposition at the last scrape.")
	replayConfig := replayCmd.Flag("config.file", "Configuration file.").Default("config.yaml").String()
	replayRecording := replayCmd.Flag("recording", "Recording file.").Required().String()
	replayStep := replayCmd.Flag("step", "Print the exposition after every scrape.").Bool()

	reportCmd := app.Command("report", "Terminal report from vllm bench serve result files, a recording or a live target.")
	reportOpts := addReportFlags(reportCmd)

	bucketsCmd := app.Command("buckets", "Print bucket edges for vLLM's --custom-histogram-buckets: every SLO threshold on an edge, the rest where a recording's requests are.")
	bucketsOpts := addBucketsFlags(bucketsCmd)

	simCmd := app.Command("simulate", "Serve the built-in vLLM simulator.")
	var simOpts simulateOptions
	simCmd.Flag("web.listen-address", "Address to serve /metrics on (off vLLM's own 8000, so that it runs beside a real vLLM).").Default("127.0.0.1:18000").StringVar(&simOpts.addr)
	simCmd.Flag("truth", "Write the per-request ground truth (JSON Lines) to this file.").StringVar(&simOpts.truthFile)
	simCmd.Flag("seed", "Random seed.").Default("1").Uint64Var(&simOpts.seed)
	simCmd.Flag("otlp.endpoint", "Send one span per finished request to this OTLP receiver (host:port), as vLLM's --otlp-traces-endpoint does: exact mode outside the demo. Empty: no spans.").StringVar(&simOpts.otlpEndpoint)
	simCmd.Flag("otlp.protocol", "OTLP protocol of --otlp.endpoint.").Default(string(sim.SpanGRPC)).EnumVar(&simOpts.otlpProtocol, string(sim.SpanGRPC), string(sim.SpanHTTP))
	simPreset := presetFlag(simCmd)

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", programName, err)
		return 2
	}
	logger := promslog.New(logCfg)
	switch cmd {
	case runCmd.FullCommand():
		return runDaemon(logger, runOpts)
	case demoCmd.FullCommand():
		return runDemo(logger, demoAddress{*demoWeb, !demoWebSet}, demoAddress{*demoSim, !demoSimSet}, demoAddress{*demoOTLP, !demoOTLPSet}, demoOpts)
	case checkCmd.FullCommand():
		return checkConfigFile(os.Stdout, os.Stderr, *checkConfig, *checkProbe, *checkRecording)
	case rulesCmd.FullCommand():
		return printRules(os.Stdout, logger, *rulesConfig, *rulesQueryOffset)
	case recordCmd.FullCommand():
		return runRecord(logger, recordOptions{url: *recordURL, target: *recordTarget, duration: *recordDuration,
			interval: *recordInterval, timeout: *recordTimeout, out: *recordOut})
	case replayCmd.FullCommand():
		return runReplay(os.Stdout, os.Stderr, logger, *replayConfig, *replayRecording, *replayStep)
	case reportCmd.FullCommand():
		return runReport(logger, reportOpts)
	case bucketsCmd.FullCommand():
		return runBuckets(os.Stdout, os.Stderr, bucketsOpts)
	case simCmd.FullCommand():
		simOpts.preset = *simPreset
		return runSimulate(logger, simOpts)
	}
	logger.Error("unknown command", "command", cmd)
	return 2
}

// fail reports a command's error as one plain line on standard error
// ("vllm-slo-exporter: replay: recording r.jsonl holds no scrape"), not as a
// log record with its time, level and source, and returns exit code 1. The
// logger stays the commands' channel for what happens while they run.
func fail(_ *slog.Logger, msg string, err error) int {
	return failTo(os.Stderr, msg, err)
}

// failTo is fail writing to w.
func failTo(w io.Writer, msg string, err error) int {
	fmt.Fprintf(w, "%s: %s: %v\n", programName, msg, err)
	return 1
}
