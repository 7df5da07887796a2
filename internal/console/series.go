package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// History is what the detail views need of the daemon's history: the
// configuration, how far a target's scrapes reach, and one model evaluated
// at a past time. *pipeline.Pipeline implements it.
type History interface {
	Spec() pipeline.Spec
	Span(target string) (oldest, newest time.Time, err error)
	EvaluateModelAt(target, model string, end time.Time, windows ...time.Duration) (pipeline.ModelReport, error)
}

// Value is a number in the chart data: NaN and infinities, which JSON cannot
// carry and a chart cannot draw, are written as null (a gap, or for an upper
// bound, a band open upwards).
type Value float64

// MarshalJSON writes the number in Go's shortest form, or null.
func (v Value) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, and null as NaN.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Value(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("chart value %q: %w", b, err)
	}
	*v = Value(f)
	return nil
}

// Band is an estimate over time with the bounds the truth cannot leave, one
// value per point of Series.Times. A missing point is null in all three; an
// upper bound of +Inf (a quantile in vLLM's +Inf bucket) is null alone.
type Band struct {
	Estimate []Value `json:"estimate"`
	Lower    []Value `json:"lower"`
	Upper    []Value `json:"upper"`
}

func newBand(n int) Band {
	return Band{Estimate: gaps(n), Lower: gaps(n), Upper: gaps(n)}
}

func (b Band) set(i int, v slo.Bounded) {
	b.Estimate[i], b.Lower[i], b.Upper[i] = Value(v.Estimate), Value(v.Lower), Value(v.Upper)
}

// gaps returns n missing values.
func gaps(n int) []Value {
	out := make([]Value, n)
	for i := range out {
		out[i] = Value(math.NaN())
	}
	return out
}

// Series is everything the detail view of one SLO of one model draws, over a
// range of past windows. It is the JSON of the data endpoint.
type Series struct {
	Target string  `json:"target"`
	Model  string  `json:"model"`
	SLO    SLOInfo `json:"slo"`
	// Range is the requested range ("1h", "period", "all"); From and To the
	// unix seconds it covers, clipped to the history.
	Range string  `json:"range"`
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	// Window is the rolling window of the time charts; Windows those configured.
	Window  string   `json:"window"`
	Windows []string `json:"windows"`
	// Times are the unix seconds of the scrapes the windows end at.
	Times []float64 `json:"times"`
	// Budget is the error budget remaining over the SLO period (ratio);
	// Covered the share of the period the history held at each point.
	Budget  Band    `json:"budget"`
	Covered []Value `json:"covered"`
	// Burns are the burn rates of each alert's window pair.
	Burns []BurnSeries `json:"burns"`
	// Attainment per objective and "all" over Window.
	Attainment []NamedBand `json:"attainment"`
	// Latency quantiles over Window, per metric.
	Latency []LatencySeries `json:"latency"`
	// Goodput against the throughput of the same finished requests over
	// Window (generated tokens per second, from the per-request tokens
	// histogram, so both count the requests that finished in the window).
	Goodput    Band    `json:"goodput"`
	Throughput []Value `json:"throughput"`
	// Abandoned bounds the requests that got a first token and left without
	// a finish over Window; Aborted is what the engine itself counted as
	// aborted there (null where the target lacks that counter), drawn beside
	// it as an observation, never as a bound of it.
	Abandoned Band    `json:"abandoned"`
	Aborted   []Value `json:"aborted"`
	// Concurrency is Little's Law per stage over Window.
	Concurrency []StageSeries `json:"concurrency"`
	// Histograms of the newest window, one per latency metric drawn.
	Histograms []HistogramView `json:"histograms"`
}

// SLOInfo describes the SLO drawn.
type SLOInfo struct {
	Name          string          `json:"name"`
	Goal          float64         `json:"goal"`
	PeriodSeconds float64         `json:"period_seconds"`
	Objectives    []ObjectiveInfo `json:"objectives"`
}

// ObjectiveInfo is one objective: metric <= threshold seconds.
type ObjectiveInfo struct {
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
}

// BurnSeries is one alert's two burn rates against its threshold.
type BurnSeries struct {
	Severity string  `json:"severity"`
	Long     string  `json:"long"`
	Short    string  `json:"short"`
	Factor   float64 `json:"factor"`
	LongBurn Band    `json:"long_burn"`
	// ShortBurn is the short window's burn rate.
	ShortBurn Band `json:"short_burn"`
}

