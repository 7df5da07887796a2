package console

import (
	"cmp"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Overview is every SLO of every target and model at the latest evaluation.
type Overview struct {
	Report *pipeline.Report
	// Windows head the attainment columns, in configured order.
	Windows []time.Duration
	// Pairs head the burn-rate columns: each burn-rate alert's window pair.
	Pairs []string
	// Rows hold one SLO of one model each, sorted by Sort.
	Rows []Row
	// Sort is the order of Rows: "worst" (default), "name", "budget",
	// "burn" or "attainment".
	Sort string
}

// Row is one SLO of one model of one target.
type Row struct {
	Target, Model, SLO string
	// Attainment of "all" per Overview.Windows; Known false where the
	// window holds no finished request.
	Attainment []Cell
	// Budget is the error budget remaining over the period; Covered is how
	// much of the period the history held, Period the period (0: unknown).
	Budget          Cell
	Covered, Period time.Duration
	// Burns per Overview.Pairs.
	Burns []Burn
	// Alert is the worst state of the SLO's burn-rate alerts: "firing",
	// "pending" or "".
	Alert string
	// Link is the detail view's URL.
	Link string
}

// Cell is a bounded number that may be unknown.
type Cell struct {
	slo.Bounded
	Known bool
	// Unknown, when set, says why the number cannot be known (an objective
	// whose histogram the target lacks), as opposed to a window without
	// requests.
	Unknown string
	// Exact is set when vLLM's trace spans covered the window: the number is
	// exact, and Histogram is what the histograms alone estimated beside it
	// (HasHistogram), BoundsHeld whether every histogram bound held it.
	Exact                    bool
	Histogram                float64
	HasHistogram, BoundsHeld bool
}

// Burn is one alert's window pair: both burn rates and the threshold.
type Burn struct {
	Long, Short Cell
	Factor      float64
	// Active is true when both upper bounds exceed the threshold.
	Active bool
	// Present is false when the SLO has no alert with this pair.
	Present bool
}

// buildOverview lays out the report's SLOs as rows; periods are the SLO
// periods by name, when known.
func buildOverview(rep *pipeline.Report, periods map[string]time.Duration, sortBy string) Overview {
	o := Overview{Report: rep, Sort: sortBy}
	if o.Sort == "" {
		o.Sort = "worst"
	}
	if rep == nil {
		return o
	}
	o.Windows, o.Pairs = columns(rep)
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, b := range m.Budgets {
				o.Rows = append(o.Rows, row(rep, t.Name, m, b, periods, o.Windows, o.Pairs))
			}
		}
	}
	sortRows(o.Rows, o.Sort)
	return o
}

// columns collects the windows and alert window pairs the report holds.
func columns(rep *pipeline.Report) ([]time.Duration, []string) {
	var windows []time.Duration
	var pairs []string
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, w := range m.Windows {
				if !slices.Contains(windows, w.Window.Nominal) {
					windows = append(windows, w.Window.Nominal)
				}
			}
			for _, c := range m.Burns {
				if p := pairName(c.Alert); !slices.Contains(pairs, p) {
					pairs = append(pairs, p)
				}
			}
		}
	}
	return windows, pairs
}

func pairName(a pipeline.BurnAlert) string {
	return formatWindow(a.Long) + " / " + formatWindow(a.Short)
}

func row(rep *pipeline.Report, target string, m pipeline.ModelReport, b pipeline.Budget, periods map[string]time.Duration, windows []time.Duration, pairs []string) Row {
	r := Row{Target: target, Model: m.Name, SLO: b.SLO, Budget: Cell{Bounded: b.Remaining, Known: b.Known},
		Covered: b.Covered, Period: periods[b.SLO]}
	r.Attainment = make([]Cell, len(windows))
	for _, w := range m.Windows {
		i := slices.Index(windows, w.Window.Nominal)
		for _, s := range w.SLOs {
			if s.Name != b.SLO || i < 0 {
				continue
			}
			if a, ok := s.Objectives[slo.AllKey]; ok {
				r.Attainment[i] = exactSide(Cell{Bounded: a, Known: true}, m, w.Window.Nominal, b.SLO)
			} else if len(s.Unknown) > 0 {
				r.Attainment[i] = Cell{Unknown: unknownReason(s.Unknown)}
			}
		}
	}
	r.Burns = make([]Burn, len(pairs))
	for _, c := range m.Burns {
		if c.Alert.SLO != b.SLO {
			continue
		}
		i := slices.Index(pairs, pairName(c.Alert))
		r.Burns[i] = Burn{Long: Cell{Bounded: c.Long, Known: c.Known}, Short: Cell{Bounded: c.Short, Known: c.Known}, Factor: c.Alert.Factor, Active: c.Active(), Present: true}
	}
	r.Alert = alertState(rep, target, m.Name, b.SLO)
	r.Link = "/slo?" + url.Values{"target": {target}, "model": {m.Name}, "slo": {b.SLO}}.Encode()
	return r
}

// exactSide marks a cell whose window vLLM's spans covered as exact and sets
// beside it the histograms' own estimate (the exact value plus the
// calibration's error) and whether their bounds held.
func exactSide(c Cell, m pipeline.ModelReport, window time.Duration, sloName string) Cell {
	for _, tr := range m.Traces {
		if tr.Nominal != window || !tr.Covered {
			continue
		}
		c.Exact, c.BoundsHeld = true, tr.Calibration.Held()
		for _, e := range tr.Calibration.AttainmentErrors {
			if e.SLO == sloName && e.Objective == slo.AllKey {
				c.Histogram, c.HasHistogram = c.Estimate+e.Error, true
			}
		}
	}
	return c
}

// unknownReason says which histograms an SLO's objectives lack.
func unknownReason(missing []slo.Metric) string {
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = string(m)
	}
	return "the target exposes no " + strings.Join(names, ", ") + " histogram"
}

// alertState is the worst state of the SLO's burn-rate alerts for the model.
func alertState(rep *pipeline.Report, target, model, sloName string) string {
	state := ""
	for _, a := range rep.Alerts {
		l := a.Labels
		if l["alertname"] != pipeline.AlertBurnRate || l["target"] != target || l["model_name"] != model || l["slo"] != sloName {
			continue
		}
		switch a.State {
		case pipeline.StateFiring:
			return "firing"
		case pipeline.StatePending:
			state = "pending"
		}
	}
	return state
}

// severity orders rows worst first: firing, then pending, then the rest.
func severity(r Row) int {
	switch r.Alert {
	case "firing":
		return 0
	case "pending":
		return 1
	}
	return 2
}

// budgetKey is the pessimistic budget remaining; unknown sorts last.
func budgetKey(r Row) float64 {
	if !r.Budget.Known {
		return math.Inf(1)
	}
	return r.Budget.Lower
}

// burnKey is the largest pessimistic short-window burn rate relative to its
// threshold; higher is worse.
func burnKey(r Row) float64 {
	worst := math.Inf(-1)
	for _, b := range r.Burns {
		if b.Present && b.Short.Known && b.Factor > 0 {
			worst = math.Max(worst, b.Short.Upper/b.Factor)
		}
	}
	return worst
}

// attainmentKey is the pessimistic attainment of the shortest window that
// knows one; unknown sorts last.
func attainmentKey(r Row) float64 {
	for _, c := range r.Attainment {
		if c.Known {
			return c.Lower
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
