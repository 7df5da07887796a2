package rules

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// RuleFile is a Prometheus rule file: groups of recording and alerting rules,
// in the format of Prometheus's `rule_files`.
type RuleFile struct {
	// Groups are evaluated independently; rules within one group in order.
	Groups []Group `yaml:"groups"`
	// Comment is written at the top of the file.
	Comment string `yaml:"-"`
}

// Group is one rule group. Its rules are evaluated in order, so a rule may
// use the series recorded by the rules before it.
type Group struct {
	// Name is unique within the file.
	Name string `yaml:"name"`
	// Interval overrides Prometheus's evaluation_interval when non-zero.
	Interval model.Duration `yaml:"interval,omitempty"`
	// Concurrency is, for vmalert only, how many of the group's rules it
	// evaluates at once (its group field of that name); 0 leaves the field
	// out, as Prometheus requires (it rejects the field).
	Concurrency int `yaml:"concurrency,omitempty"`
	// QueryOffset is how long before each evaluation's time the group's
	// rules read (Prometheus 2.53 and later, Thanos; Options.QueryOffset);
	// 0 leaves the field out, which older Prometheus refuses.
	QueryOffset model.Duration `yaml:"query_offset,omitempty"`
	// Rules are the group's rules, in evaluation order.
	Rules []Rule `yaml:"rules"`
	// Lag is, for an SLO's long group, how far before each of its
	// evaluations the SLO group's evaluation lies at the latest that its
	// windowed series describe (they describe the last one at or before
	// it); 0 for the other groups.
	Lag model.Duration `yaml:"-"`
	// Comment is written above the group.
	Comment string `yaml:"-"`
}

// Rule is one recording rule (Record set) or alerting rule (Alert set).
type Rule struct {
	// Record is the name of the series a recording rule writes.
	Record string `yaml:"record,omitempty"`
	// Alert is the alertname of an alerting rule.
	Alert string `yaml:"alert,omitempty"`
	// Expr is the PromQL expression.
	Expr string `yaml:"expr"`
	// For is how long an alert's condition must hold before it fires.
	For model.Duration `yaml:"for,omitempty"`
	// Labels are added to (or replace those of) the result series or alerts.
	Labels map[string]string `yaml:"labels,omitempty"`
	// Annotations are an alert's templated descriptions.
	Annotations map[string]string `yaml:"annotations,omitempty"`
	// Comment is written above the rule, e.g. to say that a threshold was
	// rounded down to a bucket edge.
	Comment string `yaml:"-"`
}

// WithConcurrency is a copy of f with every group's vmalert concurrency
// (Group.Concurrency) set to c; f is unchanged.
func (f *RuleFile) WithConcurrency(c int) *RuleFile {
	cp := *f
	cp.Groups = slices.Clone(f.Groups)
	for i := range cp.Groups {
		cp.Groups[i].Concurrency = c
	}
	return &cp
}

// YAML renders the rule file as YAML with its comments, ready for
// `promtool check rules` and Prometheus's rule_files.
func (f *RuleFile) YAML() ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(f); err != nil {
		return nil, fmt.Errorf("encode rule file: %w", err)
	}
	root.HeadComment = f.Comment
	groups := mappingValue(&root, "groups")
	if groups == nil || len(groups.Content) != len(f.Groups) {
		return nil, fmt.Errorf("encode rule file: unexpected YAML shape for %d groups", len(f.Groups))
	}
	for i, g := range f.Groups {
		gn := groups.Content[i]
		gn.HeadComment = g.Comment
		rules := mappingValue(gn, "rules")
		if rules == nil || len(rules.Content) != len(g.Rules) {
			return nil, fmt.Errorf("encode group %q: unexpected YAML shape for %d rules", g.Name, len(g.Rules))
		}
		for j, r := range g.Rules {
			rules.Content[j].HeadComment = r.Comment
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("write rule file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write rule file: %w", err)
	}
	return buf.Bytes(), nil
}

// mappingValue returns the value node of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
