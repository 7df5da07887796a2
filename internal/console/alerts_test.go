package console

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// checkOverviewStateFromPipelineAlerts: the alerts the pipeline raises for
// an overload (burn-rate alerts carry no target label, so that they merge
// with the generated rules' copies) set the state of their SLO's row, and
// the Alerts table names the target they came from.
func checkOverviewStateFromPipelineAlerts(t *testing.T, r *rig) {
	var burn []pipeline.Alert
	for _, a := range r.rep.Alerts {
		if a.Name() == pipeline.AlertBurnRate {
			burn = append(burn, a)
		}
	}
	if len(burn) == 0 {
		t.Fatal("the overload raised no burn-rate alert")
	}
	want := ""
	for _, a := range burn {
		if _, ok := a.Labels["target"]; ok {
			t.Errorf("burn-rate alert %v carries a target label; this test stands for the alerts that do not", a.Labels)
		}
		switch {
		case a.State == pipeline.StateFiring:
			want = "firing"
		case a.State == pipeline.StatePending && want == "":
			want = "pending"
		}
	}
	o := buildOverview(r.rep, r.pipe.Spec().SLOs, "")
	i := slices.IndexFunc(o.Rows, func(row Row) bool { return row.Model == hostile && row.SLO == "interactive" })
	if i < 0 {
		t.Fatal("no row for the overloaded model")
	}
	if got := o.Rows[i].Alert; got != want {
		t.Errorf("overview state %q, the pipeline's alerts say %q", got, want)
	}
	if i != 0 {
		t.Errorf("the alerting row is row %d, not first", i)
	}
	for _, a := range o.Active {
		if a.Name() == pipeline.AlertBurnRate && !slices.Equal(a.Targets, []string{"gpu0"}) {
			t.Errorf("alert %v lists targets %v, want gpu0", a.Labels, a.Targets)
		}
	}
	_, page := get(t, r.console(), "/")
	table := page[strings.Index(page, `id="alerts"`):]
	if !strings.Contains(table, "<td>gpu0</td>") {
		t.Error("the Alerts table does not name the target of the burn-rate alerts")
	}
	if !strings.Contains(page, `data-state="`+want+`"`) {
		t.Errorf("the overview does not print the state %q", want)
	}
}

// TestAlertMatching: an alert belongs to a row by the labels the row has;
// extra labels (external labels, windows) and a missing target label do not
// keep it out, another target or model does.
func TestAlertMatching(t *testing.T) {
	alert := func(target string, kv ...string) pipeline.Alert {
		l := map[string]string{"alertname": pipeline.AlertBurnRate, "severity": "page"}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return pipeline.Alert{Target: target, Labels: l, State: pipeline.StateFiring}
	}
	for _, c := range []struct {
		name string
		a    pipeline.Alert
		want bool
	}{
		{"burn alert without target label", alert("t", "model_name", "m", "slo", "s"), true},
		{"with extra labels", alert("t", "model_name", "m", "slo", "s", "cluster", "eu", "long_window", "1h"), true},
		{"target label only", alert("", "model_name", "m", "slo", "s", "target", "t"), true},
		{"merged, no source target", alert("", "model_name", "m", "slo", "s"), true},
		{"other target", alert("u", "model_name", "m", "slo", "s"), false},
		{"other target label", alert("t", "model_name", "m", "slo", "s", "target", "u"), false},
		{"other model", alert("t", "model_name", "n", "slo", "s"), false},
		{"other SLO", alert("t", "model_name", "m", "slo", "x"), false},
		{"target-level alert", alert("t", "target", "t"), false},
	} {
		if got := alertMatches(c.a, "t", "m", "s"); got != c.want {
			t.Errorf("%s: match %v, want %v", c.name, got, c.want)
		}
	}
}
