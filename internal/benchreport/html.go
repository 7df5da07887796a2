package benchreport

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/console"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/replay"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// HTMLGoal is the goal of the SLO the HTML report draws: the --goodput
// objectives met by 99% of requests. Burn rates and the error budget are
// relative to it.
const HTMLGoal = 0.99

// htmlWindows are the rolling windows the HTML report may draw, the daemon's
// defaults; those longer than half the recording are left out.
var htmlWindows = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}

// htmlPageFactor is the burn-rate threshold of the one alert pair drawn, the
// SRE workbook's page (2% of a 30-day budget in an hour).
const htmlPageFactor = 14.4

// htmlSpec is the pipeline configuration of the HTML report for scrapes
// spanning span: the goodput objectives as one SLO whose period is the whole
// recording, the default windows that fit, and one alert pair, the longest
// window against the shortest.
func htmlSpec(targets []string, span time.Duration, opts ServerOptions) (pipeline.Spec, error) {
	slos := SLOOf(opts.Goodput)
	if len(slos) == 0 {
		return pipeline.Spec{}, errors.New("--html needs --goodput objectives: they make the SLO it draws")
	}
	slos[0].Goal, slos[0].Period = HTMLGoal, span
	var windows []time.Duration
	for _, w := range htmlWindows {
		if w <= span/2 {
			windows = append(windows, w)
		}
	}
	if len(windows) == 0 {
		windows = []time.Duration{max(span/4, time.Second)}
	}
	profile := opts.Profile
	if profile.Name == "" {
		profile = scrape.VLLM
	}
	spec := pipeline.Spec{SLOs: slos, Windows: windows, Quantiles: opts.Quantiles,
		Retention: history.NewRetention(slices.Max(windows), span),
		Alerts: []pipeline.BurnAlert{{SLO: slos[0].Name, Severity: "page", Long: slices.Max(windows),
			Short: slices.Min(windows), Factor: htmlPageFactor}}}
	for _, n := range targets {
		spec.Targets = append(spec.Targets, pipeline.TargetSpec{Name: n, Profile: profile, HourlyCost: opts.GPUHourlyCost})
	}
	return spec, nil
}

// WriteHTML runs the recorded scrapes through the daemon's pipeline and
// writes the console's charts over the whole recording to path as one
// self-contained HTML file.
func WriteHTML(path string, entries []recording.Entry, opts ServerOptions) error {
	if len(entries) == 0 {
		return errors.New("html: no scrape to draw")
	}
	first, last := entries[0].Time, entries[0].Time
	var targets []string
	for _, e := range entries {
		first, last = minTime(first, e.Time), maxTime(last, e.Time)
		if !slices.Contains(targets, e.Target) {
			targets = append(targets, e.Target)
		}
	}
	if !last.After(first) {
		return errors.New("html: need at least two scrapes at different times")
	}
	spec, err := htmlSpec(targets, last.Sub(first), opts)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	p := pipeline.New(spec)
	for _, e := range entries {
		_ = replay.Ingest(p, e) // unusable scrapes are already listed in the report's notes
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := console.WriteStatic(f, p, p.Evaluate(last), console.DefaultPoints); err != nil {
		f.Close()
		return fmt.Errorf("html %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("html %s: %w", path, err)
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