// NamedBand is a band with a name (an objective, "all").
type NamedBand struct {
	Name string `json:"name"`
	Band
}

// LatencySeries is one quantile of one metric over time, in seconds.
type LatencySeries struct {
	Metric   string  `json:"metric"`
	Quantile float64 `json:"quantile"`
	Band
}

// StageSeries is Little's Law for one stage: λ·W predicted from the finished
// requests and the concurrency vLLM's gauges observed.
type StageSeries struct {
	Stage     string  `json:"stage"`
	Predicted []Value `json:"predicted"`
	Observed  []Value `json:"observed"`
}

// query is one request for a Series.
type query struct {
	Target, Model, SLO string
	// Range is "all", "period" or a duration ("1h", "1d").
	Range string
	// Window is a configured window ("5m"); empty picks one for the range.
	Window string
	// Points is how many windows are evaluated across the range.
	Points int
}

// DefaultPoints is how many windows a range is drawn with: enough for a
// smooth line on a wide screen, few enough to evaluate in milliseconds.
const DefaultPoints = 120

// maxPoints caps what a request may ask for, so one request cannot hold a
// target's lock for long.
const maxPoints = 600

// key names a series: the query, the newest scrape it was drawn to, the
// evaluations the ring held (version), and the parts of the configuration
// it depends on (a reload may change them between two scrapes).
func (q query) key(newest time.Time, version int64, spec pipeline.Spec) string {
	b, _ := json.Marshal([]any{q.Target, q.Model, q.SLO, q.Range, q.Window, q.Points, newest.UnixNano(), version, SpecKey(spec)})
	return string(b)
}

// errNotFound marks a query for a target, model or SLO that does not exist.
var errNotFound = errors.New("not found")

// buildSeries draws a query's windows across its range: at each grid end,
// the daemon's own evaluation that ring keeps for that cell of the grid
// (Ring.point), else an evaluation of the history at that end (before the
// ring reaches back that far: after a start, or on a server that keeps no
// ring). ring may be nil.
func buildSeries(h History, q query, ring *Ring) (*Series, error) {
	spec := h.Spec()
	idx := slices.IndexFunc(spec.SLOs, func(s slo.SLO) bool { return s.Name == q.SLO })
	if idx < 0 {
		return nil, fmt.Errorf("SLO %q: %w", q.SLO, errNotFound)
	}
	s := spec.SLOs[idx]
	oldest, newest, err := h.Span(q.Target)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, errNotFound)
	}
	if newest.IsZero() {
		return nil, fmt.Errorf("target %q has no scrape yet: %w", q.Target, errNotFound)
	}
	span, err := rangeLength(q.Range, s.Period, newest.Sub(oldest))
	if err != nil {
		return nil, err
	}
	window, err := pickWindow(spec.Windows, q.Window, span)
	if err != nil {
		return nil, err
	}
	from := newest.Add(-span)
	if from.Before(oldest) {
		from = oldest
	}
	points := q.Points
	if points <= 0 {
		points = DefaultPoints
	}
	points = min(points, maxPoints)
	out := &Series{
		Target: q.Target, Model: q.Model, SLO: sloInfo(s), Range: q.Range,
		From: unixSeconds(from), To: unixSeconds(newest), Window: formatWindow(window),
	}
	for _, w := range spec.Windows {
		out.Windows = append(out.Windows, formatWindow(w))
	}
	ends := grid(from, newest, points)
	step, key := newest.Sub(from)/time.Duration(points), SpecKey(spec)
	if points <= 1 || step <= 0 {
		step = max(newest.Sub(from), 1)
	}
	reports := make([]pipeline.ModelReport, len(ends))
	for i, end := range ends {
		if mr, ok := ring.point(key, q.Target, q.Model, end, step); ok {
			reports[i] = mr
			continue
		}
		if reports[i], err = h.EvaluateModelAt(q.Target, q.Model, end, window); err != nil {
			return nil, fmt.Errorf("%w: %w", err, errNotFound)
		}
	}
	reports, ends = distinct(reports)
	fill(out, spec, s, window, reports, ends)
	return out, nil
}

