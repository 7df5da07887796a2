package alertquality

import (
	"bytes"
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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// Victoria is a single-node VictoriaMetrics this package started on
// 127.0.0.1 with the runs' scrapes imported, on which vmalert replays the
// generated rules.
//
// VictoriaMetrics runs with -search.disableCache: its rollup cache keeps
// query results over past time ranges, which backfilled and replayed data
// would make stale (the documented advice after a backfill is to reset the
// cache), and with -dedup.minScrapeInterval=1ms so that a sample vmalert's
// replay writes twice at the same instant (where two of its query ranges
// meet) counts once.
type Victoria struct {
	URL string
	dir string
	*Process
}

// StartVictoria starts Debian's victoria-metrics with its data under dir,
// listening on 127.0.0.1, imports every successful scrape of the runs (run i
// shifted by i × runSpacing) through /api/v1/import/prometheus and waits
// until all of them are searchable. Stop ends it.
func StartVictoria(dir string, runs []*Run) (*Victoria, error) {
	addr, err := Loopback()
	if err != nil {
		return nil, err
	}
	proc, err := StartProcess(filepath.Join(dir, "victoria-metrics.log"), "victoria-metrics",
		"-storageDataPath="+filepath.Join(dir, "vm"), "-httpListenAddr="+addr, "-retentionPeriod=100y",
		"-search.disableCache", "-dedup.minScrapeInterval=1ms", "-loggerLevel=WARN")
	if err != nil {
		return nil, err
	}
	v := &Victoria{URL: "http://" + addr, dir: dir, Process: proc}
	if err := v.WaitFor(30*time.Second, "victoria-metrics healthy", func() (bool, error) { return HTTPOK(v.URL + "/health"), nil }); err != nil {
		v.Stop()
		return nil, err
	}
	n, err := v.importRuns(runs)
	if err != nil {
		v.Stop()
		return nil, err
	}
	if err := v.waitSamples(`{__name__=~".+"}`, n, 30*time.Second); err != nil {
		v.Stop()
		return nil, fmt.Errorf("import: %w", err)
	}
	return v, nil
}

// importRuns posts the runs' samples as Prometheus text with millisecond
// timestamps and returns how many samples it sent.
func (v *Victoria) importRuns(runs []*Run) (int, error) {
	var body bytes.Buffer
	n := 0
	for i, run := range runs {
		series, err := runSeries(run, time.Duration(i)*runSpacing)
		if err != nil {
			return 0, err
		}
		for _, name := range slices.Sorted(maps.Keys(series)) {
			for _, s := range series[name] {
				fmt.Fprintf(&body, "%s %s %d\n", name, strconv.FormatFloat(s.v, 'g', -1, 64), s.ms)
				n++
			}
		}
	}
	resp, err := http.Post(v.URL+"/api/v1/import/prometheus", "text/plain", &body)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("import: %s: %s", resp.Status, msg)
	}
	return n, nil
}

// flush makes every sample VictoriaMetrics has received searchable.
func (v *Victoria) flush() error {
	resp, err := http.Get(v.URL + "/internal/force_flush")
	if err != nil {
		return fmt.Errorf("force_flush: %w", err)
	}
	resp.Body.Close()
	return nil
}

