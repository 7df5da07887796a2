package deploy

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// seriesNames maps a metric name to the label names its series carry and,
// per label, the values seen (the union over its series).
type seriesNames map[string]map[string]map[string]bool

// expositions are the names vLLM serves (from the simulator) and the names
// our exporter serves (from `replay` over a recording of that simulator).
type expositions struct {
	vllm, exporter seriesNames
}

// replayDuration is long enough for the 5m window and for the
// replay config's alert to be pending.
const (
	replayDuration = 12 * time.Minute
	replayStep     = 15 * time.Second
)

// realExpositions records the demo simulator for replayDuration, replays the
// recording through the real binary with deploy/testdata/replay.yaml, and
// returns both expositions' names. It runs once per test binary.
func realExpositions(t *testing.T) expositions {
	t.Helper()
	e, err := sharedExpositions()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var sharedExpositions = sync.OnceValues(buildExpositions)

func buildExpositions() (expositions, error) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.DemoConfig(1, start))
	if err != nil {
		return expositions{}, fmt.Errorf("simulator: %w", err)
	}
	dir, err := tempDir()
	if err != nil {
		return expositions{}, err
	}
	recPath := filepath.Join(dir, "demo.jsonl")
	w, err := recording.Create(recPath)
	if err != nil {
		return expositions{}, err
	}
	out := expositions{vllm: seriesNames{}, exporter: seriesNames{}}
	for at := start.Add(replayStep); !at.After(start.Add(replayDuration)); at = at.Add(replayStep) {
		if at.Equal(start.Add(replayDuration / 2)) {
			// One failed scrape, so that the failure counter is served too.
			if err := w.Write(recording.Entry{Time: at, Target: "rtx4090", Error: "connection refused"}); err != nil {
				return expositions{}, err
			}
			continue
		}
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		if err := addNames(out.vllm, body, ct); err != nil {
			return expositions{}, fmt.Errorf("simulator exposition: %w", err)
		}
		if err := w.Write(recording.Entry{Time: at, Target: "rtx4090", Status: 200, ContentType: ct, Body: string(body)}); err != nil {
			return expositions{}, err
		}
	}
	if err := w.Close(); err != nil {
		return expositions{}, err
	}
	replayed, err := execBinary("replay", "--config.file="+filepath.Join("testdata", "replay.yaml"), "--recording="+recPath)
	if err != nil {
		return expositions{}, err
	}
	if err := addNames(out.exporter, replayed, "text/plain; version=0.0.4"); err != nil {
		return expositions{}, fmt.Errorf("replay output: %w", err)
	}
	if err := addCapacityNames(dir, out.exporter); err != nil {
		return expositions{}, err
	}
	return out, nil
}

// tempDir is a directory that lives as long as the test binary (the names
// are shared between tests, so t.TempDir of the first test will not do).
func tempDir() (string, error) {
	path, err := binary()
	if err != nil {
		return "", err
	}
	return filepath.Dir(path), nil
}

// addNames adds every series' name and label names of an exposition.
func addNames(names seriesNames, body []byte, contentType string) error {
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
	if p == nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	var lset labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if et != textparse.EntrySeries {
			continue
		}
		p.Labels(&lset)
		name := lset.Get(model.MetricNameLabel)
		if names[name] == nil {
			names[name] = map[string]map[string]bool{}
		}
		lset.Range(func(l labels.Label) {
			if l.Name == model.MetricNameLabel {
				return
			}
			if names[name][l.Name] == nil {
				names[name][l.Name] = map[string]bool{}
			}
			names[name][l.Name][l.Value] = true
		})
	}
}

// selfMetricPrefixes are the families every instance of the daemon serves
// about itself (Go runtime, process, build and reload state), which `replay`
// does not print.
var selfMetricPrefixes = []string{"go_", "process_", "vllm_slo_exporter_"}

func isSelfMetric(name string) bool {
	for _, p := range selfMetricPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TestExpositionsAreRich guards the comparison the dashboard test relies on:
// if replay printed little (a broken pipeline), every dashboard name would
// look unknown, and if it printed nothing the test would be meaningless.
func TestExpositionsAreRich(t *testing.T) {
	e := realExpositions(t)
	for _, name := range []string{
		"vllm_slo_target_up", "vllm_slo_latency_upper_seconds", "vllm_slo_attainment_lower_ratio",
		"vllm_slo_goodput_tokens_per_second", "vllm_slo_burn_rate_upper", "vllm_slo_alert_firing",
		"vllm_slo_cost_per_million_tokens", "vllm_slo_concurrency_observed",
	} {
		if e.exporter[name] == nil {
			t.Errorf("replay output lacks %s", name)
		}
	}
	for _, name := range []string{"vllm:time_to_first_token_seconds_bucket", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"} {
		if e.vllm[name] == nil {
			t.Errorf("simulator exposition lacks %s", name)
		}
	}
	if !e.exporter["vllm_slo_latency_seconds"]["gpu"]["rtx4090"] {
		t.Error("the target's extra label gpu is missing from vllm_slo_latency_seconds")
	}
}
