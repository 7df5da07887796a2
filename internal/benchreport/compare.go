package benchreport

import (
	"fmt"
	"math"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// CompareRow puts one client percentile beside the server's histogram
// quantile at the same level.
type CompareRow struct {
	// Metric is ttft or e2e; Q the quantile as a fraction.
	Metric slo.Metric `json:"metric"`
	Q      float64    `json:"q"`
	// Client is the bench file's percentile (seconds), exact.
	Client float64 `json:"client_s"`
	// Server is the histogram's estimate with its bracket.
	Server Range `json:"server_s"`
	// Difference is Client − Server: the time spent outside vLLM's engine
	// (network, gateway, HTTP server, client queueing). Its bounds follow
	// from the bracket: [Client − Server.Upper, Client − Server.Lower].
	Difference Range `json:"difference_s"`
}

// Comparison is the client-against-server table for one bench file and one
// server model.
type Comparison struct {
	Bench  string       `json:"bench"`
	Target string       `json:"target"`
	Model  string       `json:"model"`
	Rows   []CompareRow `json:"rows"`
}

// Compare pairs a bench result with a server table. The client's
// percentiles are read by the bench's rank rule, the server's by nearest
// rank in a bracket; with many requests the two rules differ by less than
// one request's rank.
func Compare(b BenchResult, s ServerModel) Comparison {
	c := Comparison{Bench: b.Name, Target: s.Target, Model: s.Model}
	for _, m := range []struct {
		metric slo.Metric
		stat   Stat
	}{{slo.TTFT, b.TTFT}, {slo.E2E, b.E2EL}} {
		for _, sq := range s.Quantiles[m.metric] {
			v, ok := m.stat.Value(sq.Q * 100)
			if !ok {
				continue
			}
			c.Rows = append(c.Rows, CompareRow{Metric: m.metric, Q: sq.Q, Client: v, Server: sq.Range,
				Difference: Range{
					Estimate: Num(v - float64(sq.Estimate)),
					Lower:    Num(v - float64(sq.Upper)),
					Upper:    Num(v - float64(sq.Lower)),
				}})
		}
	}
	return c
}

// pairs chooses the server models to compare a bench file with: those named
// as the bench's model, else all of them.
func pairs(b BenchResult, servers []ServerModel) []ServerModel {
	var named []ServerModel
	for _, s := range servers {
		if s.Model == b.ModelID {
			named = append(named, s)
		}
	}
	if len(named) > 0 {
		return named
	}
	return servers
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
