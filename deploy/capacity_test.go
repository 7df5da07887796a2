package deploy

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
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
}

// TestScaledObjectQuery parses the KEDA ScaledObject's query and checks
// each selector against what replay prints: the metric exists and every
// matcher matches a value of its series.
func TestScaledObjectQuery(t *testing.T) {
	var so struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   map[string]string `yaml:"metadata"`
		Spec       struct {
			ScaleTargetRef  map[string]string `yaml:"scaleTargetRef"`
			MinReplicaCount int               `yaml:"minReplicaCount"`
			MaxReplicaCount int               `yaml:"maxReplicaCount"`
			CooldownPeriod  int               `yaml:"cooldownPeriod"`
			Fallback        struct {
				FailureThreshold int `yaml:"failureThreshold"`
				Replicas         int `yaml:"replicas"`
			} `yaml:"fallback"`
			Triggers []struct {
				Type     string            `yaml:"type"`
				Metadata map[string]string `yaml:"metadata"`
			} `yaml:"triggers"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/autoscaling/keda-scaledobject.yaml", &so)
	if so.Kind != "ScaledObject" || len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" || so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount < so.Spec.MinReplicaCount {
		t.Fatalf("%s with triggers %+v and replicas %d to %d, want a ScaledObject with one prometheus trigger", so.Kind, so.Spec.Triggers, so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	e := realExpositions(t)
	node, err := parser.NewParser(parser.Options{}).ParseExpr(so.Spec.Triggers[0].Metadata["query"])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	parser.Inspect(node, func(nd parser.Node, _ []parser.Node) error {
		vs, ok := nd.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		n++
		known, ok := e.exporter[vs.Name]
		if !ok {
			t.Errorf("%s: replay prints no such series", vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel && !slices.ContainsFunc(keys(known[m.Name]), m.Matches) {
				t.Errorf("%s: matcher %s matches no series (values %v)", vs.Name, m, keys(known[m.Name]))
			}
		}
		return nil
	})
	if n != 2 {
		t.Errorf("%d selectors in the query, want the load and the capacity's lower end", n)
	}
}
