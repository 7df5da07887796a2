package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/alertquality"
)

// runFleetRules is the fleet measurement of the generated rules on a real
// TSDB: a synthetic fleet's history backfilled into Prometheus (promtool)
// and VictoriaMetrics (its import API), the generated rules loaded and
// evaluated live every 15 s, and each group's evaluation time read from the
// engine's own metrics; it prints one table row per engine and group.
func runFleetRules(args []string) error {
	fl := flag.NewFlagSet("fleet-rules", flag.ContinueOnError)
	targets := fl.Int("targets", 10, "simulated vLLM servers")
	models := fl.Int("models", 0, "models they serve (default: one per 10 targets)")
	days := fl.Float64("days", 1, "days of history backfilled")
	evals := fl.Int("evaluations", 4, "group evaluations measured per engine")
	engines := fl.String("engines", "prometheus,victoriametrics", "engines to measure")
	header := fl.Bool("header", true, "print the table header")
	flat := fl.Bool("flat", false, "the flat rules: every window sums the per-interval series (no hierarchy)")
	reps := fl.Int("query-times", 0, "after the evaluations, time every rule of the SLO group alone as an instant query, fastest of this many runs, and print the times by kind (0: off)")
	vmFlags := fl.String("vm-flags", "", "extra flags of victoria-metrics, space-separated (-search.disableCache: without its rollup cache)")
	conc := fl.String("vmalert-concurrency", "1", "vmalert's rule concurrency within each group (its group field concurrency), comma-separated: one vmalert run per value on the same import")
	pad := fl.Int("pad-rules", 0, "append this many cheap recording rules to the first group (each reads one recorded per-interval series, one sample per model, and writes as many series as a window rule): what a rule costs the group whatever it reads")
	ahead := fl.Bool("import-ahead", false, "VictoriaMetrics: import the hour of scrapes after the history with it, ahead of the clock (the method of BENCHMARKS §12's earlier rows), instead of feeding each scrape as its time comes")
	backfillOnly := fl.Bool("prometheus-backfill-only", false, "Prometheus: the history backfilled and nothing after it (the method of BENCHMARKS §12's earlier Prometheus rows), instead of Prometheus scraping the fleet's servers live through the evaluations")
	aligned := fl.Bool("aligned", false, "scrape every server at each step's time, all at once (the method of BENCHMARKS §12's earlier rows), instead of spreading the servers' scrapes over the interval as Prometheus and vmagent do")
	full := fl.Duration("full", 0, "how much of the history (ending now) holds every series; before it only what the rules read there (bench.Fleet.Full; 0: all)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	concurrencies, err := parseConcurrencies(*conc)
	if err != nil {
		return err
	}
	if *models <= 0 {
		*models = max(1, *targets/10)
	}
	opts := rules.DefaultOptions()
	if *flat {
		opts = rules.Options{}
	}
	f := bench.Fleet{Targets: *targets, Models: *models, History: time.Duration(*days * 24 * float64(time.Hour)),
		End: time.Now().Truncate(bench.Interval), Rate: 2, Seed: 1, Levels: opts.Levels,
		Full: *full, Band: sparseBand, Phased: !*aligned}
	cfg, err := config.Parse([]byte(f.Config()), "fleet.yaml")
	if err != nil {
		return err
	}
	rf, err := opts.Generate(cfg)
	if err != nil {
		return err
	}
	if err := checkLedgerNames(rf, opts.Levels); err != nil {
		return err
	}
	if err := padRules(rf, *pad); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "perf-fleet-rules")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	text, err := rf.YAML()
	if err != nil {
		return err
	}
	ruleFile := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(ruleFile, text, 0o600); err != nil {
		return err
	}
	if *header {
		fmt.Println("| targets × history | engine | group (rules, interval) | load | evaluation ms, median (max) | share of the group's interval, median (max) | samples read per evaluation | engine RSS MiB |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
	}
	size := sizeLabel(f, *days, *flat, *pad, *vmFlags, *ahead)
	for _, e := range strings.Split(*engines, ",") {
		rows, err := measureEngine(e, f, rf, ruleFile, dir, measureOpts{evals: *evals, reps: *reps, vmFlags: strings.Fields(*vmFlags), concurrency: concurrencies, importAhead: *ahead, backfillOnly: *backfillOnly})
		if err != nil {
			return fmt.Errorf("%s: %w", e, err)
		}
		for _, r := range rows {
			every := groupInterval(rf, r.group)
			fmt.Printf("| %s | %s | %s (%d, %s) | %s | %.1f (%.1f) | %.2f%% (%.2f%%) | %s | %s |\n", size, r.engine, r.group, r.rules, model.Duration(every), r.load.Round(time.Second),
				bench.Median(r.ms), slices.Max(r.ms), bench.Median(r.ms)/every.Seconds()/10, slices.Max(r.ms)/every.Seconds()/10, r.samples, r.rss)
		}
	}
	return nil
}

// sizeLabel is the table's first column: the fleet's size and history, and
// every option that changes what the row measures.
func sizeLabel(f bench.Fleet, days float64, flat bool, pad int, vmFlags string, importAhead bool) string {
	size := fmt.Sprintf("%d × %gd", f.Targets, days)
	if f.Full > 0 && f.Full < f.History {
		size += fmt.Sprintf(" (every series over the last %s, before it what the rules read)", f.Full)
	}
	if flat {
		size += ", flat"
	}
	if pad > 0 {
		size += fmt.Sprintf(", %d cheap rules added", pad)
	}
	if vmFlags != "" {
		size += ", victoria-metrics " + vmFlags
	}
	if importAhead {
		size += ", VictoriaMetrics' scrapes after it imported ahead"
	}
	if !f.Phased {
		size += ", every server's samples at each step's instant"
	}
	return size
}

// groupInterval is the evaluation interval of the named group of rf: its
// own, or the engines' 15 s.
func groupInterval(rf *rules.RuleFile, name string) time.Duration {
	for _, g := range rf.Groups {
		if g.Name == name && g.Interval > 0 {
			return time.Duration(g.Interval)
		}
	}
	return bench.Interval
}

// longest is the longest group interval of rf, at least a minute: how long
// one evaluation of every group may take to come.
func longest(rf *rules.RuleFile) time.Duration {
	d := time.Minute
	for _, g := range rf.Groups {
		d = max(d, time.Duration(g.Interval))
	}
	return d
}

// printSLOQueryTimes prints the query times of the SLO group's rules and,
// with the long group, of its rules.
func printSLOQueryTimes(base string, rf *rules.RuleFile, reps int) error {
	for i, g := range rf.Groups {
		if i > 0 && g.Lag == 0 {
			break
		}
		if err := printQueryTimes(base, g, reps); err != nil {
			return err
		}
	}
	return nil
}

// measureOpts are how an engine is measured: evals group evaluations, each
// rule timed alone reps times (0: not), extra victoria-metrics flags, and
// vmalert's rule concurrencies, one run each.
type measureOpts struct {
	evals, reps int
	vmFlags     []string
	concurrency []int
	// importAhead imports the scrapes after the history with it, ahead of
	// the clock, instead of feeding them live (liveFeed).
	importAhead bool
	// backfillOnly leaves Prometheus without the scrapes after the
	// history (liveTargets).
	backfillOnly bool
}

// parseConcurrencies reads -vmalert-concurrency: positive integers,
// comma-separated.
func parseConcurrencies(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return nil, fmt.Errorf("-vmalert-concurrency: %q is not a positive integer", f)
		}
		out = append(out, c)
	}
	return out, nil
}

