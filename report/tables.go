package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BenchTable lays a sweep out as a table: one column per file in order of
// offered load (the knee marked), one row per number. Latencies are in ms.
func BenchTable(s Sweep) Table {
	t := Table{Title: "vllm bench serve results (per request, exact; vLLM's definitions)", Header: []string{"offered load"}}
	for i := range s.Points {
		h := s.LoadLabel(i)
		if i == s.Knee {
			h += " (knee)"
		}
		t.Header = append(t.Header, h)
	}
	row := func(name string, cell func(BenchResult) string) {
		r := []string{name}
		for _, p := range s.Points {
			r = append(r, cell(p))
		}
		t.Rows = append(t.Rows, r)
	}
	row("file", func(p BenchResult) string { return baseName(p.Name) })
	row("successful requests", func(p BenchResult) string { return itoa(p.Completed) })
	row("failed requests", func(p BenchResult) string { return itoa(p.Failed) })
	row("duration (s)", func(p BenchResult) string { return f2(p.Duration) })
	row("request throughput (req/s)", func(p BenchResult) string { return f2(p.RequestThroughput) })
	row("output token throughput (tok/s)", func(p BenchResult) string { return f2(p.OutputThroughput) })
	row("total token throughput (tok/s)", func(p BenchResult) string { return f2(p.TotalTokenThroughput) })
	hasGoodput := len(s.Points) > 0 && s.Points[0].Goodput != nil
	if hasGoodput {
		row("goodput "+objectivesText(s.Points[0].Goodput.Objectives)+" (req/s)", func(p BenchResult) string { return f2(p.Goodput.RequestsPerSecond) })
		row("goodput (tok/s)", func(p BenchResult) string { return f2(p.Goodput.TokensPerSecond) })
		row("good requests", func(p BenchResult) string { return fmt.Sprintf("%d of %d", p.Goodput.GoodRequests, p.Completed) })
		row("good tokens", func(p BenchResult) string { return fmt.Sprintf("%d of %d", p.Goodput.GoodTokens, p.TotalOutput) })
	}
	pcts := percentilesOf(s.Points)
	for _, m := range []struct {
		name string
		get  func(BenchResult) Stat
	}{
		{"TTFT", func(p BenchResult) Stat { return p.TTFT }},
		{"TPOT", func(p BenchResult) Stat { return p.TPOT }},
		{"ITL", func(p BenchResult) Stat { return p.ITL }},
		{"E2EL", func(p BenchResult) Stat { return p.E2EL }},
	} {
		row(m.name+" mean (ms)", func(p BenchResult) string { return statCell(m.get(p), -1) })
		for _, q := range pcts {
			row(fmt.Sprintf("%s p%s (ms)", m.name, fmtG(q)), func(p BenchResult) string { return statCell(m.get(p), q) })
		}
	}
	row("concurrency measured (mean)", func(p BenchResult) string {
		if !p.Concurrency.HasMeasured {
			return "-"
		}
		return f2(p.Concurrency.Measured)
	})
	row("concurrency peak", func(p BenchResult) string {
		if !p.Concurrency.HasMeasured {
			return "-"
		}
		return itoa(p.Concurrency.Peak)
	})
	row("concurrency Little λ·W", func(p BenchResult) string { return f2(p.Concurrency.Little) })
	if len(s.Points) > 0 && s.Points[0].Cost != nil {
		row("cost per 1M output tokens (throughput)", func(p BenchResult) string { return f2(float64(p.Cost.ThroughputBasis)) })
		if hasGoodput {
			row("cost per 1M output tokens (goodput)", func(p BenchResult) string { return f2(float64(p.Cost.GoodputBasis)) })
		}
	}
	if s.Knee >= 0 && len(s.Points) > 1 {
		t.Notes = append(t.Notes, "knee: "+s.LoadLabel(s.Knee)+", the most goodput; "+s.KneeReason)
	}
	if !hasGoodput {
		t.Notes = append(t.Notes, "no --goodput objectives: no goodput and no knee")
	}
	for _, p := range s.Points {
		for _, n := range p.Notes {
			t.Notes = append(t.Notes, baseName(p.Name)+": "+n)
		}
	}
	return t
}

// statCell formats the mean (q < 0) or percentile q of a stat in ms.
func statCell(s Stat, q float64) string {
	if s.Count == 0 {
		return "-"
	}
	if q < 0 {
		return f2(s.Mean * 1000)
	}
	v, ok := s.Value(q)
	if !ok {
		return "-"
	}
	return f2(v * 1000)
}

