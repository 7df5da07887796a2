package deploy

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// capacityDay is the rate profile of the recording that gives the tests
// the capacity series: the 12-minute replay holds too few two-minute
// windows for any capacity answer (15 are needed), so only its
// kind="unknown" series are in it. This day rises past the knee of the
// demo's one-engine server (a bounded answer), falls back and rises
// again slowly below it (a load trend pointing at the capacity: a time to
// breach).
var capacityDay = []sim.Phase{
	{Duration: 45 * time.Minute, Kind: sim.Ramp, Rate: 2, RateEnd: 7},
	{Duration: 10 * time.Minute, Kind: sim.Poisson, Rate: 2.5},
	{Duration: 30 * time.Minute, Kind: sim.Ramp, Rate: 2.5, RateEnd: 3.5},
}

// addCapacityNames records capacityDay, replays it through the binary with
// deploy/testdata/replay.yaml and adds the capacity series it prints to
// names (every vllm_slo_capacity_ series, nothing else: the rest is the
// 12-minute replay's).
func addCapacityNames(dir string, names seriesNames) error {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := sim.DemoConfig(1, start)
	cfg.DiscardTokenTimes = true
	cfg.Models[0].Engines = 1
	cfg.Models[0].Workload.Phases, cfg.Models[0].Workload.Repeat = capacityDay, false
	s, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("capacity day: %w", err)
	}
	path := filepath.Join(dir, "capacity-day.jsonl")
	w, err := recording.Create(path)
	if err != nil {
		return err
	}
	var length time.Duration
	for _, p := range capacityDay {
		length += p.Duration
	}
	for at := start.Add(replayStep); !at.After(start.Add(length)); at = at.Add(replayStep) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		if err := w.Write(recording.Entry{Time: at, Target: "rtx4090", Status: 200, ContentType: ct, Body: string(body)}); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	out, err := execBinary("replay", "--config.file="+filepath.Join("testdata", "replay.yaml"), "--recording="+path)
	if err != nil {
		return err
	}
	var capacity bytes.Buffer
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "vllm_slo_capacity_") || strings.HasPrefix(line, "# HELP vllm_slo_capacity_") || strings.HasPrefix(line, "# TYPE vllm_slo_capacity_") {
			capacity.WriteString(line)
		}
	}
	if err := addNames(names, capacity.Bytes(), "text/plain; version=0.0.4"); err != nil {
		return fmt.Errorf("capacity day replay: %w", err)
	}
	return nil
}

// TestReplayPrintsTheCapacitySeries: the capacity day's replay prints every
// capacity series, bounded ones and the time to breach included, so that
// the dashboard's and the ScaledObject's queries are checked against
// names replay really prints.
func TestReplayPrintsTheCapacitySeries(t *testing.T) {
	e := realExpositions(t)
	for _, name := range []string{
		"vllm_slo_capacity_requests_per_second", "vllm_slo_capacity_lower_requests_per_second", "vllm_slo_capacity_upper_requests_per_second",
		"vllm_slo_capacity_tokens_per_second", "vllm_slo_capacity_concurrency",
		"vllm_slo_capacity_headroom_ratio", "vllm_slo_capacity_headroom_lower_ratio", "vllm_slo_capacity_headroom_upper_ratio",
		"vllm_slo_capacity_time_to_breach_seconds", "vllm_slo_capacity_time_to_breach_earliest_seconds",
		"vllm_slo_capacity_load_requests_per_second", "vllm_slo_capacity_learning_since_timestamp_seconds",
	} {
		if !e.exporter[name]["kind"]["bounded"] {
			t.Errorf("replay prints no bounded %s (kinds %v)", name, keys(e.exporter[name]["kind"]))
		}
	}
	// The replica signal is one series per model and SLO, without kind.
	if r := e.exporter["vllm_slo_capacity_replicas"]; !r["slo"]["interactive"] || len(r["kind"]) > 0 || len(r["target"]) > 0 {
		t.Errorf("replay prints vllm_slo_capacity_replicas with labels %v, want slo=\"interactive\" and neither kind nor target", r)
	}
}

// hpaBehavior is an autoscaling/v2 behavior, as the ScaledObject and the
// HPA write it.
type hpaBehavior struct {
	ScaleUp   hpaRules `yaml:"scaleUp"`
	ScaleDown hpaRules `yaml:"scaleDown"`
}

