package alertquality

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// runSpacing separates the runs in one backfilled TSDB: run i's samples are
// shifted by i × runSpacing, more than any scenario lasts plus its longest
// window (3d, the ticket of a 30d period), so that no window of one run
// reaches into another.
const runSpacing = 4 * 24 * time.Hour

// sample is one value of one series at a time, in milliseconds.
type sample struct {
	ms int64
	v  float64
}

// WriteOpenMetrics writes every successful scrape of a run as OpenMetrics
// text with timestamps, shifted by shift, one series after the other (each
// in time order), for `promtool tsdb create-blocks-from openmetrics`.
func WriteOpenMetrics(w io.Writer, run *Run, shift time.Duration) error {
	bw := bufio.NewWriter(w)
	series, err := runSeries(run, shift)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(series)) {
		for _, s := range series[name] {
			fmt.Fprintf(bw, "%s %s %s\n", name, strconv.FormatFloat(s.v, 'g', -1, 64),
				strconv.FormatFloat(float64(s.ms)/1000, 'f', 3, 64))
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// backfill writes n OpenMetrics files under dir, the i-th by write(i, w),
// and turns each into TSDB blocks under data with promtool, on as many
// goroutines as there are CPUs. One file per run, because promtool parses
// its whole input once per two hours between the earliest and the latest
// sample: runs runSpacing apart in one file cost it 48 parses a run.
func backfill(dir, data, name string, n int, write func(i int, w io.Writer) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				errs[i] = backfillOne(filepath.Join(dir, fmt.Sprintf("%s%d.om", name, i)), data, func(w io.Writer) error { return write(i, w) })
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// backfillOne writes one OpenMetrics file by write and turns it into TSDB
// blocks under data.
func backfillOne(om, data string, write func(w io.Writer) error) error {
	f, err := os.Create(om)
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("backfill %s: %w", om, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		return fmt.Errorf("promtool tsdb create-blocks-from openmetrics %s: %w\n%s", om, err, out)
	}
	return nil
}

// runSeries parses a run's scrapes into series, keyed by their OpenMetrics
// text, each sample at the time its scrape was taken (Scrape.Taken). A
// scrape not after the previous one (the clock stepped back) is left out,
// as Prometheus's storage refuses it.
func runSeries(run *Run, shift time.Duration) (map[string][]sample, error) {
	out := map[string][]sample{}
	var last int64
	for _, sc := range run.Scrapes {
		ms := sc.Taken.Add(shift).UnixMilli()
		if sc.Body == nil || ms <= last {
			continue
		}
		last = ms
		p, err := textparse.New(sc.Body, sc.ContentType, labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
		if err != nil {
			return nil, fmt.Errorf("run %s: parse scrape at %v: %w", run.Scenario.Name, sc.Offset, err)
		}
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("run %s: parse scrape at %v: %w", run.Scenario.Name, sc.Offset, err)
			}
			if et != textparse.EntrySeries {
				continue
			}
			_, _, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			key := SeriesText(ls)
			out[key] = append(out[key], sample{ms, v})
		}
	}
	return out, nil
}

// SeriesText writes a label set as name{k="v",...}, the form of a series in
// the text exposition and of a line of `promtool tsdb create-blocks-from
// openmetrics`.
func SeriesText(ls labels.Labels) string {
	var b strings.Builder
	b.WriteString(ls.Get(model.MetricNameLabel))
	b.WriteByte('{')
	first := true
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	})
	b.WriteByte('}')
	return b.String()
}

// Prometheus is a Prometheus server started on 127.0.0.1 over a backfilled
// TSDB (StartPrometheus, StartPrometheusOn); Stop ends it.
type Prometheus struct {
	URL string
	*Process
}

// StartPrometheus backfills the runs' scrapes into a TSDB under dir with
// promtool and starts Debian's prometheus on it, listening on 127.0.0.1. It
// waits until the server is ready; Stop ends it.
func StartPrometheus(dir string, runs []*Run) (*Prometheus, error) {
	data := filepath.Join(dir, "data")
	err := backfill(dir, data, "scrapes", len(runs), func(i int, w io.Writer) error {
		return WriteOpenMetrics(w, runs[i], time.Duration(i)*runSpacing)
	})
	if err != nil {
		return nil, err
	}
	return StartPrometheusOn(dir, data, "global: {}\n", 30*time.Second)
}

