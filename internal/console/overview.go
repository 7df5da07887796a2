package console

import (
	"cmp"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/status"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Overview is every SLO of every target and model at the latest evaluation.
type Overview struct {
	Report *pipeline.Report
	// Windows head the attainment columns, in configured order.
	Windows []time.Duration
	// Rows hold one SLO of one model each, sorted by Sort.
	Rows []Row
	// Active are the pending and firing alerts, worst first; Resolved the
	// recently resolved ones, newest first.
	Active, Resolved []AlertRow
	// Exact is true when exact mode (vLLM's trace spans) is on for some
	// model: each number then says where it comes from.
	Exact bool
	// Sort is the order of Rows: "worst" (default), "name", "budget",
	// "burn" or "attainment".
	Sort string
	// Static is set in the self-contained file, whose rows link nowhere.
	Static bool
}

// Row is one SLO of one model of one target.
type Row struct {
	Target, Model, SLO string
	// Goal and Objectives describe the SLO ("99%", "ttft ≤ 500ms"); empty
	// when the configuration is not at hand.
	Goal       string
	Objectives []string
	// Status is the SLO's status (package status), which every number below
	// is printed from.
	Status status.SLO
	// Attainment per Overview.Windows (Present false where the model has no
	// such window).
	Attainment []AttainmentCell
	// Budget is the error budget left over the period.
	Budget BudgetCell
	// Burns are the SLO's own burn-rate alerts.
	Burns []BurnCell
	// Alert is the worst state of the alerts of this model and SLO:
	// "firing", "pending" or "" (ok); Since when it began (firing: when it
	// fired; pending: when its condition began).
	Alert string
	Since time.Time
	// Link is the detail view's URL.
	Link string
}

// Num is one number as printed, and the /metrics series whose value it is
// (Series, a selector; empty when /metrics has no such series) with the
// format it was printed in, so that a test can check that both agree.
type Num struct {
	Text   string
	Series string
	Format string
}

// AttainmentCell is the joint attainment of one window.
type AttainmentCell struct {
	Present, Known bool
	// Class is "met" when the estimate reaches the goal, "missed" when not;
	// Certain when the bounds lie on the same side of the goal.
	Class   string
	Certain bool
	// Estimate, Lower and Upper as printed.
	Estimate, Lower, Upper Num
	Bounded                bool
	// Unknown says why the attainment cannot be known (an objective whose
	// histogram the target lacks), as opposed to a window without requests.
	Unknown string
	// Coverage is the window coverage as printed; Filling marks a window
	// below status.FillingCoverage.
	Coverage Num
	Filling  bool
	Window   time.Duration
	// Source, Histogram, HasHistogram and BoundsHeld: see
	// status.Window.
	Source       string
	Histogram    string
	HasHistogram bool
	BoundsHeld   bool
}

// BudgetCell is the error budget left over the SLO period.
type BudgetCell struct {
	Known bool
	// Estimate, Lower and Upper as printed; Bar the estimate clipped to
	// [0, 1] for the bar.
	Estimate, Lower, Upper Num
	Bar                    float64
	// Covered and Period: the budget rests on Covered of Period (0:
	// unknown); Filling marks a coverage below status.FillingCoverage.
	Covered, Period time.Duration
	Filling         bool
	// Lasts is how long the budget left lasts at the current burn rate
	// (empty: not known), Exhausted true when none is left.
	Lasts     string
	LastsAt   string
	Exhausted bool
}

// BurnCell is one burn-rate alert of the SLO with its two windows.
type BurnCell struct {
	Severity    string
	Long, Short BurnNum
	Factor      string
	// Active is true when the alert's condition holds.
	Active bool
	// Paging, when set, is the upper bound the alert evaluates (from the
	// histograms) where it differs from the number shown (exact mode).
	Paging string
}

// BurnNum is the burn rate of one window, estimate and upper bound.
type BurnNum struct {
	Window          string
	Known           bool
	Estimate, Upper Num
	Source          string
}

// AlertRow is one alert of the Alerts tables.
type AlertRow struct {
	pipeline.Alert
	// Targets are the targets the alert came from.
	Targets []string
}

// buildOverview lays out the report's SLOs as rows; slos are the configured
// SLOs (nil: unknown, then goals and periods are not shown).
func buildOverview(rep *pipeline.Report, slos []slo.SLO, sortBy string) Overview {
	o := Overview{Report: rep, Sort: sortBy}
	if o.Sort == "" {
		o.Sort = "worst"
	}
	if rep == nil {
		return o
	}
	o.Windows = columns(rep)
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			if len(m.Traces) > 0 {
				o.Exact = true
			}
			for _, b := range m.Budgets {
				def := slo.SLO{Name: b.SLO}
				if i := slices.IndexFunc(slos, func(s slo.SLO) bool { return s.Name == b.SLO }); i >= 0 {
					def = slos[i]
				}
				o.Rows = append(o.Rows, row(rep, t, m, def, o.Windows))
			}
		}
	}
	sortRows(o.Rows, o.Sort)
	o.Active, o.Resolved = alertRows(rep.Alerts)
	return o
}

