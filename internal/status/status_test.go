package status

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestOf: the status of an SLO reads the report's numbers: windows
// below half their length are filling, the budget lasts remaining × period
// / burn at the first alert's long-window burn, a configured window's burn
// is the window's own (exact where the spans covered it) and another's the
// alert's, and the source says traces only when every window came from them.
func TestOf(t *testing.T) {
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	window := func(d, span time.Duration, all, burn slo.Bounded) slo.WindowReport {
		w := slo.Window{Nominal: d, Start: end.Add(-span), End: end}
		wr := slo.WindowReport{Window: w,
			SLOs: []slo.SLOResult{{Name: "s", Objectives: map[string]slo.Bounded{slo.AllKey: all}, BurnRate: burn, HasBurnRate: true}}}
		wr.Coverage, wr.HasCoverage = w.Coverage() // as the evaluation sets it
		return wr
	}
	s := slo.SLO{Name: "s", Goal: 0.99, Period: 24 * time.Hour}
	page := pipeline.BurnAlert{SLO: "s", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 14.4}
	ticket := pipeline.BurnAlert{SLO: "s", Severity: "ticket", Long: time.Hour, Short: 5 * time.Minute, Factor: 6}
	m := pipeline.ModelReport{Name: "m",
		Windows: []slo.WindowReport{
			window(time.Minute, time.Minute, slo.Exact(0.98), slo.Exact(2)),
			window(5*time.Minute, 2*time.Minute, slo.Bounded{Estimate: 0.97, Lower: 0.9, Upper: 0.99}, slo.Bounded{Estimate: 3, Lower: 1, Upper: 10}),
		},
		Budgets: []pipeline.Budget{{SLO: "s", Known: true, Remaining: slo.Bounded{Estimate: 0.5, Lower: 0.2, Upper: 0.6}, Covered: 6 * time.Hour, Coverage: 0.25}},
		Burns: []pipeline.BurnCheck{
			{Alert: page, Known: true, Long: slo.Bounded{Estimate: 3.5, Upper: 11}, Short: slo.Bounded{Estimate: 2.5, Upper: 5}},
			{Alert: ticket, Known: true, Long: slo.Bounded{Estimate: 1, Upper: 2}, Short: slo.Bounded{Estimate: 3, Upper: 10}},
		},
		Traces: []traces.Result{{Nominal: time.Minute, Covered: true}, {Nominal: 5 * time.Minute}},
	}
	st := Of(m, s)
	if len(st.Windows) != 2 || st.Windows[0].Filling || !st.Windows[1].Filling || st.Windows[1].Coverage != 0.4 {
		t.Errorf("windows %+v: want the 1m full, the 5m filling at 0.4", st.Windows)
	}
	if st.Windows[0].Source != SourceTraces || st.Windows[1].Source != SourceHistograms || st.Source != SourceHistograms {
		t.Errorf("sources %q, %q, overall %q", st.Windows[0].Source, st.Windows[1].Source, st.Source)
	}
	if !st.BudgetFilling {
		t.Error("a budget on a quarter of its period is not filling")
	}
	// The page's long window is the configured 5m: its own burn rate, 3.
	if !st.HasCurrent || st.Current.Burn.Estimate != 3 || !st.Current.Exported {
		t.Errorf("current burn %+v, want the 5m window's 3", st.Current)
	}
	if want := 4 * time.Hour; !st.HasExhaustion || st.Exhaustion != want {
		t.Errorf("exhaustion %v, want %v (0.5 of 24h at 3×)", st.Exhaustion, want)
	}
	// The ticket's 1h window is not configured: the alert's own numbers.
	if b := st.Burns[1].Long; b.Exported || b.Burn.Upper != 2 || b.Source != SourceHistograms {
		t.Errorf("ticket long window %+v, want the alert's histogram burn", b)
	}
	if b := st.Burns[0].Short; !b.Exported || b.Burn != slo.Exact(2) || b.Source != SourceTraces {
		t.Errorf("page short window %+v, want the exact 1m burn", b)
	}
	m.Budgets[0].Remaining.Estimate = -0.1
	if st := Of(m, s); !st.Exhausted || st.HasExhaustion {
		t.Errorf("an overspent budget: exhausted %v, lasts %v", st.Exhausted, st.Exhaustion)
	}
}
