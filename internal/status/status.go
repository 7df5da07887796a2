// Package status is the state of one SLO of one model at one evaluation, as
// an on-call reads it on the console: the attainment per window and what it
// rests on, the error budget left and how long it lasts at the current burn,
// and the burn rates of the SLO's own alerts. It reads a pipeline.ModelReport
// and nothing else: every number it gives is one the report already holds
// (and /metrics exports), or plain arithmetic on them documented where it is
// made. It never evaluates a window, never reads a history and calls no
// function of package slo, so that the console and /metrics cannot disagree.
package status

import (
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// FillingCoverage is the coverage below which a window or an error budget is
// still filling: its numbers rest on less than half of their nominal length
// (after a start, a restart's warm-up or a long gap), so an attainment of
// 100% or a budget of −4000% says more about the few minutes seen than
// about the SLO. Renderers mark such numbers; nothing else changes.
const FillingCoverage = 0.5

// Sources of a number in exact mode.
const (
	// SourceTraces marks a number computed from vLLM's trace spans: exact.
	SourceTraces = "traces"
	// SourceHistograms marks a number estimated from the histograms, with
	// bounds.
	SourceHistograms = "histograms"
)

// SLO is the status of one SLO of one model at one evaluation (see the
// package doc); Of builds it.
type SLO struct {
	SLO slo.SLO
	// Windows are the model's windows in configured order.
	Windows []Window
	// Budget is the SLO's error budget over its period; BudgetFilling is
	// true while its coverage is below FillingCoverage.
	Budget        pipeline.Budget
	BudgetFilling bool
	// Burns are the SLO's own burn-rate alerts, in configured order.
	Burns []AlertBurn
	// Current is the burn rate the exhaustion is computed at: that of the
	// long window of the SLO's first alert (the fastest page in the default
	// policy). HasCurrent is false when the SLO has no alert or that window
	// holds no finished request.
	Current    WindowBurn
	HasCurrent bool
	// Exhaustion is how long the budget left lasts if the current burn rate
	// holds: remaining × period / burn, from both estimates. It is set
	// (HasExhaustion) only when the budget is known, positive and the burn
	// rate estimate positive; Exhausted is true when the budget estimate is
	// already spent (≤ 0).
	Exhaustion    time.Duration
	HasExhaustion bool
	Exhausted     bool
	// Source is SourceTraces when exact mode covered every window of the
	// SLO's attainment, SourceHistograms when it covered none or some, and
	// empty when exact mode is off.
	Source string
}

// Window is the joint attainment ("all") of one SLO over one window.
type Window struct {
	Nominal time.Duration
	// Attainment is the joint attainment; Known is false when the window
	// holds no finished request or an objective's histogram is missing
	// (Unknown lists those).
	Attainment slo.Bounded
	Known      bool
	Unknown    []slo.Metric
	// Coverage is the share of the nominal length the window's data spans,
	// as vllm_slo_window_coverage_ratio exports it (slo.WindowReport.Coverage, the one definition);
	// Filling is true while it is below FillingCoverage.
	Coverage    float64
	HasCoverage bool
	Filling     bool
	// Source says where Attainment comes from in exact mode (empty: exact
	// mode off). With SourceTraces, Histogram is what the histograms alone
	// estimated (HasHistogram) and BoundsHeld whether every histogram bound
	// held the exact value.
	Source       string
	Histogram    float64
	HasHistogram bool
	BoundsHeld   bool
}

// AlertBurn is one burn-rate alert of an SLO with the burn rates of its two
// windows.
type AlertBurn struct {
	Check       pipeline.BurnCheck
	Long, Short WindowBurn
}

// WindowBurn is the burn rate of an SLO over one window. Where the window is
// a configured one (Exported), it is the window's own burn rate, the value
// vllm_slo_burn_rate exports, exact in exact mode when the spans covered it;
// otherwise it is the alert evaluation's, from the histograms.
type WindowBurn struct {
	Window   time.Duration
	Burn     slo.Bounded
	Known    bool
	Source   string
	Exported bool
}

// Of is the status of SLO s for model m of one report.
func Of(m pipeline.ModelReport, s slo.SLO) SLO {
	st := SLO{SLO: s}
	for _, w := range m.Windows {
		st.Windows = append(st.Windows, windowOf(m, w, s.Name))
	}
	for _, b := range m.Budgets {
		if b.SLO == s.Name {
			st.Budget = b
			st.BudgetFilling = b.Known && b.Coverage < FillingCoverage
		}
	}
	for _, c := range m.Burns {
		if c.Alert.SLO != s.Name {
			continue
		}
		st.Burns = append(st.Burns, AlertBurn{Check: c,
			Long:  windowBurn(m, s.Name, c.Alert.Long, c.Long, c.Known),
			Short: windowBurn(m, s.Name, c.Alert.Short, c.Short, c.Known)})
	}
	if len(st.Burns) > 0 && st.Burns[0].Long.Known {
		st.Current, st.HasCurrent = st.Burns[0].Long, true
	}
	st.exhaustion()
	st.Source = sourceOf(st.Windows)
	return st
}

// exhaustion sets how long the budget lasts at the current burn rate.
func (st *SLO) exhaustion() {
	b := st.Budget
	if !b.Known {
		return
	}
	if b.Remaining.Estimate <= 0 {
		st.Exhausted = true
		return
	}
	if !st.HasCurrent || !(st.Current.Burn.Estimate > 0) || st.SLO.Period <= 0 {
		return
	}
	st.Exhaustion = time.Duration(b.Remaining.Estimate / st.Current.Burn.Estimate * float64(st.SLO.Period))
	st.HasExhaustion = true
}

func windowOf(m pipeline.ModelReport, w slo.WindowReport, sloName string) Window {
	ws := Window{Nominal: w.Window.Nominal}
	ws.Coverage, ws.HasCoverage = w.Coverage, w.HasCoverage
	ws.Filling = !ws.HasCoverage || ws.Coverage < FillingCoverage
	for _, r := range w.SLOs {
		if r.Name != sloName {
			continue
		}
		ws.Attainment, ws.Known = r.Objectives[slo.AllKey]
		ws.Unknown = r.Unknown
	}
	if len(m.Traces) == 0 {
		return ws
	}
	ws.Source = SourceHistograms
	for _, tr := range m.Traces {
		if tr.Nominal != w.Window.Nominal || !tr.Covered {
			continue
		}
		ws.Source, ws.BoundsHeld = SourceTraces, tr.Calibration.Held()
		for _, e := range tr.Calibration.AttainmentErrors {
			if e.SLO == sloName && e.Objective == slo.AllKey {
				ws.Histogram, ws.HasHistogram = ws.Attainment.Estimate+e.Error, true
			}
		}
	}
	return ws
}

// windowBurn is the burn rate over one of an alert's windows: the window's
// own when it is configured (what /metrics exports), else the alert's.
func windowBurn(m pipeline.ModelReport, sloName string, length time.Duration, alert slo.Bounded, known bool) WindowBurn {
	wb := WindowBurn{Window: length, Burn: alert, Known: known}
	if len(m.Traces) > 0 {
		wb.Source = SourceHistograms
	}
	i := slices.IndexFunc(m.Windows, func(w slo.WindowReport) bool { return w.Window.Nominal == length })
	if i < 0 {
		return wb
	}
	wb.Exported, wb.Known = true, false
	ws := windowOf(m, m.Windows[i], sloName)
	for _, r := range m.Windows[i].SLOs {
		if r.Name == sloName && r.HasBurnRate {
			wb.Burn, wb.Known, wb.Source = r.BurnRate, true, ws.Source
		}
	}
	return wb
}

// sourceOf is SourceTraces when every window with an attainment came
// from the spans.
func sourceOf(ws []Window) string {
	src := ""
	for _, w := range ws {
		if !w.Known || w.Source == "" {
			continue
		}
		if src == "" || w.Source == SourceHistograms {
			src = w.Source
		}
	}
	return src
}