// distinct drops the points evaluated at the same scrape as the point
// before (a grid finer than the scrape interval), so that the charts' times
// strictly increase, and the points whose evaluation found no window at all
// (before the history holds two scrapes), which would draw nothing.
func distinct(reports []pipeline.ModelReport) ([]pipeline.ModelReport, []time.Time) {
	var keptR []pipeline.ModelReport
	var keptE []time.Time
	var last time.Time
	for _, mr := range reports {
		at, ok := evaluatedAt(mr)
		if !ok || (!last.IsZero() && !at.After(last)) {
			continue
		}
		last = at
		keptR = append(keptR, mr)
		keptE = append(keptE, at)
	}
	return keptR, keptE
}

// evaluatedAt is the scrape an evaluation read: where its budgets
// and burn rates end. Windows the spans covered end earlier, by the trace
// delay, and are drawn at this time too, so that one time axis serves
// every chart and never runs backwards. Without a budget window it is the
// newest window's end; ok is false when the evaluation found no window.
func evaluatedAt(mr pipeline.ModelReport) (at time.Time, ok bool) {
	for _, b := range mr.Budgets {
		if !b.End.IsZero() {
			return b.End, true
		}
	}
	for _, w := range mr.Windows {
		if w.Window.End.After(at) {
			at = w.Window.End
		}
	}
	return at, !at.IsZero()
}

// rangeLength resolves a range name: "all" is as far as the history reaches,
// "period" the SLO period, anything else a Prometheus duration.
func rangeLength(name string, period, history time.Duration) (time.Duration, error) {
	switch name {
	case "all", "":
		return history, nil
	case "period":
		return period, nil
	}
	d, err := model.ParseDuration(name)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("range %q: want all, period or a positive duration such as 1h or 1d", name)
	}
	return time.Duration(d), nil
}

// pickWindow returns the requested window, which must be configured, or the
// longest configured window at most a tenth of the range (else the shortest),
// so that a chart shows change rather than one window's average.
func pickWindow(windows []time.Duration, name string, span time.Duration) (time.Duration, error) {
	if len(windows) == 0 {
		return 0, errors.New("no window is configured")
	}
	if name != "" {
		for _, w := range windows {
			if formatWindow(w) == name {
				return w, nil
			}
		}
		return 0, fmt.Errorf("window %q is not configured", name)
	}
	best := slices.Min(windows)
	for _, w := range windows {
		if w <= span/10 && w > best {
			best = w
		}
	}
	return best, nil
}

// grid returns n ends spread evenly over (from, to], the last one to.
// Each window ends at the last scrape at or before its end.
func grid(from, to time.Time, n int) []time.Time {
	span := to.Sub(from)
	if span <= 0 || n <= 1 {
		return []time.Time{to}
	}
	out := make([]time.Time, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, from.Add(time.Duration(float64(span)*float64(i)/float64(n))))
	}
	out[n-1] = to
	return out
}

