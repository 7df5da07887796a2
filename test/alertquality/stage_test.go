package alertquality

import (
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// TestStageRules checks that each stage holds only rules whose recorded
// inputs come from earlier stages, keeping group names, intervals and rule
// order, so that vmalert's replay of the stages in order sees every input
// complete, also where a rule reads what a later group records (an SLO
// group's alerts reading its long group's windows).
func TestStageRules(t *testing.T) {
	t.Parallel()
	rf := &rules.RuleFile{Groups: []rules.Group{
		{Name: "g", Interval: 15e9, Rules: []rules.Rule{
			{Record: "a", Expr: "sum(raw)"},
			{Record: "b", Expr: "a * 2"},
			{Record: "a2", Expr: "sum(other)"},
			{Record: "c", Expr: "b + a2"},
			{Alert: "A", Expr: "c > 1"},
			{Alert: "B", Expr: "e > 1"},
		}},
		{Name: "h", Rules: []rules.Rule{{Record: "d", Expr: "sum_over_time(a[5m])"}}},
		{Name: "k", Interval: 60e9, Rules: []rules.Rule{{Record: "e", Expr: "last_over_time(d[1m] offset 30s)"}}},
	}}
	stages, err := stageRules(rf)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"g:a", "g:a2"}, {"g:b", "h:d"}, {"g:c", "k:e"}, {"g:A", "g:B"}}
	if len(stages) != len(want) {
		t.Fatalf("got %d stages, want %d", len(stages), len(want))
	}
	for i, st := range stages {
		var got []string
		for _, g := range st.Groups {
			if (g.Name == "g" && g.Interval != 15e9) || (g.Name == "k" && g.Interval != 60e9) {
				t.Errorf("stage %d: group %s lost its interval", i, g.Name)
			}
			for _, r := range g.Rules {
				got = append(got, g.Name+":"+r.Record+r.Alert)
			}
		}
		if len(got) != len(want[i]) {
			t.Fatalf("stage %d = %v, want %v", i, got, want[i])
		}
		for j := range got {
			if got[j] != want[i][j] {
				t.Errorf("stage %d = %v, want %v", i, got, want[i])
			}
		}
	}
	cyclic := &rules.RuleFile{Groups: []rules.Group{{Name: "g", Rules: []rules.Rule{{Record: "x", Expr: "y + 1"}, {Record: "y", Expr: "x + 1"}}}}}
	if _, err := stageRules(cyclic); err == nil {
		t.Error("rules reading each other in a cycle were cut into stages")
	}
}
