package rules_test

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// TestBurnAlertTextIsTheDaemons: for every burn-rate alert of the example
// configuration, the generated rule's summary and description, with its
// label templates filled in, are the words the daemon sends, so that the
// alert Alertmanager merges from both paths reads the same whichever sent
// it last.
func TestBurnAlertTextIsTheDaemons(t *testing.T) {
	cfg, err := config.Load("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rf, err := rules.DefaultOptions().Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const modelName = "Qwen/Qwen2.5-7B-Instruct"
	fill := strings.NewReplacer("{{ $labels.model_name }}", modelName)
	checked := 0
	for _, a := range daemon.PipelineSpec(cfg).Alerts {
		var rule *rules.Rule
		for _, g := range rf.Groups {
			for i, r := range g.Rules {
				l := r.Labels
				if r.Alert == rules.AlertBurnRate && l["slo"] == a.SLO && l["severity"] == a.Severity &&
					l["long_window"] == model.Duration(a.Long).String() && l["short_window"] == model.Duration(a.Short).String() {
					rule = &g.Rules[i]
				}
			}
		}
		if rule == nil {
			t.Errorf("no rule for the daemon's alert %+v", a)
			continue
		}
		summary, description := pipeline.BurnAlertText(a.SLO, modelName, a)
		sloFill := strings.NewReplacer("{{ $labels.slo }}", a.SLO)
		if got := sloFill.Replace(fill.Replace(rule.Annotations["summary"])); got != summary {
			t.Errorf("summary:\n rule:   %s\n daemon: %s", got, summary)
		}
		if got := sloFill.Replace(fill.Replace(rule.Annotations["description"])); got != description {
			t.Errorf("description:\n rule:   %s\n daemon: %s", got, description)
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("%d alerts compared", checked)
	}
}