func sloInfo(s slo.SLO) SLOInfo {
	info := SLOInfo{Name: s.Name, Goal: s.Goal, PeriodSeconds: s.Period.Seconds()}
	for _, o := range s.Objectives {
		info.Objectives = append(info.Objectives, ObjectiveInfo{Metric: string(o.Metric), Threshold: o.Threshold})
	}
	return info
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

func formatWindow(d time.Duration) string {
	return model.Duration(d).String()
}

// drawnMetrics are the latency metrics charted for an SLO: its objectives'
// metrics, then e2e, the latency a client sees.
func drawnMetrics(s slo.SLO) []slo.Metric {
	var out []slo.Metric
	for _, o := range s.Objectives {
		if !slices.Contains(out, o.Metric) {
			out = append(out, o.Metric)
		}
	}
	if !slices.Contains(out, slo.E2E) {
		out = append(out, slo.E2E)
	}
	return out
}

// fill turns the evaluated points into chart series.
func fill(out *Series, spec pipeline.Spec, s slo.SLO, window time.Duration, reports []pipeline.ModelReport, ends []time.Time) {
	n := len(reports)
	out.Times = make([]float64, n)
	out.Budget, out.Covered = newBand(n), gaps(n)
	out.Goodput, out.Throughput = newBand(n), gaps(n)
	out.Abandoned, out.Aborted = newBand(n), gaps(n)
	for _, a := range spec.Alerts {
		if a.SLO == s.Name {
			out.Burns = append(out.Burns, BurnSeries{Severity: a.Severity, Long: formatWindow(a.Long), Short: formatWindow(a.Short),
				Factor: a.Factor, LongBurn: newBand(n), ShortBurn: newBand(n)})
		}
	}
	attainment := map[string]Band{}
	for _, name := range objectiveKeys(s) {
		b := newBand(n)
		attainment[name] = b
		out.Attainment = append(out.Attainment, NamedBand{Name: name, Band: b})
	}
	latency := map[string]Band{}
	for _, m := range drawnMetrics(s) {
		for _, q := range spec.Quantiles {
			b := newBand(n)
			latency[latencyKey(m, q)] = b
			out.Latency = append(out.Latency, LatencySeries{Metric: string(m), Quantile: q, Band: b})
		}
	}
	stages := map[slo.Stage]StageSeries{}
	for _, st := range []slo.Stage{slo.StageTotal, slo.StageQueue, slo.StageRunning} {
		ss := StageSeries{Stage: string(st), Predicted: gaps(n), Observed: gaps(n)}
		stages[st] = ss
		out.Concurrency = append(out.Concurrency, ss)
	}
	var newest *slo.WindowReport
	for i, mr := range reports {
		out.Times[i] = unixSeconds(ends[i])
		fillBudget(out, i, s, mr)
		fillBurns(out, i, s, mr)
		w := windowOf(mr, window)
		if w == nil {
			continue
		}
		newest = w
		fillWindow(i, s, w, attainment, latency, stages, out)
	}
	if newest != nil {
		out.Histograms = histograms(s, newest)
	}
}

func fillBudget(out *Series, i int, s slo.SLO, mr pipeline.ModelReport) {
	for _, b := range mr.Budgets {
		if b.SLO == s.Name && b.Known {
			out.Budget.set(i, b.Remaining)
			out.Covered[i] = Value(b.Coverage)
		}
	}
}

func fillBurns(out *Series, i int, s slo.SLO, mr pipeline.ModelReport) {
	j := 0
	for _, c := range mr.Burns {
		if c.Alert.SLO != s.Name {
			continue
		}
		if j < len(out.Burns) && c.Known {
			out.Burns[j].LongBurn.set(i, c.Long)
			out.Burns[j].ShortBurn.set(i, c.Short)
		}
		j++
	}
}

func fillWindow(i int, s slo.SLO, w *slo.WindowReport, attainment, latency map[string]Band, stages map[slo.Stage]StageSeries, out *Series) {
	for _, r := range w.SLOs {
		if r.Name != s.Name {
			continue
		}
		for name, b := range attainment {
			if v, ok := r.Objectives[name]; ok {
				b.set(i, v)
			}
		}
		if r.HasGoodputTokens {
			out.Goodput.set(i, r.GoodputTokensPerSecond)
		}
		if r.HasAbandoned {
			out.Abandoned.set(i, r.Abandoned)
		}
	}
	if w.HasAborted {
		out.Aborted[i] = Value(w.Aborted)
	}
	if gen := w.Window.GenerationTokens; gen.Valid() && w.Window.Seconds() > 0 {
		out.Throughput[i] = Value(gen.Sum / w.Window.Seconds())
	}
	for m, qs := range w.Quantiles {
		for _, q := range qs {
			if b, ok := latency[latencyKey(m, q.Q)]; ok {
				b.set(i, q.Bounded)
			}
		}
	}
	for st, c := range w.Concurrency {
		if ss, ok := stages[st]; ok {
			ss.Predicted[i] = Value(c.Predicted)
			if c.HasObserved {
				ss.Observed[i] = Value(c.Observed)
			}
		}
	}
}

// objectiveKeys are the attainment series of an SLO: "all" first, then each
// objective's metric.
func objectiveKeys(s slo.SLO) []string {
	keys := []string{slo.AllKey}
	for _, o := range s.Objectives {
		if !slices.Contains(keys, string(o.Metric)) {
			keys = append(keys, string(o.Metric))
		}
	}
	return keys
}

func latencyKey(m slo.Metric, q float64) string {
	return string(m) + "/" + strconv.FormatFloat(q, 'g', -1, 64)
}

// windowOf returns the model's window of the given length, or nil.
func windowOf(mr pipeline.ModelReport, length time.Duration) *slo.WindowReport {
	for i := range mr.Windows {
		if mr.Windows[i].Window.Nominal == length {
			return &mr.Windows[i]
		}
	}
	return nil
}
