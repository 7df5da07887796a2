package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestHistogramsMissingCoversEveryRead checks, for every configuration
// case, that VLLMSLOHistogramsMissing watches exactly the histogram
// families whose classic series (_bucket, _count) some rule reads, found
// with Prometheus's parser, and that each is watched as the bare name
// (the native histogram) unless its _count.
func TestHistogramsMissingCoversEveryRead(t *testing.T) {
	for _, c := range configCases {
		t.Run(c.name, func(t *testing.T) {
			f := generateCase(t, c.yaml)
			var read []string
			var alert *Rule
			for _, g := range f.Groups {
				for i, r := range g.Rules {
					if r.Alert == AlertHistogramsMissing {
						alert = &g.Rules[i]
						continue
					}
					parser.Inspect(parseExpr(t, r.Expr), func(n parser.Node, _ []parser.Node) error {
						if vs, ok := n.(*parser.VectorSelector); ok {
							for _, suffix := range []string{"_bucket", "_count"} {
								if fam, ok := strings.CutSuffix(vs.Name, suffix); ok {
									read = append(read, fam)
								}
							}
						}
						return nil
					})
				}
			}
			slices.Sort(read)
			read = slices.Compact(read)
			if alert == nil {
				t.Fatalf("no %s alert (rules read %v)", AlertHistogramsMissing, read)
			}
			var watched []string
			parser.Inspect(parseExpr(t, alert.Expr), func(n parser.Node, _ []parser.Node) error {
				if be, ok := n.(*parser.BinaryExpr); ok && be.Op == parser.LUNLESS {
					native, classic := be.LHS.(*parser.VectorSelector), be.RHS.(*parser.VectorSelector)
					if classic.Name != native.Name+"_count" {
						t.Errorf("%s unless %s: not a family and its _count", native.Name, classic.Name)
					}
					watched = append(watched, native.Name)
				}
				return nil
			})
			slices.Sort(watched)
			if len(read) == 0 || !slices.Equal(read, watched) {
				t.Errorf("the rules read the classic series of %v, the alert watches %v", read, watched)
			}
		})
	}
}