// queryResponse is the part of a range query's answer the harness reads.
type queryResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// maxResponse bounds the body of a query answer.
const maxResponse = 64 << 20

// queryRange runs a range query from start to end at the scrape interval.
func (p *Prometheus) queryRange(expr string, start, end time.Time) (*queryResponse, error) {
	form := url.Values{
		"query": {expr},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.Itoa(int(Interval.Seconds()))},
	}
	resp, err := http.PostForm(p.URL+"/api/v1/query_range", form)
	if err != nil {
		return nil, fmt.Errorf("query_range: %w", err)
	}
	defer resp.Body.Close()
	var qr queryResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(&qr); err != nil {
		return nil, fmt.Errorf("query_range: decode: %w", err)
	}
	if qr.Status != "success" {
		return nil, fmt.Errorf("query_range: %s", qr.Error)
	}
	return &qr, nil
}

// present runs a range query and reports, per step from start, whether the
// expression returned any series, and the label sets it returned.
func (p *Prometheus) present(expr string, start, end time.Time) ([]bool, []map[string]string, error) {
	qr, err := p.queryRange(expr, start, end)
	if err != nil {
		return nil, nil, err
	}
	steps := int(end.Sub(start)/Interval) + 1
	out := make([]bool, steps)
	var sets []map[string]string
	for _, r := range qr.Data.Result {
		sets = append(sets, r.Metric)
		for _, v := range r.Values {
			ts, ok := v[0].(float64)
			if !ok {
				return nil, nil, fmt.Errorf("query_range: timestamp %v", v[0])
			}
			i := int((time.Duration(ts*float64(time.Second)) - time.Duration(start.Unix())*time.Second) / Interval)
			if i >= 0 && i < steps {
				out[i] = true
			}
		}
	}
	return out, sets, nil
}

// EvaluateRules replays the generated rules' burn-rate alerts over run i
// (the i-th run given to StartPrometheus) and stores their firing episodes
// in run.Rules, with Prometheus's `for` applied at every scrape.
func (p *Prometheus) EvaluateRules(rf *rules.RuleFile, run *Run, i int) error {
	shift := time.Duration(i) * runSpacing
	start := run.Scrapes[0].At.Add(shift)
	end := run.Scrapes[len(run.Scrapes)-1].At.Add(shift)
	run.Rules = map[Key][]Episode{}
	run.RuleLabels = map[Key]map[string]bool{}
	rec := newRecorded(rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != pipeline.AlertBurnRate {
				continue
			}
			grid, sets, err := p.presentGated(rec, r.Expr, start, end)
			if err != nil {
				return fmt.Errorf("run %s, alert %s/%s: %w", run.Scenario.Name, r.Labels["severity"], r.Labels["long_window"], err)
			}
			cond := make([]bool, len(run.Scrapes))
			for j, sc := range run.Scrapes {
				k := int(sc.At.Add(shift).Sub(start) / Interval)
				cond[j] = k >= 0 && k < len(grid) && grid[k]
			}
			k := keyOf(r.Labels)
			run.Rules[k] = episodes(hold(cond, time.Duration(r.For)))
			run.RuleLabels[k] = map[string]bool{}
			for _, ls := range sets {
				// Prometheus's alert: the result's labels, the rule's labels
				// over them, and the alert name.
				alert := maps.Clone(ls)
				maps.Copy(alert, r.Labels)
				alert["alertname"] = r.Alert
				run.RuleLabels[k][labelText(alert)] = true
			}
		}
	}
	return nil
}

