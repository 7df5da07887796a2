package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
)

// runReplay drives the daemon's pipeline with a recording's scrapes and their
// recorded times, then prints our exposition as it was at the last scrape.
func runReplay(out io.Writer, logger *slog.Logger, configFile, recordingFile string, step bool) int {
	cfg, err := config.Load(configFile)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	p := pipeline.New(daemon.PipelineSpec(cfg))
	var lastTime time.Time
	scrapes := 0
	var use pipeline.RecordedUse
	replayOne := func(e recording.Entry) error {
		// Entries of a target the configuration does not name are counted
		// and named once at the end, not warned about one by one.
		if err := p.IngestRecorded(e); use.Add(e.Target, err) && err != nil {
			logger.Warn("recorded scrape not used", "target", e.Target, "time", e.Time, "err", err)
		}
		scrapes++
		lastTime = e.Time
		if !step {
			return nil
		}
		fmt.Fprintf(out, "# scrape of %s at %s\n", e.Target, e.Time.Format(time.RFC3339Nano))
		if err := writeExposition(out, p.Evaluate(e.Time)); err != nil {
			return fmt.Errorf("render exposition: %w", err)
		}
		return nil
	}
	skip := func(err error) { logger.Warn("recording line skipped", "err", err) }
	if err := recording.Scan(recordingFile, replayOne, skip); err != nil {
		return fail(logger, "replay", err)
	}
	if scrapes == 0 {
		return fail(logger, "replay", fmt.Errorf("recording %s holds no scrape", recordingFile))
	}
	names := make([]string, len(cfg.Targets))
	for i, t := range cfg.Targets {
		names[i] = t.Name
	}
	if err := use.Err(names); err != nil {
		return fail(logger, "replay", fmt.Errorf("recording %s: %w", recordingFile, err))
	}
	if !step {
		if err := writeExposition(out, p.Evaluate(lastTime)); err != nil {
			return fail(logger, "render exposition", err)
		}
	}
	return 0
}

// writeExposition renders a report as Prometheus text through the same
// collector the daemon serves.
func writeExposition(out io.Writer, rep *pipeline.Report) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(exporter.NewCollector(func() *pipeline.Report { return rep })); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