// measureEngine measures the rules on one engine (prometheus or
// victoriametrics) over the fleet's history; with a sparse history, the
// evaluations must end within its band.
func measureEngine(e string, f bench.Fleet, rf *rules.RuleFile, ruleFile, dir string, mo measureOpts) ([]groupRow, error) {
	var rows []groupRow
	var err error
	switch e {
	case "prometheus":
		rows, err = measurePrometheus(f, rf, ruleFile, filepath.Join(dir, "prometheus"), mo)
	case "victoriametrics":
		rows, err = measureVictoria(f, rf, ruleFile, filepath.Join(dir, "victoriametrics"), mo)
	default:
		err = fmt.Errorf("unknown engine %q", e)
	}
	if err == nil && f.Full > 0 && time.Since(f.End) > f.Band {
		err = fmt.Errorf("the evaluations ran %s after the history's end, past the sparse part's band of %s: they read less than a full history would",
			time.Since(f.End).Round(time.Second), f.Band)
	}
	return rows, err
}

// sparseBand is how long after the history's end the sparse part of a
// history holds its series (bench.Fleet.Band): both engines' backfill and
// evaluations must end within it.
const sparseBand = time.Hour

// groupRow is one engine's measurement of one rule group.
type groupRow struct {
	engine, group string
	rules         int
	load          time.Duration
	ms            []float64
	samples       string
	rss           string
	// sumSoFar is vmalert's iteration duration sum at the last poll.
	sumSoFar float64
	// evals are the evaluations seen one per poll: when the poll saw each
	// end (within the 100 ms between polls) and how long it took.
	evals []evaluation
}

