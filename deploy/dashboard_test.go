package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

const dashboardPath = "grafana/dashboard.json"

// variableValues are concrete values for the dashboard's variables and
// Grafana's built-ins, chosen to exist in the replay's exposition, so that
// a query with them substituted selects real series.
var variableValues = map[string]string{
	"datasource":      "prometheus",
	"target":          "rtx4090",
	"model_name":      "Qwen/Qwen2.5-7B-Instruct",
	"window":          "5m",
	"slo":             "interactive",
	"quantile":        "0.99",
	"__rate_interval": "1m",
	"__interval":      "15s",
	"__range":         "3h",
}

// sdkError turns the SDK's error convention (an empty, non-nil
// cog.BuildErrors on success) into a plain nil.
func sdkError(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

func TestDashboardLoadsStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 The v1 dashboard JSON is what Grafana 10 and 11 import; the v2 schema would drop them.
	var strict dashboard.Dashboard
	if err := sdkError(strict.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("strict unmarshal: %v", err)
	}
	if err := sdkError(strict.Validate()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	// SDK v0.0.22's strict decoding checks every panel but keeps none: a
	// panel's own strict decode returns an empty, non-nil cog.BuildErrors,
	// which PanelOrRowPanel takes for an error before storing the panel. So
	// the panels are inspected (and validated again) from the plain decoding.
	//lint:ignore SA1019 The dashboard is v1 JSON, as above.
	var d dashboard.Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if err := sdkError(d.Validate()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if len(d.Panels) != len(strict.Panels) {
		t.Fatalf("plain decoding found %d panels, strict %d", len(d.Panels), len(strict.Panels))
	}
	if d.Uid == nil || *d.Uid != "vllm-slo" {
		t.Errorf("uid = %v, want vllm-slo (the provisioned links use it)", d.Uid)
	}

	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, want := range []string{"datasource", "target", "model_name", "window"} {
		if !slices.Contains(vars, want) {
			t.Errorf("variable %q missing; have %v", want, vars)
		}
	}

	var rows []string
	ids := map[uint32]bool{}
	for _, p := range d.Panels {
		var id uint32
		switch {
		case p.RowPanel != nil:
			id = p.RowPanel.Id
			if p.RowPanel.Title != nil {
				rows = append(rows, *p.RowPanel.Title)
			}
		case p.Panel != nil:
			if p.Panel.Id != nil {
				id = *p.Panel.Id
			}
			checkPanel(t, p.Panel, vars)
		}
		if id == 0 || ids[id] {
			t.Errorf("panel id %d is zero or repeated", id)
		}
		ids[id] = true
	}
	for _, want := range []string{"SLO status", "Goodput vs throughput", "Latency", "Little's Law", "Cost per million tokens", "Sidecar health"} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("row %q missing; have %v", want, rows)
		}
	}
}

// checkPanel checks one panel's wiring: the chosen data source, a known
// repeat variable, queries present, and a panel inside the 24-column grid.
func checkPanel(t *testing.T, p *dashboard.Panel, vars []string) {
	t.Helper()
	title := ""
	if p.Title != nil {
		title = *p.Title
	}
	if p.Datasource == nil || p.Datasource.Uid == nil || *p.Datasource.Uid != "${datasource}" {
		t.Errorf("panel %q: data source is not ${datasource}", title)
	}
	if p.Repeat != nil && !slices.Contains(vars, *p.Repeat) {
		t.Errorf("panel %q repeats over unknown variable %q", title, *p.Repeat)
	}
	if len(p.Targets) == 0 {
		t.Errorf("panel %q has no query", title)
	}
	if p.GridPos == nil || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W == 0 || p.GridPos.H == 0 {
		t.Errorf("panel %q: grid position %+v outside the 24-column grid", title, p.GridPos)
	}
}

// dashboardQuery is one PromQL text of the dashboard and where it is.
type dashboardQuery struct {
	where, expr, legend string
}

// dashboardQueries collects every panel query and every variable query
// from the raw JSON, so that nothing the SDK's types might skip escapes.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID        string `json:"refId"`
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var qs []dashboardQuery
	for _, p := range raw.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, dashboardQuery{where: fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), expr: tg.Expr, legend: tg.LegendFormat})
		}
	}
	for _, v := range raw.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(string)
		if !ok {
			t.Errorf("variable %q: query is %T, want a label_values string", v.Name, v.Query)
			continue
		}
		qs = append(qs, dashboardQuery{where: fmt.Sprintf("variable %q", v.Name), expr: q})
	}
	if len(qs) < 30 {
		t.Fatalf("only %d queries found in %s", len(qs), dashboardPath)
	}
	return qs
}

var (
	variableRef = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)
	labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)
	legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
)

