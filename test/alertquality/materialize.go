package alertquality

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// materializable reports whether a recording rule's series may be stored
// before the harness inlines the rest, given its expression inlined over
// the rules not stored yet: the per-server series (record names
// "server:...", read over a few evaluations by the finisher bounds) and
// every rule whose inlined expression reads raw series over at most
// Prometheus's lookback and recorded series at one evaluation only (ranges
// and subqueries shorter than an interval; a rule without a window label,
// stored series over up to storedReach): the per-interval ledger and the
// bound on the requests past their first token. The windows are not:
// stored, each would evaluate the ledger at every instant of its window
// again, where inlined over the stored ledger it sums the ledger's samples.
//
// Stored at the group's evaluation instants (range queries at the scrape
// interval from the run's first scrape, on the 15 s grid), such a series
// reads the same there as its inlined expression: Inline turns a read x[r]
// into the subquery (x)[r:15s], whose instants are the same grid, a bare
// read into x's expression at the reader's instant, which readAtEvaluation
// matches, and before a run's first scrape both are empty (runSpacing).
func materializable(r rules.Rule, inlined string, stored map[string]bool) (bool, error) {
	if strings.HasPrefix(r.Record, "server:") {
		return true, nil
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(inlined)
	if err != nil {
		return false, fmt.Errorf("materialize %s: %w", r.Record, err)
	}
	oneEvaluation := true
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.MatrixSelector:
			limit := lookback
			if vs, ok := n.VectorSelector.(*parser.VectorSelector); ok && stored[vs.Name] {
				limit = Interval - time.Millisecond
				if r.Labels["window"] == "" {
					limit = storedReach
				}
			}
			oneEvaluation = oneEvaluation && n.Range <= limit
		case *parser.SubqueryExpr:
			oneEvaluation = oneEvaluation && n.Range < Interval
		}
		return nil
	})
	return oneEvaluation, nil
}

// storedReach is the longest range over a stored series that a rule
// without a window may read and still be stored: the bound on the requests
// past their first token (model_name:vllm_slo_streaming_requests_upper:sum)
// sums the stored ledger over look-backs up to an hour, once per
// evaluation; inlined, every window would evaluate those sums again at
// each of its reads. A window's rules stay inlined.
const storedReach = time.Hour

// lookback is Prometheus's lookback, the longest range the ledger's reads
// of a raw counter's latest sample take (rules/lookback.go).
const lookback = 5 * time.Minute