// evaluation is one group evaluation seen by vmalertPoll.
type evaluation struct {
	end time.Time
	dur time.Duration
}

// overlaps reports whether e ran at the same time as any of others, each
// span widened by the polls' 100 ms.
func (e evaluation) overlaps(others []evaluation) bool {
	const slack = 100 * time.Millisecond
	for _, o := range others {
		if e.end.Add(-e.dur-slack).Before(o.end) && o.end.Add(-o.dur-slack).Before(e.end) {
			return true
		}
	}
	return false
}

// printOverlap prints the SLO group's evaluations split by whether others
// (the long group's evaluations, the live feed's scrape imports) ran at
// the same time: work sharing the two cores, which the slowest
// evaluations may owe to it.
func printOverlap(slo *groupRow, what string, others []evaluation) {
	if slo == nil || len(others) == 0 {
		return
	}
	var with, without []float64
	for _, e := range slo.evals {
		ms := float64(e.dur) / float64(time.Millisecond)
		if e.overlaps(others) {
			with = append(with, ms)
		} else {
			without = append(without, ms)
		}
	}
	fmt.Printf("%s evaluations beside %s: ", slo.group, what)
	for _, part := range []struct {
		name string
		ms   []float64
	}{{"overlapping", with}, {"alone", without}} {
		if len(part.ms) == 0 {
			fmt.Printf("%s none; ", part.name)
			continue
		}
		fmt.Printf("%s %d, median %.1f ms, slowest %.1f ms; ", part.name, len(part.ms), bench.Median(part.ms), slices.Max(part.ms))
	}
	fmt.Println()
}

// printSpans prints how many spans there were and their median and
// longest duration.
func printSpans(what string, spans []evaluation) {
	if len(spans) == 0 {
		return
	}
	ms := make([]float64, len(spans))
	for i, s := range spans {
		ms[i] = float64(s.dur) / float64(time.Millisecond)
	}
	fmt.Printf("%s: %d, median %.1f ms, longest %.1f ms\n", what, len(ms), bench.Median(ms), slices.Max(ms))
}

// waitScraped waits until Prometheus has scraped every one of the fleet's
// targets three times within a minute: from then on the rules read live
// samples of every server.
func waitScraped(srv *alertquality.Prometheus, targets int) error {
	const expr = `count(sum_over_time(up{job="vllm"}[1m]) >= 3)`
	return srv.WaitFor(10*time.Minute, "every target scraped", func() (bool, error) {
		n, err := instant(srv.URL, expr)
		return err == nil && n == float64(targets), nil
	})
}

