package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// variables are the dashboard's template variables. Their values come from
// the exporter's own series, so a new target, model, window, SLO or quantile
// in the configuration shows up without editing the dashboard.
func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus"),
		labelValues("target", "Target", `label_values(vllm_slo_target_up, target)`, true, ""),
		labelValues("model_name", "Model", `label_values(vllm_slo_window_requests{target=~"$target"}, model_name)`, true, ""),
		labelValues("window", "Window", `label_values(vllm_slo_window_requests{target=~"$target"}, window)`, false, "5m"),
		labelValues("slo", "SLO", `label_values(vllm_slo_attainment_ratio{target=~"$target"}, slo)`, true, ""),
		labelValues("quantile", "Quantile", `label_values(vllm_slo_latency_seconds{target=~"$target"}, q)`, false, "0.99"),
	}
}

// labelValues is a query variable over one label. A multi-value variable
// offers "All" (matched as .*); a single-value one starts at current.
func labelValues(name, label, q string, multi bool, current string) *dashboard.QueryVariableBuilder {
	v := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(ds()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc).
		Multi(multi)
	if multi {
		return v.IncludeAll(true).AllValue(".*").Current(option("All", "$__all"))
	}
	return v.Current(option(current, current))
}

// option is a selected variable option.
func option(text, value string) dashboard.VariableOption {
	return dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr(text)},
		Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr(value)},
	}
}
