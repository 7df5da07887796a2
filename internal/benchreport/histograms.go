package benchreport

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/replay"
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
		if err := replay.Ingest(p, e); err != nil {
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

// prometheusQuantile is what histogram_quantile says of h at q, for the
// table's comparison with our estimate; +Inf where it says nothing (a
// histogram with only the +Inf bucket). It is computed here, where it is
// read, rather than at every evaluation of the daemon, which never reads it.
func prometheusQuantile(q float64, h slo.Histogram) float64 {
	if p := slo.PrometheusQuantile(q, h); !math.IsNaN(p) {
		return p
	}
	return math.Inf(1)
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
			sm.Quantiles[m] = append(sm.Quantiles[m], ServerQuantile{Q: q.Q, Range: rangeOf(q.Bounded), Prometheus: Num(prometheusQuantile(q.Q, w.Window.Latency[m]))})
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

// isExact reports whether a range is a single number.
func (r Range) isExact() bool {
	return r.Lower == r.Upper || (math.IsNaN(float64(r.Lower)) && math.IsNaN(float64(r.Upper)))
}