// pollPrometheus appends to each row's times the group's last evaluation
// time at every new iteration after the first poll, until every group has
// evals of them.
func pollPrometheus(srv *alertquality.Prometheus, ruleFile string, rows []groupRow, evals int, longest time.Duration) error {
	last := make([]float64, len(rows))
	first := true
	return srv.WaitFor(time.Duration(evals+4)*longest, "rule evaluations", func() (bool, error) {
		m, err := scrapeMetrics(srv.URL + "/metrics")
		if err != nil {
			return false, nil
		}
		done := true
		for i := range rows {
			key := fmt.Sprintf(`rule_group="%s;%s"`, ruleFile, rows[i].group)
			iters := m.get("prometheus_rule_group_iterations_total", key)
			if iters > last[i] && !first {
				rows[i].ms = append(rows[i].ms, m.get("prometheus_rule_group_last_duration_seconds", key)*1e3)
			}
			last[i] = max(last[i], iters)
			done = done && len(rows[i].ms) >= evals
		}
		first = false
		return done, nil
	})
}

// checkLedgerNames makes sure the fleet's synthetic ledger history has the
// names the generated rules record (the per-interval series and, with the
// hierarchy, their level series), so that the long windows read it.
func checkLedgerNames(rf *rules.RuleFile, levels []time.Duration) error {
	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			recorded[r.Record] = true
		}
	}
	withLevels := 0
	for _, l := range bench.LedgerSeries {
		if !recorded[l.Name] {
			return fmt.Errorf("the rules record no %s: update bench.LedgerSeries", l.Name)
		}
		// Series no window sums have no levels (the history's are unread).
		if len(levels) == 0 || !recorded[rules.LevelRecord(l.Name, levels[0])] {
			continue
		}
		withLevels++
		for _, lv := range levels {
			if n := rules.LevelRecord(l.Name, lv); !recorded[n] {
				return fmt.Errorf("the rules record no %s: the fleet's levels are not the rules'", n)
			}
		}
	}
	if len(levels) > 0 && withLevels == 0 {
		return errors.New("the rules record no level of any ledger series: the fleet's levels are not the rules'")
	}
	return nil
}

// measurePrometheus backfills the fleet's history with promtool, starts
// Debian's prometheus with the rules (scraping the fleet's servers after
// the history live, liveTargets, unless mo.backfillOnly), and reads
// prometheus_rule_group_last_duration_seconds after each of evals
// evaluations of every group, counted once every server has been scraped
// three times.
func measurePrometheus(f bench.Fleet, rf *rules.RuleFile, ruleFile, dir string, mo measureOpts) (rows []groupRow, err error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	config := "global:\n  evaluation_interval: 15s\nrule_files: [" + strconv.Quote(ruleFile) + "]\n"
	var lt *liveTargets
	if !mo.backfillOnly {
		live := f
		live.Ahead = sparseBand
		if lt, err = startLiveTargets(live); err != nil {
			return nil, err
		}
		defer func() {
			if serr := lt.stop(); serr != nil && err == nil {
				err = serr
			}
		}()
		config += lt.scrapeConfig()
	}
	began := time.Now()
	if _, err := f.WriteBlocks(data, dir); err != nil {
		return nil, err
	}
	load := time.Since(began)
	srv, err := alertquality.StartPrometheusOn(dir, data, config, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	base := srv.URL
	if lt != nil {
		if err := waitScraped(srv, f.Targets); err != nil {
			return nil, err
		}
	}
	for _, g := range rf.Groups {
		engine := "Prometheus 2.42, the servers scraped live"
		if lt == nil {
			engine = "Prometheus 2.42, backfilled only"
		}
		rows = append(rows, groupRow{engine: engine, group: g.Name, rules: len(g.Rules), load: load})
	}
	if err := pollPrometheus(srv, ruleFile, rows, mo.evals, longest(rf)); err != nil {
		return nil, err
	}
	if lt != nil {
		if err := checkReadLive(base, f.Targets); err != nil {
			return nil, err
		}
	}
	return rows, reportPrometheus(base, rf, rows, mo.reps)
}

// reportPrometheus prints where the groups' time went on Prometheus (and,
// with reps, each SLO group rule's time alone), and fills each row's
// samples read and memory.
func reportPrometheus(base string, rf *rules.RuleFile, rows []groupRow, reps int) error {
	rts, err := ruleTimes(base)
	if err != nil {
		return err
	}
	printRuleTimes(os.Stderr, rts, 15)
	if err := printSLOQueryTimes(base, rf, reps); err != nil {
		return err
	}
	m, err := scrapeMetrics(base + "/metrics")
	if err != nil {
		return err
	}
	rss := mb(uint64(m.get("process_resident_memory_bytes", "")))
	for i, g := range rf.Groups {
		n, err := samplesRead(base, g)
		if err != nil {
			return err
		}
		rows[i].samples, rows[i].rss = strconv.FormatInt(n, 10), rss
	}
	return nil
}

// samplesRead sums, over a group's rules run as instant queries now, the
// samples Prometheus's engine loaded (stats=all: totalQueryableSamples).
func samplesRead(base string, g rules.Group) (int64, error) {
	var total int64
	for _, r := range g.Rules {
		var data struct {
			Stats struct {
				Samples struct {
					TotalQueryableSamples int64 `json:"totalQueryableSamples"`
				} `json:"samples"`
			} `json:"stats"`
		}
		if err := queryAPI(base, url.Values{"query": {r.Expr}, "stats": {"all"}}, &data); err != nil {
			return 0, err
		}
		total += data.Stats.Samples.TotalQueryableSamples
	}
	return total, nil
}

// queryAPI runs an instant query (/api/v1/query with form) and decodes its
// answer's data into data.
func queryAPI(base string, form url.Values, data any) error {
	resp, err := http.PostForm(base+"/api/v1/query", form)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer resp.Body.Close()
	qr := struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   any    `json:"data"`
	}{Data: data}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&qr); err != nil {
		return fmt.Errorf("query %q: decode: %w", form.Get("query"), err)
	}
	if qr.Status != "success" {
		return fmt.Errorf("query %q: %s", form.Get("query"), qr.Error)
	}
	return nil
}