// hpaRules are one direction's stabilization window and policies.
type hpaRules struct {
	StabilizationWindowSeconds int    `yaml:"stabilizationWindowSeconds"`
	SelectPolicy               string `yaml:"selectPolicy"`
	Policies                   []struct {
		Type          string `yaml:"type"`
		Value         int    `yaml:"value"`
		PeriodSeconds int    `yaml:"periodSeconds"`
	} `yaml:"policies"`
}

// checkBehavior fails unless b is the behavior the signals were compared
// under (bench/fleetday's DefaultHPA).
func checkBehavior(t *testing.T, name string, b hpaBehavior) {
	t.Helper()
	up, down := b.ScaleUp, b.ScaleDown
	if up.StabilizationWindowSeconds != 30 || len(up.Policies) != 2 || up.SelectPolicy != "Max" ||
		down.StabilizationWindowSeconds != 180 || len(down.Policies) != 1 || down.Policies[0].Type != "Pods" || down.Policies[0].Value != 1 || down.Policies[0].PeriodSeconds != 120 {
		t.Errorf("%s: behavior %+v, want up max(100%%, 4 pods)/60 s after 30 s, down 1 pod/120 s after 180 s", name, b)
	}
}

// selectors parses query and calls f with each of its vector selectors.
func selectors(t *testing.T, query string, f func(*parser.VectorSelector)) int {
	t.Helper()
	node, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		t.Fatalf("%q: %v", query, err)
	}
	n := 0
	parser.Inspect(node, func(nd parser.Node, _ []parser.Node) error {
		if vs, ok := nd.(*parser.VectorSelector); ok {
			n++
			f(vs)
		}
		return nil
	})
	return n
}

