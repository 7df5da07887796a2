//lint:file-ignore SA1019 The dashboard is built with the v1 builder: the v1 dashboard JSON is what Grafana 10 and 11 import; the v2 schema would drop them.

package main

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UID is the dashboard's stable identifier: links and provisioning use it.
const UID = "vllm-slo"

// Label selectors shared by the queries. Grafana turns multi-value variables
// into regular expressions, hence =~.
const (
	sel  = `target=~"$target", model_name=~"$model_name"`
	selW = sel + `, window="$window"`
)

// latencyMetrics are the values of the metric label shown as latency panels,
// in the order a request meets them.
var latencyMetrics = []struct{ metric, title string }{
	{"ttft", "TTFT (time to first token)"},
	{"tpot", "TPOT (mean time per output token of a request)"},
	{"itl", "ITL (each inter-token gap)"},
	{"e2e", "End-to-end latency"},
	{"queue", "Queue time"},
	{"prefill", "Prefill time"},
	{"decode", "Decode time"},
}

// render builds the dashboard and returns its indented JSON with a final
// newline.
func render() ([]byte, error) {
	d, err := build().Build()
	if err != nil {
		return nil, fmt.Errorf("build dashboard: %w", err)
	}
	for i, p := range d.Panels {
		id := uint32(i + 1)
		switch {
		case p.Panel != nil:
			p.Panel.Id = &id
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal dashboard: %w", err)
	}
	return append(b, '\n'), nil
}

// build assembles the dashboard: variables, then one row per question an
// operator asks, from "are we keeping our promise?" down to "is the sidecar
// itself healthy?".
func build() *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder("vLLM SLO").
		Uid(UID).
		Description("SLO attainment, goodput, latency quantiles with honest bounds, Little's Law and cost, from vllm-slo-exporter. Bands are the bounds the true value cannot leave.").
		Tags([]string{"vllm", "slo", "llm"}).
		Editable().
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair)
	for _, v := range variables() {
		b = b.WithVariable(v)
	}
	sloStatus(b)
	goodput(b)
	latency(b)
	littlesLaw(b)
	capacityRow(b)
	cost(b)
	health(b)
	return b
}

// ds refers to the data source chosen in the datasource variable.
func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// query is one PromQL range query with a legend.
func query(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(ds()).
		RefId(ref).
		Expr(expr).
		LegendFormat(legend).
		Range()
}

// instant is one PromQL instant query returned as a table.
func instant(ref, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(ds()).
		RefId(ref).
		Expr(expr).
		Instant().
		Format(prometheus.PromQueryFormatTable)
}

// timeSeries is a time-series panel of the given size.
func timeSeries(title, description, unit string, w, h uint32) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(ds()).
		Unit(unit).
		Span(w).
		Height(h).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
}

// band makes the series named upper fill down to the series named lower, so
// the pair reads as the interval the true value cannot leave.
func band(p *timeseries.PanelBuilder, lower, upper string) *timeseries.PanelBuilder {
	return p.
		OverrideByName(upper, []dashboard.DynamicConfigValue{
			{Id: "custom.fillBelowTo", Value: lower},
			{Id: "custom.fillOpacity", Value: 20},
			{Id: "custom.lineWidth", Value: 0},
		}).
		OverrideByName(lower, []dashboard.DynamicConfigValue{
			{Id: "custom.lineWidth", Value: 0},
		})
}

// singleStat is a stat panel showing the last value of each series.
func singleStat(title, description, unit string, w, h uint32) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(ds()).
		Unit(unit).
		Span(w).
		Height(h).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeBackground).
		TextMode(common.BigValueTextModeValueAndName).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
}

// valueTable is a table panel of instant queries, without the time column.
func valueTable(title, description string, w, h uint32, rename map[string]any) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(ds()).
		Span(w).
		Height(h).
		CellHeight(common.TableCellHeightSm).
		// Without an explicit reducer the SDK writes "reducer": null, which
		// its own strict unmarshal rejects.
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{})).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true, "__name__": true},
			"renameByName":  rename,
		}})
}

// thresholds builds absolute thresholds: base colour below at, over colour from at.
func thresholds(base string, at float64, over string) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: base}, {Value: &at, Color: over}})
}

// valueText maps exact values to text and colour.
func valueText(pairs ...[3]string) []dashboard.ValueMapping {
	m := dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{}}
	for i, p := range pairs {
		idx := int32(i)
		m.Options[p[0]] = dashboard.ValueMappingResult{Text: cog.ToPtr(p[1]), Color: cog.ToPtr(p[2]), Index: &idx}
	}
	return []dashboard.ValueMapping{{ValueMap: &m}}
}
