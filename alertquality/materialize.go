package alertquality

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/rules"
)

// materialized reports whether a recording rule's series is stored before
// the harness inlines the rest: the per-server series (record names
// "server:..."), which read raw series and each other only (the finisher
// bounds read the per-server samples recorded intervals before, inlined
// when they are stored) and which every reader reads at one evaluation
// (last_over_time over the group interval less a millisecond). Stored at
// the group's evaluation instants, such a series reads the same there as
// its inlined expression (Inline turns the range into a subquery at the
// same instants), and it is evaluated once per run instead of once per
// query: these are most of the per-interval ledger's reads, and inlined
// they multiplied the Prometheus side's time.
func materialized(r rules.Rule) bool {
	return r.Record != "" && strings.HasPrefix(r.Record, "server:")
}

// StartPrometheusWith is StartPrometheus for the queries of the rule files
// rfs, one per run: it evaluates each run's materialized recording rules
// over that run's scrapes (range queries at the scrape interval, the
// group's evaluation instants), backfills their results beside the
// scrapes, restarts Prometheus on both, and returns each rule file without
// those rules, for Inline: what Inline makes of a query over it is then
// what it made of the same query over the whole file. The runs lie
// runSpacing apart and the stored series are read within one evaluation,
// so one run's never reaches another's queries.
func StartPrometheusWith(dir string, runs []*Run, rfs []*rules.RuleFile) (*Prometheus, []*rules.RuleFile, error) {
	if len(rfs) != len(runs) {
		return nil, nil, fmt.Errorf("materialize: %d rule files for %d runs", len(rfs), len(runs))
	}
	prom, err := StartPrometheus(dir, runs)
	if err != nil {
		return nil, nil, err
	}
	om := filepath.Join(dir, "recorded.om")
	rest, n, err := prom.materialize(om, runs, rfs)
	prom.Stop()
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if n > 0 {
		if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("promtool tsdb create-blocks-from openmetrics: %w\n%s", err, out)
		}
	}
	p, err := StartPrometheusOn(dir, data, "global: {}\n", 30*time.Second)
	return p, rest, err
}

// materialize writes the materialized rules' results of every run to the
// OpenMetrics file om and returns the rule files without them and how many
// samples it wrote.
func (p *Prometheus) materialize(om string, runs []*Run, rfs []*rules.RuleFile) ([]*rules.RuleFile, int, error) {
	f, err := os.Create(om)
	if err != nil {
		return nil, 0, fmt.Errorf("materialize: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	n := 0
	rest := make([]*rules.RuleFile, len(rfs))
	for i, rf := range rfs {
		shift := time.Duration(i) * runSpacing
		start, end := runs[i].Scrapes[0].At.Add(shift), runs[i].Scrapes[len(runs[i].Scrapes)-1].At.Add(shift)
		rest[i] = &rules.RuleFile{Comment: rf.Comment}
		for _, g := range rf.Groups {
			kept := rules.Group{Name: g.Name, Interval: g.Interval, Comment: g.Comment}
			for _, r := range g.Rules {
				if !materialized(r) {
					kept.Rules = append(kept.Rules, r)
					continue
				}
				// A per-server series read by another is stored beside
				// it, not before: the reader's reads of it are inlined.
				expr, err := Inline(rf, r.Expr)
				if err != nil {
					return nil, 0, fmt.Errorf("materialize %s: %w", r.Record, err)
				}
				inlined := r
				inlined.Expr = expr
				k, err := p.writeRange(bw, inlined, start, end)
				if err != nil {
					return nil, 0, fmt.Errorf("materialize %s: %w", r.Record, err)
				}
				n += k
			}
			rest[i].Groups = append(rest[i].Groups, kept)
		}
	}
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return nil, 0, fmt.Errorf("materialize: %w", err)
	}
	return rest, n, f.Close()
}

// writeRange evaluates r's expression from start to end at the scrape
// interval and writes every sample as an OpenMetrics line of r's series
// (its record name, the result's labels, r's static labels over them),
// each series in time order; it returns how many it wrote.
func (p *Prometheus) writeRange(w io.Writer, r rules.Rule, start, end time.Time) (int, error) {
	form := url.Values{
		"query": {r.Expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.Itoa(int(Interval.Seconds()))},
	}
	resp, err := http.PostForm(p.URL+"/api/v1/query_range", form)
	if err != nil {
		return 0, fmt.Errorf("query_range: %w", err)
	}
	defer resp.Body.Close()
	var qr queryResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&qr); err != nil {
		return 0, fmt.Errorf("query_range: decode: %w", err)
	}
	if qr.Status != "success" {
		return 0, fmt.Errorf("query_range: %s", qr.Error)
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