// columns collects the windows the report holds.
func columns(rep *pipeline.Report) []time.Duration {
	var windows []time.Duration
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, w := range m.Windows {
				if !slices.Contains(windows, w.Window.Nominal) {
					windows = append(windows, w.Window.Nominal)
				}
			}
		}
	}
	return windows
}

func row(rep *pipeline.Report, t pipeline.TargetReport, m pipeline.ModelReport, s slo.SLO, windows []time.Duration) Row {
	st := status.Of(m, s)
	ids := seriesIDs{target: t.Name, model: m.Name, slo: s.Name}
	r := Row{Target: t.Name, Model: m.Name, SLO: s.Name, Status: st}
	if s.Goal > 0 {
		r.Goal = strconv.FormatFloat(100*s.Goal, 'f', -1, 64) + "%"
	}
	for _, o := range s.Objectives {
		r.Objectives = append(r.Objectives, string(o.Metric)+" ≤ "+formatSeconds(o.Threshold))
	}
	r.Attainment = make([]AttainmentCell, len(windows))
	for _, w := range st.Windows {
		if i := slices.Index(windows, w.Nominal); i >= 0 {
			r.Attainment[i] = attainmentCell(w, s.Goal, ids)
		}
	}
	r.Budget = budgetCell(st, ids)
	for _, b := range st.Burns {
		r.Burns = append(r.Burns, burnCell(b, ids))
	}
	r.Alert, r.Since = alertState(rep.Alerts, t.Name, m.Name, s.Name)
	r.Link = "/slo?" + url.Values{"target": {t.Name}, "model": {m.Name}, "slo": {s.Name}}.Encode()
	return r
}

// seriesIDs are the labels that name an SLO of a model on /metrics.
type seriesIDs struct{ target, model, slo string }

// series writes a selector of a /metrics series: the name and the labels
// that identify it (the target's extra labels are left out).
func (ids seriesIDs) series(name string, kv ...string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString(`{target=`)
	b.WriteString(strconv.Quote(ids.target))
	b.WriteString(`,model_name=`)
	b.WriteString(strconv.Quote(ids.model))
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString("," + kv[i] + "=" + strconv.Quote(kv[i+1]))
	}
	b.WriteString("}")
	return b.String()
}

func attainmentCell(w status.Window, goal float64, ids seriesIDs) AttainmentCell {
	win := formatWindow(w.Nominal)
	c := AttainmentCell{Present: true, Known: w.Known, Window: w.Nominal, Filling: w.Filling, Source: w.Source,
		BoundsHeld: w.BoundsHeld, HasHistogram: w.HasHistogram}
	if w.HasCoverage {
		c.Coverage = Num{Text: formatPercent0(w.Coverage), Series: ids.series("vllm_slo_window_coverage_ratio", "window", win), Format: "pct0"}
	}
	if len(w.Unknown) > 0 {
		c.Unknown = unknownReason(w.Unknown)
	}
	if !w.Known {
		return c
	}
	a := w.Attainment
	name := func(suffix string) string {
		return ids.series("vllm_slo_attainment"+suffix+"ratio", "slo", ids.slo, "objective", slo.AllKey, "window", win)
	}
	c.Estimate = Num{Text: formatPercent2(a.Estimate), Series: name("_"), Format: "pct"}
	c.Bounded = a.Lower != a.Upper
	c.Lower = Num{Text: formatPercent2(a.Lower), Series: name("_lower_"), Format: "pct"}
	c.Upper = Num{Text: formatPercent2(a.Upper), Series: name("_upper_"), Format: "pct"}
	if w.HasHistogram {
		c.Histogram = formatPercent2(w.Histogram)
	}
	if goal > 0 {
		c.Class = "missed"
		if a.Estimate >= goal {
			c.Class = "met"
		}
		c.Certain = a.Lower >= goal || a.Upper < goal
	}
	return c
}

