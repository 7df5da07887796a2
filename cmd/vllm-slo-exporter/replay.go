package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/replay"
)

// runReplay drives the daemon's pipeline with a recording's scrapes and their
// recorded times, then prints our exposition as it was at the last scrape.
// It evaluates as the daemon does, every evaluation interval from the first
// scrape (so that alerts go from pending to firing after their for), and
// once more at the last scrape; with step, after every scrape as well, and
// prints each of those.
func runReplay(out, stderr io.Writer, logger *slog.Logger, configFile, recordingFile string, step bool) int {
	fail := func(_ *slog.Logger, msg string, err error) int { return failTo(stderr, msg, err) }
	cfg, err := config.Load(configFile)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	// The capacity learners are fed and refitted as the daemon's are: fed
	// the intervals each ingest closes, refitted into every report, their
	// headroom tickets among its alerts (online.Stage).
	learners := online.New(nil)
	spec := daemon.PipelineSpec(cfg)
	spec.Intervals = learners
	p := pipeline.New(spec)
	p.AddAmender(online.Stage{Learners: learners, Policy: func() online.HeadroomPolicy {
		return online.HeadroomPolicy{Margin: cfg.Capacity.HeadroomMargin, Hold: time.Duration(cfg.Capacity.HeadroomFor)}
	}})
	evaluate := p.Evaluate
	var lastTime time.Time
	scrapes := 0
	var use replay.Use
	ticks := evaluationTicks{interval: time.Duration(cfg.Global.EvaluationInterval)}
	replayOne := func(e recording.Entry) error {
		for _, at := range ticks.before(e.Time) {
			evaluate(at)
		}
		// Entries of a target the configuration does not name are counted
		// and named once at the end, not warned about one by one.
		if err := replay.Ingest(p, e); use.Add(e.Target, err) && err != nil {
			logger.Warn("recorded scrape not used", "target", e.Target, "time", e.Time, "err", err)
		}
		scrapes++
		lastTime = e.Time
		if !step {
			return nil
		}
		fmt.Fprintf(out, "# scrape of %s at %s\n", e.Target, e.Time.Format(time.RFC3339Nano))
		if err := writeExposition(out, evaluate(e.Time)); err != nil {
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
		if err := writeExposition(out, evaluate(lastTime)); err != nil {
			return fail(logger, "render exposition", err)
		}
	}
	return 0
}

// evaluationTicks are the daemon's evaluation times over a recording: every
// interval from the first scrape.
type evaluationTicks struct {
	interval time.Duration
	next     time.Time
}

// before returns the ticks not yet returned that fall before a scrape at
// t, when the daemon would have evaluated without that scrape; the first
// scrape starts the clock. A scrape earlier than the last tick (a recording
// out of order) yields none.
func (e *evaluationTicks) before(t time.Time) []time.Time {
	if e.interval <= 0 {
		return nil
	}
	if e.next.IsZero() {
		e.next = t.Add(e.interval)
		return nil
	}
	var out []time.Time
	for e.next.Before(t) {
		out = append(out, e.next)
		e.next = e.next.Add(e.interval)
	}
	return out
}

// writeExposition renders a report, its capacity estimates included, as
// Prometheus text through the collector the daemon serves.
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
