package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Range is a histogram number with the bounds the truth cannot leave.
type Range struct {
	Estimate Num `json:"estimate"`
	Lower    Num `json:"lower"`
	Upper    Num `json:"upper"`
}

func rangeOf(b slo.Bounded) Range {
	return Range{Estimate: Num(b.Estimate), Lower: Num(b.Lower), Upper: Num(b.Upper)}
}

// ServerQuantile is one quantile of one server metric.
type ServerQuantile struct {
	Q float64 `json:"q"`
	Range
	// Prometheus is what histogram_quantile would say.
	Prometheus Num `json:"prometheus"`
}

// ServerModel is the table for one model of one target, from histograms.
type ServerModel struct {
	Target string `json:"target"`
	Model  string `json:"model"`
	// Start, End and Seconds are the scrapes bounding the window.
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Requests are the observations per metric in the window.
	Requests map[slo.Metric]float64 `json:"requests"`
	// Quantiles per metric (ttft, tpot, itl, e2e, queue, …).
	Quantiles map[slo.Metric][]ServerQuantile `json:"quantiles"`
	// Rates from the counters, exact; Has* false when absent.
	OutputThroughput  float64 `json:"output_throughput"`
	PromptThroughput  float64 `json:"prompt_throughput"`
	HasThroughput     bool    `json:"has_throughput"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	HasRequestRate    bool    `json:"has_request_rate"`
	// Goodput under the objectives, with bounds; nil without objectives or
	// without a finished request.
	Goodput *ServerGoodput `json:"goodput,omitempty"`
	// Concurrency per stage: Little's predicted and the gauges' observed.
	Concurrency map[slo.Stage]slo.Concurrency `json:"concurrency"`
	// Cost per million output tokens; nil without a GPU hourly cost.
	Cost *ServerCost `json:"cost,omitempty"`
}

// ServerGoodput is goodput from histograms: bounded, since "met TTFT and
// TPOT" is not in separate histograms.
type ServerGoodput struct {
	Objectives        []Objective      `json:"objectives"`
	Attainment        map[string]Range `json:"attainment"`
	RequestsPerSecond Range            `json:"requests_per_second"`
	TokensPerSecond   Range            `json:"tokens_per_second"`
	HasTokens         bool             `json:"has_tokens"`
}

// ServerCost is the cost per million output tokens from histograms.
type ServerCost struct {
	ThroughputBasis Num   `json:"throughput_basis"`
	GoodputBasis    Range `json:"goodput_basis"`
	HasGoodput      bool  `json:"has_goodput"`
}

// ServerOptions chooses how scrapes are evaluated.
type ServerOptions struct {
	// Window is the window length; 0 covers the whole recording.
	Window time.Duration
	// Quantiles are fractions (0.99).
	Quantiles []float64
	// Goodput objectives and the GPU cost per hour (0: none).
	Goodput       []Objective
	GPUHourlyCost float64
	// Profile maps metric names; the zero value means scrape.VLLM.
	Profile scrape.Profile
}

// EvaluateScrapes runs recorded scrapes through the daemon's pipeline, as
// replay does, with one window ending at the last scrape and covering all
// of them (or opts.Window), and returns one table per target and model.
// Scrapes that cannot be used are skipped; their errors are returned as
// notes.
func EvaluateScrapes(entries []recording.Entry, opts ServerOptions) ([]ServerModel, []string, error) {
	if len(entries) == 0 {
		return nil, nil, errors.New("no scrape to evaluate")
	}
	profile := opts.Profile
	if profile.Name == "" {
		profile = scrape.VLLM
	}
	first, last := entries[0].Time, entries[0].Time
	var names []string
	for _, e := range entries {
		if e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
		if !slices.Contains(names, e.Target) {
			names = append(names, e.Target)
		}
	}
	window := opts.Window
	if window <= 0 {
		window = last.Sub(first)
	}
	if window <= 0 {
		return nil, nil, fmt.Errorf("the scrapes span %s: need at least two scrapes at different times", last.Sub(first))
	}
	spec := pipeline.Spec{SLOs: SLOOf(opts.Goodput), Windows: []time.Duration{window},
		Quantiles: opts.Quantiles, Retention: history.NewRetention(window, window)}
	for _, n := range names {
		spec.Targets = append(spec.Targets, pipeline.TargetSpec{Name: n, Profile: profile, HourlyCost: opts.GPUHourlyCost})
	}
	p := pipeline.New(spec)
	var notes []string
	for _, e := range entries {
		if err := p.IngestRecorded(e); err != nil {
			notes = append(notes, fmt.Sprintf("scrape of %s at %s not used: %v", e.Target, e.Time.Format(time.RFC3339Nano), err))
		}
	}
	rep := p.Evaluate(last)
	var out []ServerModel
	for _, t := range rep.Targets {
		if len(t.Missing) > 0 {
			notes = append(notes, fmt.Sprintf("target %s: families missing from the last scrape: %v", t.Name, t.Missing))
		}
		for _, m := range t.Models {
			for _, w := range m.Windows {
				out = append(out, serverModel(t.Name, m.Name, w, opts))
			}
		}
	}
	if len(out) == 0 {
		return nil, notes, errors.New("no model has two usable scrapes in the window")
	}
	return out, notes, nil
}

// serverModel converts one window report into a table.
func serverModel(target, model string, w slo.WindowReport, opts ServerOptions) ServerModel {
	sm := ServerModel{Target: target, Model: model, Start: w.Window.Start, End: w.Window.End,
		Seconds: w.Window.Seconds(), Requests: w.Requests, Quantiles: map[slo.Metric][]ServerQuantile{},
		OutputThroughput: w.GenerationTokensPerSecond, PromptThroughput: w.PromptTokensPerSecond,
		HasThroughput: w.HasThroughput, RequestsPerSecond: w.RequestsPerSecond, HasRequestRate: w.HasRequestRate,
		Concurrency: w.Concurrency}
	for m, qs := range w.Quantiles {
		for _, q := range qs {
			sm.Quantiles[m] = append(sm.Quantiles[m], ServerQuantile{Q: q.Q, Range: rangeOf(q.Bounded), Prometheus: Num(q.Prometheus)})
		}
	}
	if len(w.SLOs) > 0 {
		s := w.SLOs[0]
		g := &ServerGoodput{Objectives: opts.Goodput, Attainment: map[string]Range{}, RequestsPerSecond: rangeOf(s.GoodputRequestsPerSecond),
			TokensPerSecond: rangeOf(s.GoodputTokensPerSecond), HasTokens: s.HasGoodputTokens}
		for k, v := range s.Objectives {
			g.Attainment[k] = rangeOf(v)
		}
		sm.Goodput = g
	}
	if opts.GPUHourlyCost > 0 && w.HasThroughput {
		c := &ServerCost{ThroughputBasis: Num(math.Inf(1))}
		if v, ok := slo.CostPerMillion(opts.GPUHourlyCost, slo.Exact(w.GenerationTokensPerSecond)); ok {
			c.ThroughputBasis = Num(v.Estimate)
		}
		if sm.Goodput != nil && sm.Goodput.HasTokens {
			c.HasGoodput = true
			c.GoodputBasis = Range{Num(math.Inf(1)), Num(math.Inf(1)), Num(math.Inf(1))}
			if v, ok := slo.CostPerMillion(opts.GPUHourlyCost, w.SLOs[0].GoodputTokensPerSecond); ok {
				c.GoodputBasis = rangeOf(v)
			}
		}
		sm.Cost = c
	}
	return sm
}

// ReadRecording reads every scrape of a recording file (see SPEC §7).
func ReadRecording(path string) ([]recording.Entry, error) {
	r, err := recording.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	defer r.Close()
	var out []recording.Entry
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", path, err)
		}
		out = append(out, e)
	}
}

// Scraper scrapes one target now; Record uses it so tests can stand in.
type Scraper func(ctx context.Context) (recording.Entry, error)

// liveBodyLimit bounds one live scrape, as the daemon's default does.
const liveBodyLimit = 10 << 20

// FetchScraper scrapes url over HTTP with the daemon's fetcher.
func FetchScraper(url string, timeout time.Duration, now func() time.Time) (Scraper, error) {
	f, err := scrape.NewFetcher("live", url, config.DefaultHTTPClientConfig, timeout, liveBodyLimit)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (recording.Entry, error) {
		resp, err := f.Fetch(ctx)
		e := recording.Entry{Time: now(), Target: "live"}
		if err != nil {
			e.Error = err.Error()
			return e, nil
		}
		e.Status, e.ContentType, e.Body = resp.Status, resp.ContentType, string(resp.Body)
		return e, nil
	}, nil
}

// Record scrapes every interval for duration (a first scrape at once and a
// last one at the end), returning the scrapes in memory, as `record` would
// write them. It stops early, with what it has, when ctx ends.
func Record(ctx context.Context, s Scraper, duration, interval time.Duration) ([]recording.Entry, error) {
	if duration <= 0 || interval <= 0 {
		return nil, fmt.Errorf("live report: duration %s and interval %s must be positive", duration, interval)
	}
	var out []recording.Entry
	deadline := time.Now().Add(duration)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		e, err := s(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, e)
		left := time.Until(deadline)
		if left <= 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-tick.C:
		case <-time.After(left):
		}
	}
}
