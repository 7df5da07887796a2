package benchreport

import (
	"fmt"
	"math"
	"slices"
	"strings"
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