func budgetCell(st status.SLO, ids seriesIDs) BudgetCell {
	b := st.Budget
	c := BudgetCell{Known: b.Known, Covered: b.Covered, Period: st.SLO.Period, Filling: st.BudgetFilling, Exhausted: st.Exhausted}
	if !b.Known {
		return c
	}
	name := func(suffix string) string {
		return ids.series("vllm_slo_error_budget_remaining"+suffix+"ratio", "slo", ids.slo)
	}
	c.Estimate = Num{Text: formatPercent2(b.Remaining.Estimate), Series: name("_"), Format: "pct"}
	c.Lower = Num{Text: formatPercent2(b.Remaining.Lower), Series: name("_lower_"), Format: "pct"}
	c.Upper = Num{Text: formatPercent2(b.Remaining.Upper), Series: name("_upper_"), Format: "pct"}
	c.Bar = math.Max(0, math.Min(1, b.Remaining.Estimate))
	if st.HasExhaustion {
		c.Lasts = formatRough(st.Exhaustion)
		c.LastsAt = "at the burn rate " + formatNumber(st.Current.Burn.Estimate) + " over " + formatWindow(st.Current.Window)
	}
	return c
}

func burnCell(b status.AlertBurn, ids seriesIDs) BurnCell {
	a := b.Check.Alert
	c := BurnCell{Severity: a.Severity, Factor: formatNumber(a.Factor), Active: b.Check.Active(),
		Long: burnNum(b.Long, ids), Short: burnNum(b.Short, ids)}
	if b.Check.Known && (b.Long.Burn.Upper != b.Check.Long.Upper || b.Short.Burn.Upper != b.Check.Short.Upper) {
		c.Paging = formatNumber(b.Check.Long.Upper) + " / " + formatNumber(b.Check.Short.Upper)
	}
	return c
}

func burnNum(w status.WindowBurn, ids seriesIDs) BurnNum {
	n := BurnNum{Window: formatWindow(w.Window), Known: w.Known, Source: w.Source}
	if !w.Known {
		return n
	}
	n.Estimate, n.Upper = Num{Text: formatNumber(w.Burn.Estimate)}, Num{Text: formatNumber(w.Burn.Upper)}
	if w.Exported {
		win := formatWindow(w.Window)
		n.Estimate.Series, n.Estimate.Format = ids.series("vllm_slo_burn_rate", "slo", ids.slo, "window", win), "num"
		n.Upper.Series, n.Upper.Format = ids.series("vllm_slo_burn_rate_upper", "slo", ids.slo, "window", win), "num"
	}
	return n
}

// unknownReason says which histograms an SLO's objectives lack.
func unknownReason(missing []slo.Metric) string {
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = string(m)
	}
	return "the target exposes no " + strings.Join(names, ", ") + " histogram"
}

// alertMatches reports whether an alert belongs to a row: it names the
// row's model and SLO, and if it names a target (as a label, or as the
// target it was raised for), the row's. Only the labels the row has are
// compared, so alerts that carry more labels (severity, windows, external
// labels) or fewer (no target label, as burn-rate alerts, which merge with
// the generated rules' copies) still match.
func alertMatches(a pipeline.Alert, target, model, sloName string) bool {
	l := a.Labels
	if l["model_name"] != model || l["slo"] != sloName {
		return false
	}
	if t, ok := l["target"]; ok && t != target {
		return false
	}
	targets := alertTargets(a)
	return len(targets) == 0 || slices.Contains(targets, target)
}

