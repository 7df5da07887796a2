package rules

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Default bucket edges of vLLM's latency histograms in seconds (vLLM's
// vllm/v1/metrics/loggers.py; docs/design.md lists them).
// Rules cannot read a scrape's buckets, so a threshold that is not one of
// these edges is rounded down to one of them.
var (
	ttftEdges     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tokenGapEdges = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	requestEdges  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

// defaultEdges returns vLLM's default bucket edges of a latency metric.
func defaultEdges(m slo.Metric) []float64 {
	switch m {
	case slo.TTFT:
		return ttftEdges
	case slo.TPOT, slo.ITL:
		return tokenGapEdges
	default:
		return requestEdges
	}
}

// edgeChoice is the bucket edge whose cumulative count stands for the
// requests meeting a threshold.
type edgeChoice struct {
	// Edge is the chosen edge in seconds; meaningless when None.
	Edge float64
	// Exact is true when the threshold is the edge itself.
	Exact bool
	// None is true when the threshold is below the smallest edge: no request
	// can be shown to meet it.
	None bool
}

// conservativeEdge picks the largest edge <= threshold. Counting the requests
// up to that edge as good can only under-count good requests, so the rules
// never hide a breach; it is exact when the threshold is an edge.
func conservativeEdge(edges []float64, threshold time.Duration) edgeChoice {
	best := edgeChoice{None: true}
	for _, e := range edges {
		ns := time.Duration(math.Round(e * 1e9))
		if ns > threshold {
			break
		}
		best = edgeChoice{Edge: e, Exact: ns == threshold}
	}
	return best
}

// leForms returns the spellings an `le` label can have for an edge: Go's
// shortest form ("1", "0.5", "1e+06"), as Prometheus 2.x stores what the
// target sent from Go clients, and the float form ("1.0", "2560.0"), which
// Python clients send and Prometheus 3.x normalises every `le` to.
func leForms(edge float64) []string {
	g := strconv.FormatFloat(edge, 'g', -1, 64)
	if strings.ContainsAny(g, ".eEn") {
		return []string{g}
	}
	return []string{g, g + ".0"}
}

// leRegex is the regular expression matching every spelling of an edge's
// `le` value, anchored implicitly as PromQL anchors label regexes.
func leRegex(edge float64) string {
	forms := leForms(edge)
	quoted := make([]string, len(forms))
	for i, f := range forms {
		quoted[i] = regexp.QuoteMeta(f)
	}
	return strings.Join(quoted, "|")
}

// formatFloat writes a number for PromQL and labels in its shortest form,
// after rounding away float noise such as 14.400000000000002.
func formatFloat(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		r = v
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