// TestScaledObjectQuery parses the KEDA ScaledObject: one prometheus
// trigger whose query sums the replica signal, each of its matchers
// matching a series replay prints, under an AverageValue target; a
// fallback that never shrinks the Deployment; the compared behavior.
func TestScaledObjectQuery(t *testing.T) {
	var so struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   map[string]string `yaml:"metadata"`
		Spec       struct {
			ScaleTargetRef  map[string]string `yaml:"scaleTargetRef"`
			MinReplicaCount int               `yaml:"minReplicaCount"`
			MaxReplicaCount int               `yaml:"maxReplicaCount"`
			Fallback        struct {
				FailureThreshold int    `yaml:"failureThreshold"`
				Replicas         int    `yaml:"replicas"`
				Behavior         string `yaml:"behavior"`
			} `yaml:"fallback"`
			Advanced struct {
				HorizontalPodAutoscalerConfig struct {
					Behavior hpaBehavior `yaml:"behavior"`
				} `yaml:"horizontalPodAutoscalerConfig"`
			} `yaml:"advanced"`
			Triggers []struct {
				Type       string            `yaml:"type"`
				MetricType string            `yaml:"metricType"`
				Metadata   map[string]string `yaml:"metadata"`
			} `yaml:"triggers"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/autoscaling/keda-scaledobject.yaml", &so)
	if so.Kind != "ScaledObject" || len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" || so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount < so.Spec.MinReplicaCount {
		t.Fatalf("%s with triggers %+v and replicas %d to %d, want a ScaledObject with one prometheus trigger", so.Kind, so.Spec.Triggers, so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	tr := so.Spec.Triggers[0]
	if th, err := strconv.ParseFloat(tr.Metadata["threshold"], 64); err != nil || th <= 0 || tr.MetricType != "AverageValue" || tr.Metadata["ignoreNullValues"] != "false" {
		t.Errorf("trigger %+v: want an AverageValue threshold > 0 and ignoreNullValues false (an empty answer is no 0)", tr)
	}
	if so.Spec.Fallback.Behavior != "currentReplicasIfHigher" {
		t.Errorf("fallback %+v: want currentReplicasIfHigher (a missing metric never shrinks the Deployment)", so.Spec.Fallback)
	}
	checkBehavior(t, "ScaledObject", so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior)
	e := realExpositions(t)
	n := selectors(t, tr.Metadata["query"], func(vs *parser.VectorSelector) {
		if vs.Name != "vllm_slo_capacity_replicas" {
			t.Errorf("the query selects %s, want the replica signal vllm_slo_capacity_replicas", vs.Name)
		}
		known, ok := e.exporter[vs.Name]
		if !ok {
			t.Errorf("%s: replay prints no such series", vs.Name)
			return
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel && !slices.ContainsFunc(keys(known[m.Name]), m.Matches) {
				t.Errorf("%s: matcher %s matches no series (values %v)", vs.Name, m, keys(known[m.Name]))
			}
		}
	})
	if n != 1 {
		t.Errorf("%d selectors in the query, want the replica signal alone", n)
	}
}

// TestHPAReplicaSignal parses the HPA and prometheus-adapter's rule: the
// HPA asks for the external metric the rule serves, by labels replay
// prints, under an AverageValue target and the compared behavior; the
// rule's series and metrics queries are PromQL naming the replica signal,
// summed by the HPA's selector labels.
func TestHPAReplicaSignal(t *testing.T) {
	var hpa struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   map[string]string `yaml:"metadata"`
		Spec       struct {
			ScaleTargetRef map[string]string `yaml:"scaleTargetRef"`
			MinReplicas    int               `yaml:"minReplicas"`
			MaxReplicas    int               `yaml:"maxReplicas"`
			Metrics        []struct {
				Type     string `yaml:"type"`
				External struct {
					Metric struct {
						Name     string `yaml:"name"`
						Selector struct {
							MatchLabels map[string]string `yaml:"matchLabels"`
						} `yaml:"selector"`
					} `yaml:"metric"`
					Target struct {
						Type         string `yaml:"type"`
						AverageValue string `yaml:"averageValue"`
					} `yaml:"target"`
				} `yaml:"external"`
			} `yaml:"metrics"`
			Behavior hpaBehavior `yaml:"behavior"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/autoscaling/hpa.yaml", &hpa)
	if hpa.APIVersion != "autoscaling/v2" || hpa.Kind != "HorizontalPodAutoscaler" || len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Type != "External" ||
		hpa.Spec.ScaleTargetRef["kind"] != "Deployment" || hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < hpa.Spec.MinReplicas {
		t.Fatalf("%s %s with metrics %+v: want an autoscaling/v2 HPA of a Deployment on one external metric", hpa.APIVersion, hpa.Kind, hpa.Spec.Metrics)
	}
	ext := hpa.Spec.Metrics[0].External
	if v, err := strconv.ParseFloat(ext.Target.AverageValue, 64); err != nil || v <= 0 || ext.Target.Type != "AverageValue" {
		t.Errorf("target %+v: want an AverageValue > 0", ext.Target)
	}
	checkBehavior(t, "HPA", hpa.Spec.Behavior)
	e := realExpositions(t)
	for k, v := range ext.Metric.Selector.MatchLabels {
		if !e.exporter[ext.Metric.Name][k][v] {
			t.Errorf("selector %s=%q matches no %s series replay prints (values %v)", k, v, ext.Metric.Name, keys(e.exporter[ext.Metric.Name][k]))
		}
	}

	var adapter struct {
		ExternalRules []struct {
			SeriesQuery string `yaml:"seriesQuery"`
			Resources   struct {
				Overrides map[string]map[string]string `yaml:"overrides"`
			} `yaml:"resources"`
			Name struct {
				Matches string `yaml:"matches"`
				As      string `yaml:"as"`
			} `yaml:"name"`
			MetricsQuery string `yaml:"metricsQuery"`
		} `yaml:"externalRules"`
	}
	readYAML(t, "deploy/autoscaling/prometheus-adapter-rules.yaml", &adapter)
	if len(adapter.ExternalRules) != 1 {
		t.Fatalf("%d external rules, want 1", len(adapter.ExternalRules))
	}
	rule := adapter.ExternalRules[0]
	if rule.Name.As != ext.Metric.Name || !regexp.MustCompile(rule.Name.Matches).MatchString("vllm_slo_capacity_replicas") {
		t.Errorf("rule serves %q (matching %q), the HPA asks for %q", rule.Name.As, rule.Name.Matches, ext.Metric.Name)
	}
	name := func(vs *parser.VectorSelector) {
		if vs.Name != "vllm_slo_capacity_replicas" {
			t.Errorf("adapter query selects %s, want vllm_slo_capacity_replicas", vs.Name)
		}
	}
	if n := selectors(t, rule.SeriesQuery, name); n != 1 {
		t.Errorf("series query %q: %d selectors", rule.SeriesQuery, n)
	}
	// The adapter fills <<.Series>> with the series and <<.LabelMatchers>>
	// with the HPA's selector.
	q := strings.NewReplacer("<<.Series>>", "vllm_slo_capacity_replicas", "<<.LabelMatchers>>", `slo="interactive"`).Replace(rule.MetricsQuery)
	if n := selectors(t, q, name); n != 1 {
		t.Errorf("metrics query %q: %d selectors", q, n)
	}
	for k := range ext.Metric.Selector.MatchLabels {
		if !strings.Contains(rule.MetricsQuery, "by ("+k+")") {
			t.Errorf("metrics query %q does not keep the selector's label %s", rule.MetricsQuery, k)
		}
	}
}