// waitSamples flushes and polls until the series matching match hold want
// samples in total (at least want when want < 0 is not asked for).
func (v *Victoria) waitSamples(match string, want int, limit time.Duration) error {
	var got int
	err := v.WaitFor(limit, "samples searchable", func() (bool, error) {
		if err := v.flush(); err != nil {
			return false, err
		}
		series, err := v.export(match)
		if err != nil {
			return false, err
		}
		got = 0
		for _, s := range series {
			got += len(s.Timestamps)
		}
		return got >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %d of %d samples searchable: %w", match, got, want, err)
	}
	return nil
}

// exported is one series of /api/v1/export: its labels and raw samples.
type exported struct {
	Metric     map[string]string `json:"metric"`
	Values     []float64         `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

// export reads the raw samples of every series matching match, over all
// time: what the storage holds, with no lookback or rollup in between.
func (v *Victoria) export(match string) ([]exported, error) {
	form := url.Values{"match[]": {match}, "start": {"0"}}
	resp, err := http.PostForm(v.URL+"/api/v1/export", form)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", match, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("export %s: %s: %s", match, resp.Status, msg)
	}
	var out []exported
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxResponse))
	for dec.More() {
		var e exported
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("export %s: decode: %w", match, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Replay evaluates the rule file with vmalert's replay mode over [from, to]
// (every group at its interval, 15s when it has none), writing the recorded
// series and the alerts' ALERTS series back into VictoriaMetrics.
//
// vmalert's replay evaluates a group's rules one after the other, each over
// the whole range, and persists results asynchronously: a rule reading the
// series an earlier rule recorded sees them only once they are written and
// flushed, which vmalert leaves to a fixed -replay.rulesDelay. Instead, the
// rules are cut into stages by how deep they read recorded series (stageRules)
// and each stage is its own vmalert run; before the next stage starts, the
// samples this one wrote are polled for until searchable.
func (v *Victoria) Replay(rf *rules.RuleFile, from, to time.Time) error {
	stages, err := stageRules(rf)
	if err != nil {
		return err
	}
	for i, st := range stages {
		if err := v.replayStage(i, st, from, to); err != nil {
			return fmt.Errorf("replay stage %d of %d: %w", i+1, len(stages), err)
		}
	}
	return nil
}

// importedRe reads the number of samples vmalert's replay wrote.
var importedRe = regexp.MustCompile(`[Ii]mported (\d+) samples`)

// replayStage runs vmalert's replay on one stage's rules and waits until
// every sample it wrote is searchable.
func (v *Victoria) replayStage(i int, st *rules.RuleFile, from, to time.Time) error {
	text, err := st.YAML()
	if err != nil {
		return err
	}
	file := filepath.Join(v.dir, fmt.Sprintf("stage%d.yaml", i))
	if err := os.WriteFile(file, text, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	points := int(to.Sub(from)/Interval) + 2
	cmd := exec.Command("vmalert", "-rule="+file, "-datasource.url="+v.URL, "-remoteWrite.url="+v.URL,
		"-replay.timeFrom="+from.UTC().Format(time.RFC3339), "-replay.timeTo="+to.UTC().Format(time.RFC3339),
		"-replay.rulesDelay=0s", "-replay.disableProgressBar", "-replay.maxDatapointsPerQuery="+strconv.Itoa(points),
		"-evaluationInterval="+model.Duration(Interval).String(), "-datasource.queryStep="+model.Duration(Interval).String(), "-disableAlertgroupLabel", "-httpListenAddr=127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("vmalert: %w\n%s", err, out)
	}
	m := importedRe.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("vmalert: no sample count in its output:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return v.waitSamples(stageMatch(st), n, 30*time.Second)
}

// stageMatch selects every series a stage writes: its recorded series and,
// for alerting rules, ALERTS and ALERTS_FOR_STATE.
func stageMatch(st *rules.RuleFile) string {
	names := map[string]bool{}
	for _, g := range st.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names[regexp.QuoteMeta(r.Record)] = true
			} else {
				names["ALERTS"], names["ALERTS_FOR_STATE"] = true, true
			}
		}
	}
	return fmt.Sprintf(`{__name__=~%q}`, strings.Join(slices.Sorted(maps.Keys(names)), "|"))
}

// stageRules cuts a rule file into stages: stage k holds, in their groups
// and order, the rules that read series recorded in stage k−1 at the
// deepest, so that evaluating the stages in order gives every rule the
// recorded series it reads complete. A rule may read series a later group
// records (an SLO group's alerts read its long group's windows): the
// depths are found over the whole file first.
func stageRules(rf *rules.RuleFile) ([]*rules.RuleFile, error) {
	depths, err := ruleDepths(rf)
	if err != nil {
		return nil, err
	}
	var stages []*rules.RuleFile
	k := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			d := depths[k]
			k++
			for len(stages) <= d {
				stages = append(stages, &rules.RuleFile{})
			}
			st := stages[d]
			if len(st.Groups) == 0 || st.Groups[len(st.Groups)-1].Name != g.Name {
				st.Groups = append(st.Groups, rules.Group{Name: g.Name, Interval: g.Interval, Lag: g.Lag})
			}
			last := &st.Groups[len(st.Groups)-1]
			last.Rules = append(last.Rules, r)
		}
	}
	return stages, nil
}

// ruleDepths is the stage of every rule of the file, in file order: 0 for
// a rule that reads no recorded series, else one more than the deepest
// rule recording a series it reads. The depths grow until they hold, at
// most once per rule; longer, the file reads its own records in a cycle.
func ruleDepths(rf *rules.RuleFile) ([]int, error) {
	var reads [][]string
	var records []string
	depth := map[string]int{} // record name → deepest rule recording it
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			names, err := selectedNames(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("group %s: %w", g.Name, err)
			}
			reads, records = append(reads, names), append(records, r.Record)
			if r.Record != "" {
				depth[r.Record] = 0
			}
		}
	}
	depths := make([]int, len(reads))
	for range len(reads) + 1 {
		changed := false
		for i, names := range reads {
			d := 0
			for _, n := range names {
				if dn, ok := depth[n]; ok {
					d = max(d, dn+1)
				}
			}
			depths[i] = d
			if records[i] != "" && d > depth[records[i]] {
				depth[records[i]], changed = d, true
			}
		}
		if !changed {
			return depths, nil
		}
	}
	return nil, errors.New("the rules read their own records in a cycle")
}

// VMAlerts reads the ALERTS series vmalert's replay wrote for the burn-rate
// alerts of run i (the i-th run given to StartVictoria) and stores their
// firing episodes in run.VMRules and their label sets in run.VMRuleLabels.
// vmalert applied each alert's `for` itself.
func (v *Victoria) VMAlerts(rf *rules.RuleFile, run *Run, i int) error {
	shift := time.Duration(i) * runSpacing
	series, err := v.export(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, pipeline.AlertBurnRate))
	if err != nil {
		return err
	}
	firing := map[Key]map[int64]bool{}
	run.VMRules, run.VMRuleLabels = map[Key][]Episode{}, map[Key]map[string]bool{}
	from, to := run.Scrapes[0].At.Add(shift).UnixMilli(), run.Scrapes[len(run.Scrapes)-1].At.Add(shift).UnixMilli()
	for _, s := range series {
		k := keyOf(s.Metric)
		for _, ts := range s.Timestamps {
			if ts < from || ts > to {
				continue
			}
			if firing[k] == nil {
				firing[k] = map[int64]bool{}
			}
			if run.VMRuleLabels[k] == nil {
				run.VMRuleLabels[k] = map[string]bool{}
			}
			firing[k][ts/1000] = true
			ls := maps.Clone(s.Metric)
			delete(ls, "__name__")
			delete(ls, "alertstate")
			run.VMRuleLabels[k][labelText(ls)] = true
		}
	}
	for _, k := range run.Keys {
		cond := make([]bool, len(run.Scrapes))
		for j, sc := range run.Scrapes {
			cond[j] = firing[k][sc.At.Add(shift).Unix()]
		}
		run.VMRules[k] = episodes(cond)
	}
	return nil
}

// values reads the raw samples vmalert recorded for one series (selected
// by match, which must select at most one) between start and end, by Unix
// second.
func (v *Victoria) values(match string, start, end time.Time) (map[int64]float64, error) {
	series, err := v.export(match)
	if err != nil {
		return nil, err
	}
	if len(series) > 1 {
		return nil, fmt.Errorf("export %s: %d series, want at most 1", match, len(series))
	}
	out := map[int64]float64{}
	for _, s := range series {
		for j, ts := range s.Timestamps {
			if ts >= start.UnixMilli() && ts <= end.UnixMilli() {
				out[ts/1000] = s.Values[j]
			}
		}
	}
	return out, nil
}

// selectedNames lists the metric names an expression selects.
func selectedNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}
