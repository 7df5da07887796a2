package benchreport

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// serverMetrics are the histogram metrics shown, in order.
var serverMetrics = []slo.Metric{slo.TTFT, slo.TPOT, slo.ITL, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference}

// ServerTable lays histogram results out as a table, one column per model:
// latencies in ms as "estimate [lower, upper]" (a single number when exact).
func ServerTable(models []ServerModel, objs []Objective) Table {
	t := serverRows{Table: Table{Title: "vLLM /metrics histograms (brackets hold the truth; estimates inside them)", Header: []string{""}}, models: models}
	for _, m := range models {
		t.Header = append(t.Header, m.Target+"/"+m.Model)
	}
	t.row("window (s)", func(m ServerModel) string { return f2(m.Seconds) })
	t.row("finished requests", func(m ServerModel) string { return fmtG(m.Requests[slo.E2E]) })
	t.row("request throughput (req/s)", func(m ServerModel) string { return cond(m.HasRequestRate, m.RequestsPerSecond) })
	t.row("output token throughput (tok/s)", func(m ServerModel) string { return cond(m.HasThroughput, m.OutputThroughput) })
	t.row("prompt token throughput (tok/s)", func(m ServerModel) string { return cond(m.HasThroughput, m.PromptThroughput) })
	if len(objs) > 0 {
		t.goodputRows(objs)
	}
	for _, metric := range serverMetrics {
		t.quantileRows(metric)
	}
	t.concurrencyRows()
	if len(models) > 0 && models[0].Cost != nil {
		t.costRows()
	}
	t.Notes = append(t.Notes, "quantile brackets use nearest rank (the ceil(q·n)-th request); estimates are the slo package's default estimator")
	return t.Table
}

// serverRows is the server table being built: one column per model, filled
// a row at a time.
type serverRows struct {
	Table
	models []ServerModel
}

// row appends a row named name with one cell per model.
func (t *serverRows) row(name string, cell func(ServerModel) string) {
	r := []string{name}
	for _, m := range t.models {
		r = append(r, cell(m))
	}
	t.Rows = append(t.Rows, r)
}

// goodputRows appends the attainment of all and of each objective (e2el
// under the histograms' name, e2e), then goodput in requests and tokens.
func (t *serverRows) goodputRows(objs []Objective) {
	keys := []string{slo.AllKey}
	for _, o := range objs {
		k := o.Metric
		if k == "e2el" {
			k = string(slo.E2E)
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		t.row("attainment "+k, func(m ServerModel) string {
			if m.Goodput == nil {
				return "-"
			}
			r, ok := m.Goodput.Attainment[k]
			if !ok {
				return "-"
			}
			return ratio(r)
		})
	}
	t.row("goodput "+objectivesText(objs)+" (req/s)", func(m ServerModel) string {
		if m.Goodput == nil {
			return "-"
		}
		return rng(m.Goodput.RequestsPerSecond, 1)
	})
	t.row("goodput (tok/s)", func(m ServerModel) string {
		if m.Goodput == nil || !m.Goodput.HasTokens {
			return "-"
		}
		return rng(m.Goodput.TokensPerSecond, 1)
	})
}

// quantileRows appends one row per quantile level any model has for the
// metric, in increasing order; a model without that level shows "-".
func (t *serverRows) quantileRows(metric slo.Metric) {
	var qs []float64
	for _, m := range t.models {
		for _, q := range m.Quantiles[metric] {
			if !slices.Contains(qs, q.Q) {
				qs = append(qs, q.Q)
			}
		}
	}
	slices.Sort(qs)
	for _, q := range qs {
		t.row(fmt.Sprintf("%s p%s (ms)", strings.ToUpper(string(metric)), fmtG(math.Round(q*100*1e9)/1e9)), func(m ServerModel) string {
			for _, x := range m.Quantiles[metric] {
				if x.Q == q {
					return rng(x.Range, 1000)
				}
			}
			return "-"
		})
	}
}

// concurrencyRows appends Little's λ·W and the observed concurrency per stage.
func (t *serverRows) concurrencyRows() {
	for _, st := range []slo.Stage{slo.StageTotal, slo.StageQueue, slo.StageRunning} {
		t.row("concurrency "+string(st)+" Little λ·W", func(m ServerModel) string {
			c, ok := m.Concurrency[st]
			return cond(ok, c.Predicted)
		})
		t.row("concurrency "+string(st)+" observed", func(m ServerModel) string {
			c, ok := m.Concurrency[st]
			return cond(ok && c.HasObserved, c.Observed)
		})
	}
}

// costRows appends the cost per million output tokens on both bases.
func (t *serverRows) costRows() {
	t.row("cost per 1M output tokens (throughput)", func(m ServerModel) string {
		if m.Cost == nil {
			return "-"
		}
		return f2(float64(m.Cost.ThroughputBasis))
	})
	t.row("cost per 1M output tokens (goodput)", func(m ServerModel) string {
		if m.Cost == nil || !m.Cost.HasGoodput {
			return "-"
		}
		return rng(m.Cost.GoodputBasis, 1)
	})
}

// cond formats v when ok, "-" otherwise.
func cond(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return f2(v)
}
