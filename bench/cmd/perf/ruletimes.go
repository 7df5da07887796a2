package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// ruleTime is one rule's last evaluation time, as Prometheus reports it in
// /api/v1/rules.
type ruleTime struct {
	group, name, kind string
	seconds           float64
}

// ruleKind sorts a recorded series into the part of the rules it belongs
// to, by its name: the per-interval ledger, the hierarchy's levels, the
// long windows' sums from the levels, and the windows' own rules.
func ruleKind(name string) string {
	switch {
	case strings.Contains(name, ":interval"):
		if strings.Contains(name, "_sum") {
			return "levels"
		}
		if strings.Contains(name, "_over") {
			return "window sums"
		}
		return "per-interval"
	case name == "":
		return "alerts"
	}
	return "windows"
}

// ruleTimes reads every rule's last evaluation time from Prometheus's
// /api/v1/rules.
func ruleTimes(base string) ([]ruleTime, error) {
	resp, err := http.Get(base + "/api/v1/rules")
	if err != nil {
		return nil, fmt.Errorf("rules API: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name           string  `json:"name"`
					Type           string  `json:"type"`
					EvaluationTime float64 `json:"evaluationTime"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("rules API: decode: %w", err)
	}
	var out []ruleTime
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			name := r.Name
			if r.Type == "alerting" {
				name = ""
			}
			out = append(out, ruleTime{group: g.Name, name: r.Name, kind: ruleKind(name), seconds: r.EvaluationTime})
		}
	}
	return out, nil
}

// printRuleTimes writes where a group's evaluation time went: per kind of
// rule the rules' count and summed time, then the slowest rules.
func printRuleTimes(w io.Writer, rts []ruleTime, top int) {
	type part struct {
		group, kind string
		n           int
		s           float64
	}
	var parts []part
	for _, r := range rts {
		i := slices.IndexFunc(parts, func(p part) bool { return p.group == r.group && p.kind == r.kind })
		if i < 0 {
			parts = append(parts, part{group: r.group, kind: r.kind})
			i = len(parts) - 1
		}
		parts[i].n++
		parts[i].s += r.seconds
	}
	fmt.Fprintln(w, "| group | rules | count | last evaluation ms, summed |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, p := range parts {
		fmt.Fprintf(w, "| %s | %s | %d | %.1f |\n", p.group, p.kind, p.n, p.s*1e3)
	}
	sorted := slices.Clone(rts)
	slices.SortFunc(sorted, func(a, b ruleTime) int { return cmp.Compare(b.seconds, a.seconds) })
	for _, r := range sorted[:min(top, len(sorted))] {
		fmt.Fprintf(w, "  %.1f ms  %s  %s\n", r.seconds*1e3, r.group, r.name)
	}
}

// queryTimes times every rule of a group run alone as an instant query at
// one instant (the engine's own clock, now), reps times each, and returns
// each rule's fastest wall time: the per-rule cost vmalert does not report.
// nocache=1 keeps VictoriaMetrics from answering a repetition from its
// rollup cache (Prometheus ignores the parameter).
func queryTimes(base string, g rules.Group, reps int) ([]ruleTime, error) {
	at := strconv.FormatInt(time.Now().Unix(), 10)
	var out []ruleTime
	for _, r := range g.Rules {
		best := math.Inf(1)
		for range reps {
			began := time.Now()
			var data json.RawMessage
			if err := queryAPI(base, url.Values{"query": {r.Expr}, "time": {at}, "nocache": {"1"}}, &data); err != nil {
				return nil, fmt.Errorf("group %s: %w", g.Name, err)
			}
			best = min(best, time.Since(began).Seconds())
		}
		out = append(out, ruleTime{group: g.Name, name: r.Record, kind: ruleKind(r.Record), seconds: best})
	}
	return out, nil
}

// printQueryTimes prints queryTimes of the SLO group by kind, with its
// slowest rules (nothing when reps is 0).
func printQueryTimes(base string, g rules.Group, reps int) error {
	if reps <= 0 {
		return nil
	}
	qts, err := queryTimes(base, g, reps)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "each rule of %s alone as an instant query (fastest of %d):\n", g.Name, reps)
	printRuleTimes(os.Stderr, qts, 15)
	return nil
}