// presentGated is present for a rule's expression inlined over rec, but
// queries the whole expression only over the spans of steps where its gate
// has a result: the shortest operand of its top-level `and` chain, inlined,
// when under a quarter of the whole's length. `a and b` returns nothing
// where either returns nothing, so outside those spans the expression is
// empty too. A range query evaluates each step on its own (its subqueries
// on the absolute 15 s grid), so a span's steps read what they read in one
// query over the whole run (TestGatedEqualsWhole). A burn-rate alert's
// gate is a window's upper bound above the factor, small beside its
// evidence and false at most steps of most scenarios: the whole alert,
// queried at every step, was most of the harness's Prometheus time.
// (Narrowing the spans further by the other small operands cut nothing
// measurable.)
func (p *Prometheus) presentGated(rec recorded, expr string, start, end time.Time) ([]bool, []map[string]string, error) {
	gate, whole, err := alertGate(rec, expr)
	if err != nil {
		return nil, nil, err
	}
	if gate == "" {
		return p.present(whole, start, end)
	}
	open, _, err := p.present(gate, start, end)
	if err != nil {
		return nil, nil, err
	}
	return p.presentOver(whole, open, start)
}

// alertGate is expr inlined over rec (whole) and its gate (presentGated):
// the shortest operand of its top-level `and` chain, inlined, or "" when
// none is under a quarter of the whole's length.
func alertGate(rec recorded, expr string) (gate, whole string, err error) {
	if whole, err = inline(rec, expr, 0); err != nil {
		return "", "", err
	}
	operands, err := andOperands(expr)
	if err != nil {
		return "", "", err
	}
	for _, o := range operands {
		g, err := inline(rec, o, 0)
		if err != nil {
			return "", "", err
		}
		if len(g) < len(whole)/4 && (gate == "" || len(g) < len(gate)) {
			gate = g
		}
	}
	return gate, whole, nil
}

// presentOver is present over the spans of steps from start that
// querySpans makes of open, one range query a span; the steps open does
// not mark are false. The whole expression returns nothing where its gate
// returns nothing (presentGated), so the steps a joined span queries
// beyond open add no label set.
func (p *Prometheus) presentOver(expr string, open []bool, start time.Time) ([]bool, []map[string]string, error) {
	out := make([]bool, len(open))
	var sets []map[string]string
	for _, sp := range querySpans(open, joinGap) {
		grid, got, err := p.present(expr, start.Add(time.Duration(sp[0])*Interval), start.Add(time.Duration(sp[1])*Interval))
		if err != nil {
			return nil, nil, err
		}
		for k, v := range grid {
			out[sp[0]+k] = v && open[sp[0]+k]
		}
		sets = append(sets, got...)
	}
	return out, sets, nil
}

// joinGap is the most closed steps between two spans of open steps that
// presentOver still queries as one. On the harness's runs a range query of
// a whole burn-rate alert cost about 46 ms plus 5.8 ms a step (Prometheus's
// query log over TestAlertQuality, 512 span queries): a query's own cost is
// that of about 8 steps, so spans closer than that are cheaper joined.
const joinGap = 8

// querySpans are the [first, last] steps of the runs of consecutive true
// steps of open, in order, with two runs at most gap false steps apart
// joined into one span.
func querySpans(open []bool, gap int) [][2]int {
	var spans [][2]int
	for i := 0; i < len(open); i++ {
		if !open[i] {
			continue
		}
		j := i
		for j+1 < len(open) && open[j+1] {
			j++
		}
		if n := len(spans); n > 0 && i-spans[n-1][1]-1 <= gap {
			spans[n-1][1] = j
		} else {
			spans = append(spans, [2]int{i, j})
		}
		i = j
	}
	return spans
}

// andOperands are the operands of expr's top-level `and` chain, as they
// are written in expr, or none when expr is not an `and`.
func andOperands(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	text := func(n parser.Node) string {
		pr := n.PositionRange()
		return expr[pr.Start:pr.End]
	}
	var out []string
	for {
		b, ok := e.(*parser.BinaryExpr)
		if !ok || b.Op != parser.LAND {
			if out == nil {
				return nil, nil
			}
			return append(out, text(e)), nil
		}
		out = append(out, text(b.RHS))
		e = b.LHS
	}
}
