package alertquality

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/rules"
)

// maxInlineDepth bounds the recursion of Inline: recording rules that refer
// to each other in a cycle are refused instead of looping.
const maxInlineDepth = 16

// Inline rewrites a PromQL expression so that every selector of a series
// recorded by the rule file is replaced by the recording rule's own
// expression, with the rule's static labels set by label_replace. Evaluated
// at time t, the result equals what Prometheus's rule manager computes at an
// evaluation at t (recording rules of a group are evaluated in order, so a
// rule reads the samples its group recorded at the same t), which lets a
// range query over backfilled scrapes replay the rules at every step.
func Inline(rf *rules.RuleFile, expr string) (string, error) {
	byRecord := map[string][]rules.Rule{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				byRecord[r.Record] = append(byRecord[r.Record], r)
			}
		}
	}
	return inline(byRecord, expr, 0)
}

func inline(byRecord map[string][]rules.Rule, expr string, depth int) (string, error) {
	if depth > maxInlineDepth {
		return "", fmt.Errorf("inline %q: recording rules nest deeper than %d", expr, maxInlineDepth)
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return "", fmt.Errorf("inline: parse %q: %w", expr, err)
	}
	var sels []*parser.VectorSelector
	var inRange bool
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.MatrixSelector:
			if vs, ok := n.VectorSelector.(*parser.VectorSelector); ok && byRecord[vs.Name] != nil {
				inRange = true
			}
		case *parser.VectorSelector:
			if byRecord[n.Name] != nil {
				sels = append(sels, n)
			}
		}
		return nil
	})
	if inRange {
		return "", fmt.Errorf("inline %q: a range over a recorded series cannot be inlined", expr)
	}
	slices.SortFunc(sels, func(a, b *parser.VectorSelector) int { return int(b.PosRange.Start - a.PosRange.Start) })
	out := expr
	for _, vs := range sels {
		repl, err := replacement(byRecord, vs, depth)
		if err != nil {
			return "", err
		}
		out = out[:vs.PosRange.Start] + "(" + repl + ")" + out[vs.PosRange.End:]
	}
	return out, nil
}

// replacement is the inlined form of one selector of a recorded series: the
// expressions of the recording rules whose static labels its matchers
// accept, joined with `or`.
func replacement(byRecord map[string][]rules.Rule, vs *parser.VectorSelector, depth int) (string, error) {
	var parts []string
	for _, r := range byRecord[vs.Name] {
		ok := true
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				continue
			}
			v, static := r.Labels[m.Name]
			if !static {
				return "", fmt.Errorf("inline %s: matcher on %q, which rule %s does not set", vs, m.Name, r.Record)
			}
			ok = ok && m.Matches(v)
		}
		if !ok {
			continue
		}
		body, err := inline(byRecord, r.Expr, depth+1)
		if err != nil {
			return "", err
		}
		body = "(" + body + ")"
		for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
			body = fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", body, k, r.Labels[k])
		}
		parts = append(parts, body)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("inline %s: no recording rule matches", vs)
	}
	return strings.Join(parts, " or "), nil
}
