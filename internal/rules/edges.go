package rules

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

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
