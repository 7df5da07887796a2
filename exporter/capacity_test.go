package exporter

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// TestCapacitySeries renders a bounded, a one-sided and an unknown
// estimate: every value of a bounded answer and the method that placed
// its interval, no upper end of a one-sided one, only the load and
// learning start of an unknown one, and a time to breach only where the
// trend points there; the output passes promtool's lint. The replica
// signal is one series for the model and SLO over the three targets: their
// loads (6) over 0.9 of the bounded lower end (5.5, above the lower_only 3).
func TestCapacitySeries(t *testing.T) {
	since := time.Unix(1_700_000_000, 0)
	bounded := capacity.Estimate{Kind: capacity.Bounded, Method: capacity.Gumbel, Since: since, Load: 3,
		Requests:    capacity.Range{Estimate: 6, Lower: 5.5, Upper: 6.5},
		Tokens:      capacity.Range{Estimate: 1200, Lower: 1100, Upper: 1300},
		Concurrency: capacity.Range{Estimate: 40, Lower: 35, Upper: 45},
		Headroom:    capacity.Range{Estimate: 0.5, Lower: 3.0 / 11, Upper: 1 - 3/6.5},
		HasBreach:   true, TimeToBreach: 90 * time.Minute, TimeToBreachLower: time.Hour}
	oneSided := capacity.Estimate{Kind: capacity.LowerOnly, Since: since, Load: 2,
		Requests: capacity.Range{Estimate: 3, Lower: 3, Upper: math.Inf(1)},
		Tokens:   capacity.Range{Estimate: 600, Lower: 600, Upper: math.Inf(1)},
		Headroom: capacity.Range{Estimate: 1.0 / 3, Lower: 1.0 / 3, Upper: 1}}
	unknown := capacity.Estimate{Kind: capacity.Unknown, Since: since, Load: 1, Requests: capacity.Range{Estimate: math.NaN()}}
	reps := []capacity.Report{
		{Target: "a", Model: "m", SLO: "s", Labels: map[string]string{"zone": "x"}, Estimate: bounded},
		{Target: "b", Model: "m", SLO: "s", Estimate: oneSided},
		{Target: "c", Model: "m", SLO: "s", Estimate: unknown},
	}
	c := newCapacityCollector(func() []capacity.Report { return reps })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var target, kind string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "target":
					target = l.GetValue()
				case "kind", "method":
					kind += l.GetValue()
				}
			}
			got[mf.GetName()+"{"+target+","+kind+"}"] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"vllm_slo_capacity_requests_per_second{a,bounded}":              6,
		"vllm_slo_capacity_lower_requests_per_second{a,bounded}":        5.5,
		"vllm_slo_capacity_upper_requests_per_second{a,bounded}":        6.5,
		"vllm_slo_capacity_tokens_per_second{a,bounded}":                1200,
		"vllm_slo_capacity_upper_concurrency{a,bounded}":                45,
		"vllm_slo_capacity_headroom_ratio{a,bounded}":                   0.5,
		"vllm_slo_capacity_headroom_lower_ratio{a,bounded}":             3.0 / 11,
		"vllm_slo_capacity_time_to_breach_seconds{a,bounded}":           5400,
		"vllm_slo_capacity_time_to_breach_earliest_seconds{a,bounded}":  3600,
		"vllm_slo_capacity_learning_since_timestamp_seconds{a,bounded}": 1.7e9,
		"vllm_slo_capacity_method_info{a,boundedgumbel}":                1,
		"vllm_slo_capacity_requests_per_second{b,lower_only}":           3,
		"vllm_slo_capacity_lower_requests_per_second{b,lower_only}":     3,
		"vllm_slo_capacity_headroom_ratio{b,lower_only}":                1.0 / 3,
		"vllm_slo_capacity_load_requests_per_second{c,unknown}":         1,
		"vllm_slo_capacity_replicas{,}":                                 6 / (0.9 * 5.5),
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		switch {
		case strings.Contains(k, "upper") && !strings.Contains(k, "{a,"):
			t.Errorf("%s: an upper end of an answer that has none", k)
		case strings.Contains(k, "{c,") && !strings.Contains(k, "load_") && !strings.Contains(k, "learning_since"):
			t.Errorf("%s: a capacity series for an unknown answer", k)
		case strings.Contains(k, "method") && !strings.Contains(k, "{a,"):
			t.Errorf("%s: a method for an answer that is not bounded", k)
		case strings.Contains(k, "breach") && !strings.Contains(k, "{a,"):
			t.Errorf("%s: a time to breach without a trend", k)
		}
	}
}

// TestCapacityReplicasPerModel: the replica signal pools the targets of
// each model and SLO, however the reports interleave them, and leaves out
// a pair none of whose targets has a capacity.
func TestCapacityReplicasPerModel(t *testing.T) {
	est := func(kind capacity.Kind, lower, load float64) capacity.Estimate {
		return capacity.Estimate{Kind: kind, Load: load, Requests: capacity.Range{Estimate: lower, Lower: lower, Upper: math.Inf(1)}}
	}
	reps := []capacity.Report{
		{Target: "a", Model: "m1", SLO: "s", Estimate: est(capacity.LowerOnly, 4, 3)},
		{Target: "a", Model: "m2", SLO: "s", Estimate: est(capacity.LowerOnly, 2, 1)},
		{Target: "a", Model: "m3", SLO: "s", Estimate: est(capacity.Unknown, 0, 1)},
		{Target: "b", Model: "m1", SLO: "s", Estimate: est(capacity.LowerOnly, 5, 6)},
		{Target: "b", Model: "m2", SLO: "s", Estimate: est(capacity.Unknown, 0, 2)},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCapacityCollector(func() []capacity.Report { return reps }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "vllm_slo_capacity_replicas" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()+","+m.GetLabel()[1].GetValue()] = m.GetGauge().GetValue()
		}
	}
	// lower_only answers are planned at without the margin.
	want := map[string]float64{"m1,s": 9.0 / 5, "m2,s": 3.0 / 2}
	if len(got) != len(want) {
		t.Fatalf("replica series %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