// measureVictoria imports the fleet into victoria-metrics and, once per
// rule concurrency of mo, runs vmalert live on the rules and reads
// vmalert_iteration_duration_seconds after evals evaluations of every
// group; the rules are timed alone after the first run.
func measureVictoria(f bench.Fleet, rf *rules.RuleFile, ruleFile, dir string, mo measureOpts) (rows []groupRow, err error) {
	// The servers keep being scraped through the evaluations: fed as their
	// time comes (liveFeed), or with -import-ahead imported with the history
	// and served once their time comes.
	f.Ahead = sparseBand
	vm, err := startImported(f, dir, mo.vmFlags, mo.importAhead)
	if err != nil {
		return nil, err
	}
	defer vm.stop(&err)
	notifier, err := blackhole()
	if err != nil {
		return nil, err
	}
	defer notifier.Close()
	for i, c := range mo.concurrency {
		file := ruleFile
		if c > 1 {
			if file, err = withConcurrency(rf, c, filepath.Join(dir, fmt.Sprintf("rules-concurrency-%d.yml", c))); err != nil {
				return nil, err
			}
		}
		reps := 0
		if i == 0 {
			reps = mo.reps
		}
		run, err := runVmalert(vmRun{base: vm.base, notifier: notifier.Addr, ruleFile: file, log: filepath.Join(dir, fmt.Sprintf("vmalert-%d.log", i)),
			concurrency: c, load: vm.load, evals: mo.evals, reps: reps, targets: f.Targets, feed: vm.feed}, rf)
		if err != nil {
			return nil, err
		}
		rows = append(rows, run...)
	}
	return rows, nil
}

// groupNames are the names of rf's groups.
func groupNames(rf *rules.RuleFile) []string {
	var names []string
	for _, g := range rf.Groups {
		names = append(names, g.Name)
	}
	return names
}

// withConcurrency writes rf with every group's vmalert concurrency set to c
// to path.
func withConcurrency(rf *rules.RuleFile, c int, path string) (string, error) {
	text, err := rf.WithConcurrency(c).YAML()
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, text, 0o600)
}

// vmRun is one vmalert run of measureVictoria.
type vmRun struct {
	base, notifier, ruleFile, log string
	concurrency                   int
	load                          time.Duration
	evals, reps                   int
	// targets is the fleet's size, for checkReadLive.
	targets int
	// feed is the live feed (nil when imported ahead), whose imports the
	// SLO group's evaluations are split by.
	feed *liveFeed
}

