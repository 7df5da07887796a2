package alertquality

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// InlinedRules are the rules Inline's range queries evaluate for a
// configuration: the flat ones (rules.Options{}), whose windowed series equal
// the hierarchy's at every evaluation (TestHierarchyEqualsFlat, on promtool
// and VictoriaMetrics). Inlined, the hierarchy's levels would nest a
// subquery per term of every level below (a 3-day window: 864 subqueries
// per sum), which Prometheus cannot evaluate within its query timeout.
func InlinedRules(cfg *config.Config) (*rules.RuleFile, error) {
	return rules.Options{}.Generate(cfg)
}

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
	return inline(newRecorded(rf), expr, 0)
}

// newRecorded indexes a rule file's recording rules for inline.
func newRecorded(rf *rules.RuleFile) recorded {
	byRecord := map[string][]rules.Rule{}
	steps := map[string]time.Duration{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				byRecord[r.Record] = append(byRecord[r.Record], r)
				steps[r.Record] = time.Duration(g.Interval)
				if g.Lag > 0 {
					// A long group is replayed at every step, as promtool
					// and vmalert's replay evaluate it: its series at t
					// are then the SLO group's at t − lag (rules'
					// longgroup.go), at every step.
					steps[r.Record] = Interval
				}
			}
		}
	}
	return recorded{byRecord, steps, map[inlineKey]string{}}
}

// recorded is what Inline knows of the rule file: the rules recording each
// series and the evaluation interval of their group (0: the global one).
// done holds the expressions already inlined, by expression and depth: the
// rules of a file read the same recorded series many times over, and
// inlining is a pure function of the two (the depth only decides whether
// the nesting is too deep), so each is parsed and rewritten once.
type recorded struct {
	byRecord map[string][]rules.Rule
	steps    map[string]time.Duration
	done     map[inlineKey]string
}

// inlineKey is one call of inline: an expression at a depth.
type inlineKey struct {
	expr  string
	depth int
}

// splice is one piece of an expression to replace.
type splice struct {
	start, end int
	text       string
}

func inline(rec recorded, expr string, depth int) (string, error) {
	if depth > maxInlineDepth {
		return "", fmt.Errorf("inline %q: recording rules nest deeper than %d", expr, maxInlineDepth)
	}
	if out, ok := rec.done[inlineKey{expr, depth}]; ok {
		return out, nil
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return "", fmt.Errorf("inline: parse %q: %w", expr, err)
	}
	var sels []*parser.VectorSelector
	var ranges []*parser.MatrixSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.MatrixSelector:
			if vs, ok := n.VectorSelector.(*parser.VectorSelector); ok && rec.byRecord[vs.Name] != nil {
				ranges = append(ranges, n)
			}
		case *parser.VectorSelector:
			if rec.byRecord[n.Name] != nil {
				sels = append(sels, n)
			}
		}
		return nil
	})
	var cuts []splice
	for _, ms := range ranges {
		vs := ms.VectorSelector.(*parser.VectorSelector)
		repl, err := replacement(rec, vs, depth)
		if err != nil {
			return "", err
		}
		// A range over a recorded series is the subquery of its rule's
		// expression at the rule group's interval: the samples the rule
		// manager would have recorded, at the subquery's aligned steps.
		step := rec.steps[vs.Name]
		if step <= 0 {
			step = Interval
		}
		text := fmt.Sprintf("(%s)[%s:%s]", repl, model.Duration(ms.Range), model.Duration(step))
		if vs.OriginalOffset != 0 {
			// The range's offset moves the subquery with it (the
			// hierarchy's terms read their level series an offset back).
			text += " offset " + model.Duration(vs.OriginalOffset).String()
		}
		cuts = append(cuts, splice{int(ms.PositionRange().Start), int(ms.PositionRange().End), text})
	}
	for _, vs := range sels {
		if slices.ContainsFunc(ranges, func(ms *parser.MatrixSelector) bool {
			return vs.PosRange.Start >= ms.PositionRange().Start && vs.PosRange.End <= ms.PositionRange().End
		}) {
			continue
		}
		repl, err := replacement(rec, vs, depth)
		if err != nil {
			return "", err
		}
		text := "(" + repl + ")"
		if vs.OriginalOffset != 0 {
			// A recorded series read an offset back (a long group reads
			// the SLO group's this way): the rule's expression at the one
			// step of its group that lies there.
			step := rec.steps[vs.Name]
			if step <= 0 {
				step = Interval
			}
			text = fmt.Sprintf("last_over_time(%s[%s:%s] offset %s)", text, model.Duration(step-time.Millisecond), model.Duration(step), model.Duration(vs.OriginalOffset))
		}
		cuts = append(cuts, splice{int(vs.PosRange.Start), int(vs.PosRange.End), text})
	}
	slices.SortFunc(cuts, func(a, b splice) int { return b.start - a.start })
	out := expr
	for _, c := range cuts {
		out = out[:c.start] + c.text + out[c.end:]
	}
	rec.done[inlineKey{expr, depth}] = out
	return out, nil
}

// replacement is the inlined form of one selector of a recorded series: the
// expressions of the recording rules whose static labels its matchers
// accept, joined with `or`.
func replacement(rec recorded, vs *parser.VectorSelector, depth int) (string, error) {
	var parts []string
	for _, r := range rec.byRecord[vs.Name] {
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
		body, err := inline(rec, r.Expr, depth+1)
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