// alertTargets are the targets an alert came from: the target it was raised
// for and its target label, if any.
func alertTargets(a pipeline.Alert) []string {
	var out []string
	for _, t := range []string{a.Target, a.Labels["target"]} {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// alertRank orders alert states worst first.
func alertRank(s pipeline.AlertState) int {
	switch s {
	case pipeline.StateFiring:
		return 0
	case pipeline.StatePending:
		return 1
	}
	return 2
}

// alertState is the worst state of the alerts of a model's SLO and since
// when it holds: the earliest firing time of the firing ones, or the
// earliest start of the pending ones.
func alertState(alerts []pipeline.Alert, target, model, sloName string) (string, time.Time) {
	state, since := "", time.Time{}
	for _, a := range alerts {
		if a.State == pipeline.StateResolved || !alertMatches(a, target, model, sloName) {
			continue
		}
		at := a.ActiveAt
		if a.State == pipeline.StateFiring {
			at = a.FiredAt
		}
		switch {
		case state == "" || alertRank(a.State) < alertRank(pipeline.AlertState(state)):
			state, since = string(a.State), at
		case string(a.State) == state && at.Before(since):
			since = at
		}
	}
	return state, since
}

// alertRows splits the alerts into the active ones, worst first (firing,
// then pending, the longest-standing first), and the resolved ones, newest
// first.
func alertRows(alerts []pipeline.Alert) (active, resolved []AlertRow) {
	for _, a := range alerts {
		r := AlertRow{Alert: a, Targets: alertTargets(a)}
		if a.State == pipeline.StateResolved {
			resolved = append(resolved, r)
		} else {
			active = append(active, r)
		}
	}
	slices.SortStableFunc(active, func(a, b AlertRow) int {
		return cmp.Or(cmp.Compare(alertRank(a.State), alertRank(b.State)), a.ActiveAt.Compare(b.ActiveAt))
	})
	slices.SortStableFunc(resolved, func(a, b AlertRow) int { return b.ResolvedAt.Compare(a.ResolvedAt) })
	return active, resolved
}

// severity orders rows worst first: firing, then pending, then the rest.
func severity(r Row) int {
	return alertRank(pipeline.AlertState(r.Alert))
}

// budgetKey is the pessimistic budget remaining; unknown sorts last.
func budgetKey(r Row) float64 {
	if !r.Status.Budget.Known {
		return math.Inf(1)
	}
	return r.Status.Budget.Remaining.Lower
}

// burnKey is the largest pessimistic short-window burn rate relative to its
// threshold; higher is worse.
func burnKey(r Row) float64 {
	worst := math.Inf(-1)
	for _, b := range r.Status.Burns {
		if b.Short.Known && b.Check.Alert.Factor > 0 {
			worst = math.Max(worst, b.Short.Burn.Upper/b.Check.Alert.Factor)
		}
	}
	return worst
}

// attainmentKey is the pessimistic attainment of the shortest window that
// knows one; unknown sorts last.
func attainmentKey(r Row) float64 {
	for _, w := range r.Status.Windows {
		if w.Known {
			return w.Attainment.Lower
		}
	}
	return math.Inf(1)
}

func byName(a, b Row) int {
	return cmp.Or(strings.Compare(a.Target, b.Target), strings.Compare(a.Model, b.Model), strings.Compare(a.SLO, b.SLO))
}

// sortRows orders the rows; every order ends with the names, so it is total.
func sortRows(rows []Row, by string) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch by {
		case "name":
		case "budget":
			if c := cmp.Compare(budgetKey(a), budgetKey(b)); c != 0 {
				return c
			}
		case "burn":
			if c := cmp.Compare(burnKey(b), burnKey(a)); c != 0 {
				return c
			}
		case "attainment":
			if c := cmp.Compare(attainmentKey(a), attainmentKey(b)); c != 0 {
				return c
			}
		default: // worst first
			if c := cmp.Or(cmp.Compare(severity(a), severity(b)), cmp.Compare(budgetKey(a), budgetKey(b)),
				cmp.Compare(burnKey(b), burnKey(a))); c != 0 {
				return c
			}
		}
		return byName(a, b)
	})
}

// sortedLabels lists an alert's labels other than those shown in columns.
func sortedLabels(l map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		switch k {
		case "alertname", "severity", "slo", "model_name", "target":
			continue
		}
		out = append(out, k+"="+l[k])
	}
	return out
}