// checkReadLive fails unless the SLO group's last minute recorded the
// finisher bound of every server and TTFT kind: it reads each server's
// samples of the last 30 s, so a bound missing there means that the rules
// found no live scrapes and the times measured are those of reading
// nothing.
func checkReadLive(base string, targets int) error {
	const expr = "count(last_over_time(server:vllm_slo_ttft_finishers_upper:interval[1m]))"
	n, err := instant(base, expr)
	if err != nil {
		return err
	}
	if n != float64(2*targets) {
		return fmt.Errorf("%s = %v, want %d (two TTFT kinds per server): the rules did not read every server's live scrapes", expr, n, 2*targets)
	}
	return nil
}

// runVmalert runs vmalert on r's rule file against the imported
// VictoriaMetrics at r.base until every group has r.evals evaluations,
// then, with vmalert stopped, times the SLO group's rules alone (r.reps).
func runVmalert(r vmRun, rf *rules.RuleFile) ([]groupRow, error) {
	alertAddr, err := alertquality.Loopback()
	if err != nil {
		return nil, err
	}
	va, err := alertquality.StartProcess(r.log, "vmalert", "-rule="+r.ruleFile, "-datasource.url="+r.base,
		"-remoteWrite.url="+r.base, "-notifier.url=http://"+r.notifier, "-evaluationInterval=15s", "-httpListenAddr="+alertAddr)
	if err != nil {
		return nil, err
	}
	defer va.Stop()
	engine := "VictoriaMetrics 1.79 + vmalert"
	if r.concurrency > 1 {
		engine += fmt.Sprintf(" (concurrency %d)", r.concurrency)
	}
	p := &vmalertPoll{vmURL: r.base, alertURL: "http://" + alertAddr, sloGroup: rf.Groups[0].Name, engine: engine, want: groupNames(rf),
		groups: map[string]*groupRow{}, last: map[string]float64{}, readFrom: -1}
	err = va.WaitFor(time.Duration(r.evals+4)*longest(rf), "vmalert evaluations", func() (bool, error) { return p.poll(r.evals, r.load) })
	if err != nil {
		return nil, err
	}
	m, err := scrapeMetrics(r.base + "/metrics")
	if err != nil {
		return nil, err
	}
	am, err := scrapeMetrics(p.alertURL + "/metrics")
	if err != nil {
		return nil, err
	}
	rss := mb(uint64(m.get("process_resident_memory_bytes", ""))) + " + vmalert " + mb(uint64(am.get("process_resident_memory_bytes", "")))
	if err := checkReadLive(r.base, r.targets); err != nil {
		return nil, err
	}
	// vmalert stops first, so that the rules timed alone do not share the
	// engine with its evaluations.
	va.Stop()
	slo := p.groups[rf.Groups[0].Name]
	if len(rf.Groups) > 1 && rf.Groups[1].Lag > 0 && p.groups[rf.Groups[1].Name] != nil {
		printOverlap(slo, rf.Groups[1].Name+"'s", p.groups[rf.Groups[1].Name].evals)
	}
	if r.feed != nil {
		imports := r.feed.importSpans()
		printOverlap(slo, "the live feed's scrape imports", imports)
		printSpans("the live feed's scrape imports", imports)
	}
	if err := printSLOQueryTimes(r.base, rf, r.reps); err != nil {
		return nil, err
	}
	// Rows read need two polls of the SLO group: with one, "–".
	iters := am.get("vmalert_iteration_duration_seconds_count", `group="`+p.sloGroup+`"`) - p.sloFrom
	read := (m.get("vm_rows_read_per_query_sum", "") - p.readFrom) / max(1, iters)
	var rows []groupRow
	for _, g := range rf.Groups {
		if p.groups[g.Name] == nil {
			return nil, fmt.Errorf("vmalert reported no evaluation of group %s", g.Name)
		}
		row := *p.groups[g.Name]
		row.rss, row.rules = rss, len(g.Rules)
		if g.Name == p.sloGroup && iters >= 1 {
			row.samples = fmt.Sprintf("%.0f (rows read)", read)
			if len(rf.Groups) > 1 && rf.Groups[1].Lag > 0 {
				row.samples = fmt.Sprintf("%.0f (rows read, with the long group's)", read)
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// imported is a VictoriaMetrics holding the fleet: its process, URL, how
// long the history took to import and, fed live, the feed of the scrapes
// after it.
type imported struct {
	vm   *alertquality.Process
	base string
	load time.Duration
	feed *liveFeed
}

// stop stops the feed and the engine; a feed that failed while the rules
// were measured sets *err, since the rules then read stale data.
func (im *imported) stop(err *error) {
	if im.feed != nil {
		if ferr := im.feed.stop(); ferr != nil && *err == nil {
			*err = ferr
		}
	}
	im.vm.Stop()
}

// startImported starts victoria-metrics under dir and imports the fleet:
// the history, and either the scrapes after it with the history (ahead)
// or fed as their time comes, caught up to the clock before it returns.
// It waits until VictoriaMetrics has stored and flushed the history.
func startImported(f bench.Fleet, dir string, extra []string, ahead bool) (*imported, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := alertquality.Loopback()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-storageDataPath=" + filepath.Join(dir, "data"), "-httpListenAddr=" + addr, "-retentionPeriod=100y", "-loggerLevel=WARN"}, extra...)
	vm, err := alertquality.StartProcess(filepath.Join(dir, "victoria-metrics.log"), "victoria-metrics", args...)
	if err != nil {
		return nil, err
	}
	im := &imported{vm: vm, base: "http://" + addr}
	if err := im.fill(f, ahead); err != nil {
		var ignored error
		im.stop(&ignored)
		return nil, err
	}
	return im, nil
}

// fill imports the fleet into im (startImported) and sets im.load.
func (im *imported) fill(f bench.Fleet, ahead bool) error {
	if err := im.vm.WaitFor(time.Minute, "victoria-metrics healthy", func() (bool, error) { return alertquality.HTTPOK(im.base + "/health"), nil }); err != nil {
		return err
	}
	began := time.Now()
	var n int
	var err error
	if ahead {
		n, err = importFleet(f, im.base)
	} else {
		im.feed = startLiveFeed(f, im.base)
		n, err = im.feed.waitHistory()
	}
	if err != nil {
		return err
	}
	err = im.vm.WaitFor(10*time.Minute, "import stored", func() (bool, error) {
		m, err := scrapeMetrics(im.base + "/metrics")
		return err == nil && m.get("vm_rows_added_to_storage_total", "") >= float64(n), nil
	})
	if err != nil {
		return err
	}
	if !alertquality.HTTPOK(im.base + "/internal/force_flush") {
		return errors.New("force_flush failed")
	}
	if im.feed != nil {
		if err := im.vm.WaitFor(5*time.Minute, "live feed caught up with the clock", im.feed.caughtUp); err != nil {
			return err
		}
	}
	im.load = time.Since(began)
	return nil
}

// vmalertPoll follows vmalert's iteration metrics: per group, the mean
// duration of the evaluations since the previous poll, and the rows
// VictoriaMetrics read from the first SLO group evaluation seen on (the
// other group selects the exporter's own series, absent here, and reads
// none).
type vmalertPoll struct {
	vmURL, alertURL, sloGroup, engine string
	// want are the groups that must each have evals evaluations: every
	// group of the rule file, a group that vmalert has not evaluated yet
	// has no metrics to wait on.
	want              []string
	groups            map[string]*groupRow
	last              map[string]float64
	readFrom, sloFrom float64
}

// poll reads vmalert's metrics once and reports whether every group has
// evals evaluations measured.
func (p *vmalertPoll) poll(evals int, load time.Duration) (bool, error) {
	m, err := scrapeMetrics(p.alertURL + "/metrics")
	if err != nil {
		return false, nil
	}
	for _, l := range m.lines("vmalert_iteration_duration_seconds_sum") {
		g := labelValue(l, "group")
		if p.groups[g] == nil {
			p.groups[g] = &groupRow{engine: p.engine, group: g, load: load, samples: "–"}
		}
		sum := m.get("vmalert_iteration_duration_seconds_sum", `group="`+g+`"`)
		cnt := m.get("vmalert_iteration_duration_seconds_count", `group="`+g+`"`)
		if cnt > p.last[g] {
			ms := (sum - p.groups[g].sumSoFar) / (cnt - p.last[g]) * 1e3
			p.groups[g].ms = append(p.groups[g].ms, ms)
			if cnt-p.last[g] == 1 {
				p.groups[g].evals = append(p.groups[g].evals, evaluation{end: time.Now(), dur: time.Duration(ms * float64(time.Millisecond))})
			}
			p.groups[g].sumSoFar, p.last[g] = sum, cnt
		}
	}
	if p.readFrom < 0 && p.last[p.sloGroup] > 0 {
		vmm, err := scrapeMetrics(p.vmURL + "/metrics")
		if err != nil {
			return false, err
		}
		p.readFrom, p.sloFrom = vmm.get("vm_rows_read_per_query_sum", ""), p.last[p.sloGroup]
	}
	for _, g := range p.want {
		if p.groups[g] == nil || len(p.groups[g].ms) < evals {
			return false, nil
		}
	}
	return true, nil
}

// blackhole is an Alertmanager stand-in on 127.0.0.1 that accepts and
// drops alerts: vmalert refuses to start alerting rules without a notifier.
func blackhole() (*http.Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("notifier: %w", err)
	}
	hs := &http.Server{Addr: l.Addr().String(), ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		})}
	go func() { _ = hs.Serve(l) }()
	return hs, nil
}

// importFleet streams the fleet's history, the scrapes after it included,
// into VictoriaMetrics' /api/v1/import/prometheus and returns the number of
// samples sent.
func importFleet(f bench.Fleet, base string) (int, error) {
	pr, pw := io.Pipe()
	written := make(chan int, 1)
	go func() {
		n, err := f.WriteImport(pw)
		pw.CloseWithError(err)
		written <- n
	}()
	err := postImport(context.Background(), base, pr)
	pr.CloseWithError(errors.New("the import ended"))
	n := <-written
	return n, err
}

// metricsText is a /metrics body, line by line.
type metricsText []string

func scrapeMetrics(u string) (metricsText, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out metricsText
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// lines are the samples of a metric name.
func (m metricsText) lines(name string) []string {
	var out []string
	for _, l := range m {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out = append(out, l)
		}
	}
	return out
}

// get is the value of the first sample of name whose labels contain
// match (0 when none).
func (m metricsText) get(name, match string) float64 {
	for _, l := range m.lines(name) {
		if !strings.Contains(l, match) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			return v
		}
	}
	return 0
}

// labelValue reads one label's value from a sample line.
func labelValue(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// padSeries is what padRules' rules read: the finished requests'
// per-interval series, which the SLO group records.
const padSeries = "model_name:vllm_slo_finished_requests:interval_increase"

// padRules appends n recording rules to the file's first group, the SLO
// group, each a bare read of padSeries (one sample per model) under a label
// of its own: the query costs next to nothing, the result has as many
// series as a window rule's, so the group's added time is what a rule costs
// it whatever it reads (vmalert's request, decoding and write-back). It
// fails when the group does not record padSeries: the added rules would
// read nothing and cost less than a rule that writes.
func padRules(rf *rules.RuleFile, n int) error {
	if n <= 0 {
		return nil
	}
	if len(rf.Groups) == 0 || !slices.ContainsFunc(rf.Groups[0].Rules, func(r rules.Rule) bool { return r.Record == padSeries }) {
		return fmt.Errorf("-pad-rules: the first group records no %s to read", padSeries)
	}
	g := &rf.Groups[0]
	for i := range n {
		g.Rules = append(g.Rules, rules.Rule{Record: "vllm_slo_bench_pad", Expr: padSeries, Labels: map[string]string{"pad": strconv.Itoa(i)}})
	}
	return nil
}