// StartPrometheusWith is StartPrometheus for the queries of the rule files
// rfs, one per run: stage by stage, it evaluates each run's materializable
// recording rules over that run's scrapes (range queries at the scrape
// interval, the group's evaluation instants), backfills their results
// beside the scrapes and restarts Prometheus on them, until no rule left is
// materializable (a rule that reads a series stored at this stage is at
// the next). It returns each rule file without the stored rules and with
// their bare reads made reads at one evaluation (readAtEvaluation), for
// Inline: what Inline makes of a query over it is then what it made of the
// same query over the whole file. The runs lie runSpacing apart, so one
// run's stored series never reach another's queries.
func StartPrometheusWith(dir string, runs []*Run, rfs []*rules.RuleFile) (*Prometheus, []*rules.RuleFile, error) {
	if len(rfs) != len(runs) {
		return nil, nil, fmt.Errorf("materialize: %d rule files for %d runs", len(rfs), len(runs))
	}
	prom, err := StartPrometheus(dir, runs)
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	stored := map[string]bool{}
	for stage := 0; ; stage++ {
		rest, recorded, n, err := prom.materialize(runs, rfs, stored)
		if err != nil {
			prom.Stop()
			return nil, nil, err
		}
		if n == 0 {
			return prom, rfs, nil
		}
		prom.Stop()
		err = backfill(dir, data, fmt.Sprintf("recorded%d-", stage), len(runs), func(i int, w io.Writer) error {
			_, err := recorded[i].WriteTo(w)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if prom, err = StartPrometheusOn(dir, data, "global: {}\n", 30*time.Second); err != nil {
			return nil, nil, err
		}
		rfs = rest
	}
}

// materialize evaluates the materializable rules of every run (one stage)
// and returns the rule files without them, their bare reads made reads at
// one evaluation, each run's results as OpenMetrics text and how many
// rules it stored; it adds the records it stores to stored, the records
// earlier stages stored. A record's rules are stored together or not at all: Inline replaces a
// read of a record by all of its rules, so a record half stored would be
// read half.
func (p *Prometheus) materialize(runs []*Run, rfs []*rules.RuleFile, stored map[string]bool) ([]*rules.RuleFile, []*bytes.Buffer, int, error) {
	n := 0
	var stores []map[string]bool
	decided := map[decisionKey]bool{}
	recorded := make([]*bytes.Buffer, len(rfs))
	rest := make([]*rules.RuleFile, len(rfs))
	for i, rf := range rfs {
		shift := time.Duration(i) * runSpacing
		start, end := runs[i].Scrapes[0].At.Add(shift), runs[i].Scrapes[len(runs[i].Scrapes)-1].At.Add(shift)
		inlined, store, err := storedRecords(rf, stored, decided)
		if err != nil {
			return nil, nil, 0, err
		}
		recorded[i] = &bytes.Buffer{}
		stores = append(stores, store)
		rest[i] = &rules.RuleFile{Comment: rf.Comment}
		for _, g := range rf.Groups {
			kept := g
			kept.Rules = nil
			for j, r := range g.Rules {
				if !store[r.Record] {
					r.Expr, err = readAtEvaluation(r.Expr, store)
					if err != nil {
						return nil, nil, 0, fmt.Errorf("materialize %s%s: %w", r.Record, r.Alert, err)
					}
					kept.Rules = append(kept.Rules, r)
					continue
				}
				r.Expr = inlined[g.Name][j]
				if _, err := p.writeRange(recorded[i], r, start, end); err != nil {
					return nil, nil, 0, fmt.Errorf("materialize %s: %w", r.Record, err)
				}
				n++
			}
			rest[i].Groups = append(rest[i].Groups, kept)
		}
	}
	for _, b := range recorded {
		b.WriteString("# EOF\n")
	}
	// Added after every run's decision: each decides over what earlier
	// stages stored, and a record one run stores is a selector in the
	// others' inlined expressions only where they store it too.
	for _, store := range stores {
		maps.Copy(stored, store)
	}
	return rest, recorded, n, nil
}

// decisionKey is what materializable decides on within one stage: a
// rule's record and window and its inlined expression.
type decisionKey struct{ record, window, inlined string }

// storedRecords decides which records of rf this stage stores: those all
// of whose rules are materializable. It returns every recording rule's
// expression inlined over rf, by group name and position. decided holds
// the stage's decisions so far, for the runs that share a rule file: the
// parse of each inlined expression was most of the harness's CPU in a stage.
func storedRecords(rf *rules.RuleFile, stored map[string]bool, decided map[decisionKey]bool) (map[string][]string, map[string]bool, error) {
	inlined := map[string][]string{}
	ok := map[string]bool{}
	rec := newRecorded(rf)
	for _, g := range rf.Groups {
		exprs := make([]string, len(g.Rules))
		for j, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			expr, err := inline(rec, r.Expr, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("materialize %s: %w", r.Record, err)
			}
			exprs[j] = expr
			key := decisionKey{r.Record, r.Labels["window"], expr}
			m, seen := decided[key]
			if !seen {
				if m, err = materializable(r, expr, stored); err != nil {
					return nil, nil, err
				}
				decided[key] = m
			}
			if prev, seen := ok[r.Record]; !seen || prev {
				ok[r.Record] = m
			}
		}
		inlined[g.Name] = exprs
	}
	for rec, m := range ok {
		if !m {
			delete(ok, rec)
		}
	}
	return inlined, ok, nil
}

// readAtEvaluation rewrites every bare read of a stored series in expr,
// x{…} or x{…} offset d, as last_over_time(x{…}[14s999ms]) (offset d):
// the sample recorded at the reader's evaluation, or nothing. That is what
// Prometheus's rule manager reads there, since a series its rule stops
// returning gets a staleness marker, and what Inline's expression of x
// returns; a bare read of the backfilled series, which has no staleness
// markers, would read a sample up to 5 minutes old instead.
func readAtEvaluation(expr string, stored map[string]bool) (string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", expr, err)
	}
	var cuts []splice
	parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !stored[vs.Name] {
			return nil
		}
		if len(path) > 0 {
			if _, inRange := path[len(path)-1].(*parser.MatrixSelector); inRange {
				return nil
			}
		}
		sel := *vs
		sel.OriginalOffset = 0
		text := fmt.Sprintf("last_over_time(%s[%s])", sel.String(), model.Duration(Interval-time.Millisecond))
		if vs.OriginalOffset != 0 {
			text = fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel.String(), model.Duration(Interval-time.Millisecond), model.Duration(vs.OriginalOffset))
		}
		cuts = append(cuts, splice{int(vs.PosRange.Start), int(vs.PosRange.End), text})
		return nil
	})
	slices.SortFunc(cuts, func(a, b splice) int { return b.start - a.start })
	for _, c := range cuts {
		expr = expr[:c.start] + c.text + expr[c.end:]
	}
	return expr, nil
}

// writeRange evaluates r's expression from start to end at the scrape
// interval and writes every sample as an OpenMetrics line of r's series
// (its record name, the result's labels, r's static labels over them),
// each series in time order; it returns how many it wrote.
func (p *Prometheus) writeRange(w io.Writer, r rules.Rule, start, end time.Time) (int, error) {
	qr, err := p.queryRange(r.Expr, start, end)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, res := range qr.Data.Result {
		ls := maps.Clone(res.Metric)
		delete(ls, "__name__")
		maps.Copy(ls, r.Labels)
		var b strings.Builder
		b.WriteString(r.Record)
		b.WriteByte('{')
		for j, k := range slices.Sorted(maps.Keys(ls)) {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%s", k, strconv.Quote(ls[k]))
		}
		b.WriteByte('}')
		for _, v := range res.Values {
			ts, ok := v[0].(float64)
			s, ok2 := v[1].(string)
			if !ok || !ok2 {
				return n, fmt.Errorf("query_range: sample %v", v)
			}
			fmt.Fprintf(w, "%s %s %s\n", b.String(), s, strconv.FormatFloat(ts, 'f', 3, 64))
			n++
		}
	}
	return n, nil
}