// percentilesOf lists the percentiles (in percent) computed for any point.
func percentilesOf(points []BenchResult) []float64 {
	var out []float64
	for _, p := range points {
		for _, st := range []Stat{p.TTFT, p.TPOT, p.ITL, p.E2EL} {
			for _, x := range st.Percentiles {
				v := math.Round(x.Q*100*1e9) / 1e9
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// objectivesText writes objectives as vLLM's flag does: "ttft:500 tpot:50".
func objectivesText(objs []Objective) string {
	var parts []string
	for _, o := range objs {
		parts = append(parts, o.Metric+":"+fmtG(o.Ms))
	}
	return strings.Join(parts, " ")
}

// baseName is the last element of a path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// serverMetrics are the histogram metrics shown, in order.
var serverMetrics = []slo.Metric{slo.TTFT, slo.TPOT, slo.ITL, slo.E2E, slo.Queue, slo.Prefill, slo.Decode, slo.Inference}

// ServerTable lays histogram results out as a table, one column per model:
// latencies in ms as "estimate [lower, upper]" (a single number when exact).
func ServerTable(models []ServerModel, objs []Objective) Table {
	t := Table{Title: "vLLM /metrics histograms (brackets hold the truth; estimates inside them)", Header: []string{""}}
	for _, m := range models {
		t.Header = append(t.Header, m.Target+"/"+m.Model)
	}
	row := func(name string, cell func(ServerModel) string) {
		r := []string{name}
		for _, m := range models {
			r = append(r, cell(m))
		}
		t.Rows = append(t.Rows, r)
	}
	row("window (s)", func(m ServerModel) string { return f2(m.Seconds) })
	row("finished requests", func(m ServerModel) string { return fmtG(m.Requests[slo.E2E]) })
	row("request throughput (req/s)", func(m ServerModel) string { return cond(m.HasRequestRate, m.RequestsPerSecond) })
	row("output token throughput (tok/s)", func(m ServerModel) string { return cond(m.HasThroughput, m.OutputThroughput) })
	row("prompt token throughput (tok/s)", func(m ServerModel) string { return cond(m.HasThroughput, m.PromptThroughput) })
	if len(objs) > 0 {
		keys := []string{slo.AllKey}
		for _, o := range objs {
			k := o.Metric
			if k == "e2el" {
				k = string(slo.E2E)
			}
			keys = append(keys, k)
		}
		for _, k := range keys {
			row("attainment "+k, func(m ServerModel) string {
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
		row("goodput "+objectivesText(objs)+" (req/s)", func(m ServerModel) string {
			if m.Goodput == nil {
				return "-"
			}
			return rng(m.Goodput.RequestsPerSecond, 1)
		})
		row("goodput (tok/s)", func(m ServerModel) string {
			if m.Goodput == nil || !m.Goodput.HasTokens {
				return "-"
			}
			return rng(m.Goodput.TokensPerSecond, 1)
		})
	}
	for _, metric := range serverMetrics {
		var qs []float64
		for _, m := range models {
			for _, q := range m.Quantiles[metric] {
				if !slices.Contains(qs, q.Q) {
					qs = append(qs, q.Q)
				}
			}
		}
		slices.Sort(qs)
		for _, q := range qs {
			row(fmt.Sprintf("%s p%s (ms)", strings.ToUpper(string(metric)), fmtG(math.Round(q*100*1e9)/1e9)), func(m ServerModel) string {
				for _, x := range m.Quantiles[metric] {
					if x.Q == q {
						return rng(x.Range, 1000)
					}
				}
				return "-"
			})
		}
	}
	for _, st := range []slo.Stage{slo.StageTotal, slo.StageQueue, slo.StageRunning} {
		row("concurrency "+string(st)+" Little λ·W", func(m ServerModel) string {
			c, ok := m.Concurrency[st]
			return cond(ok, c.Predicted)
		})
		row("concurrency "+string(st)+" observed", func(m ServerModel) string {
			c, ok := m.Concurrency[st]
			return cond(ok && c.HasObserved, c.Observed)
		})
	}
	if len(models) > 0 && models[0].Cost != nil {
		row("cost per 1M output tokens (throughput)", func(m ServerModel) string {
			if m.Cost == nil {
				return "-"
			}
			return f2(float64(m.Cost.ThroughputBasis))
		})
		row("cost per 1M output tokens (goodput)", func(m ServerModel) string {
			if m.Cost == nil || !m.Cost.HasGoodput {
				return "-"
			}
			return rng(m.Cost.GoodputBasis, 1)
		})
	}
	t.Notes = append(t.Notes, "quantile brackets use nearest rank (the ceil(q·n)-th request); estimates are the slo package's default estimator")
	return t
}

// cond formats v when ok, "-" otherwise.
func cond(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return f2(v)
}

// CompareTable lays comparisons out: client, server and their difference, ms.
func CompareTable(cs []Comparison) Table {
	t := Table{Title: "client (vllm bench serve) against server (vLLM histograms)",
		Header: []string{"", "client (ms)", "server (ms)", "client − server (ms)"}}
	for _, c := range cs {
		for _, r := range c.Rows {
			name := fmt.Sprintf("%s %s/%s %s p%s", baseName(c.Bench), c.Target, c.Model, strings.ToUpper(string(r.Metric)), fmtG(math.Round(r.Q*100*1e9)/1e9))
			t.Rows = append(t.Rows, []string{name, f2(r.Client * 1000), rng(r.Server, 1000), rng(r.Difference, 1000)})
		}
	}
	t.Notes = append(t.Notes, "the difference is time outside vLLM's engine (network, gateway, HTTP server, client queueing), which its histograms cannot see")
	return t
}