// substitute replaces Grafana variables with concrete values.
func substitute(expr string) (string, error) {
	var unknown []string
	out := variableRef.ReplaceAllStringFunc(expr, func(m string) string {
		name := strings.Trim(m, "${}")
		v, ok := variableValues[name]
		if !ok {
			unknown = append(unknown, m)
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variables %v", unknown)
	}
	return out, nil
}

// TestDashboardQueries parses every query with Prometheus's own parser and
// checks each selector against the real expositions: the metric must be one
// vLLM or our exporter serves, every label matcher must match a value that
// metric's series carry, and legends may only name labels that exist.
func TestDashboardQueries(t *testing.T) {
	e := realExpositions(t)
	promql := parser.NewParser(parser.Options{})
	lookup := func(name string) (map[string]map[string]bool, bool) {
		if l, ok := e.exporter[name]; ok {
			return l, true
		}
		l, ok := e.vllm[name]
		return l, ok
	}
	for _, q := range dashboardQueries(t) {
		expr, err := substitute(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		var selectors []*parser.VectorSelector
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			matchers, err := promql.ParseMetricSelector(m[1])
			if err != nil {
				t.Errorf("%s: %q: %v", q.where, m[1], err)
				continue
			}
			vs := &parser.VectorSelector{LabelMatchers: matchers}
			selectors = append(selectors, vs)
			matchers = append(matchers, labels.MustNewMatcher(labels.MatchRegexp, m[2], ".+"))
			vs.LabelMatchers = matchers
		} else {
			node, err := promql.ParseExpr(expr)
			if err != nil {
				t.Errorf("%s: %q: %v", q.where, expr, err)
				continue
			}
			parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					selectors = append(selectors, vs)
				}
				return nil
			})
		}
		if len(selectors) == 0 {
			t.Errorf("%s: %q selects no series", q.where, expr)
		}
		legendOK := map[string]bool{}
		self := false
		for _, vs := range selectors {
			name := ""
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if isSelfMetric(name) {
				self = true
				continue
			}
			known, ok := lookup(name)
			if !ok {
				t.Errorf("%s: metric %q is served neither by the exporter (replay) nor by vLLM (simulator)", q.where, name)
				continue
			}
			for l := range known {
				legendOK[l] = true
			}
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					continue
				}
				if !slices.ContainsFunc(keys(known[m.Name]), m.Matches) {
					t.Errorf("%s: matcher %s matches no series of %s (label values %v)", q.where, m, name, keys(known[m.Name]))
				}
			}
		}
		if self {
			continue
		}
		for _, m := range legendLabel.FindAllStringSubmatch(q.legend, -1) {
			if !legendOK[m[1]] {
				t.Errorf("%s: legend %q names label %q, which the selected series lack", q.where, q.legend, m[1])
			}
		}
	}
}

// keys returns a set's members ("" for an absent label, which a matcher
// like label="" or label!="x" matches).
func keys(set map[string]bool) []string {
	if len(set) == 0 {
		return []string{""}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDashboardProvisioning checks that the provisioning files point Grafana
// at a Prometheus data source and at the directory compose mounts the
// dashboard into.
func TestDashboardProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name      string         `yaml:"name"`
			UID       string         `yaml:"uid"`
			Type      string         `yaml:"type"`
			Access    string         `yaml:"access"`
			URL       string         `yaml:"url"`
			IsDefault bool           `yaml:"isDefault"`
			Editable  bool           `yaml:"editable"`
			JSONData  map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "deploy/grafana/provisioning/datasources/prometheus.yml", &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("datasource provisioning: %+v", ds)
	}

	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name                  string         `yaml:"name"`
			OrgID                 int            `yaml:"orgId"`
			Folder                string         `yaml:"folder"`
			Type                  string         `yaml:"type"`
			DisableDeletion       bool           `yaml:"disableDeletion"`
			AllowUIUpdates        bool           `yaml:"allowUiUpdates"`
			UpdateIntervalSeconds int            `yaml:"updateIntervalSeconds"`
			Options               map[string]any `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "deploy/grafana/provisioning/dashboards/vllm-slo.yml", &dp)
	if dp.APIVersion != 1 || len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("dashboard provisioning: %+v", dp)
	}
	dir, _ := dp.Providers[0].Options["path"].(string)
	c := readCompose(t)
	found := false
	for _, v := range c.Services["grafana"].Volumes {
		src, dst, _ := splitVolume(v)
		if filepath.Clean(src) == "../grafana/dashboard.json" && filepath.Dir(dst) == dir {
			found = true
		}
	}
	if !found {
		t.Errorf("compose mounts ../grafana/dashboard.json nowhere under the provisioned path %q", dir)
	}
}
