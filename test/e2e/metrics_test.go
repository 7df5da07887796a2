package e2e

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
)

// sample is one parsed series of our exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// series is a parsed exposition.
type series []sample

// parseExposition parses Prometheus text as our /metrics serves it.
func parseExposition(t *testing.T, text string) series {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, tail(text, 2000))
	}
	var out series
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := sample{name: name, labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			s.value = metricValue(mf.GetType(), m)
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

func metricValue(typ dto.MetricType, m *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}

func (s sample) key() string {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.name)
	for _, k := range keys {
		b.WriteString("," + k + "=" + s.labels[k])
	}
	return b.String()
}

// match reports whether s has every label of want (name/value pairs).
func (s sample) match(want map[string]string) bool {
	for k, v := range want {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

// find returns the samples named name carrying every label of want.
func (ss series) find(name string, want map[string]string) series {
	var out series
	for _, s := range ss {
		if s.name == name && s.match(want) {
			out = append(out, s)
		}
	}
	return out
}

// one returns the single sample named name with the labels of want.
func (ss series) one(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	found := ss.find(name, want)
	switch len(found) {
	case 0:
		return 0, false
	case 1:
		return found[0].value, true
	}
	t.Fatalf("%s%v: %d series, want at most one", name, want, len(found))
	return 0, false
}

// with returns a copy of m with more labels.
func with(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// sibling is the lower or upper variant of a bounded series name:
// vllm_slo_latency_seconds → vllm_slo_latency_lower_seconds.
func sibling(name, which string) string {
	for _, unit := range []string{"_seconds", "_ratio", "_tokens_per_second", "_requests_per_second"} {
		if strings.HasSuffix(name, unit) {
			return strings.TrimSuffix(name, unit) + "_" + which + unit
		}
	}
	return name + "_" + which
}

// checkInvariants asserts the invariants of docs/design.md on every bounded
// family of an exposition: lower ≤ estimate ≤ upper, ratios in [0, 1], exact values equal,
// quantiles non-decreasing in q (estimates and both bounds).
func checkInvariants(t *testing.T, ss series) {
	t.Helper()
	bounded := []string{
		"vllm_slo_latency_seconds", "vllm_slo_attainment_ratio",
		"vllm_slo_goodput_tokens_per_second", "vllm_slo_goodput_requests_per_second",
	}
	checked := 0
	for _, name := range bounded {
		for _, est := range ss.find(name, nil) {
			lo, okL := ss.one(t, sibling(name, "lower"), est.labels)
			hi, okH := ss.one(t, sibling(name, "upper"), est.labels)
			if !okL || !okH {
				t.Errorf("%s: missing lower or upper", est.key())
				continue
			}
			checked++
			if !(lo <= est.value && est.value <= hi) {
				t.Errorf("%s: lower %v ≤ estimate %v ≤ upper %v violated", est.key(), lo, est.value, hi)
			}
			if strings.HasSuffix(name, "_ratio") && !(lo >= 0 && hi <= 1) {
				t.Errorf("%s: ratio bounds [%v, %v] outside [0, 1]", est.key(), lo, hi)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no bounded series found in the exposition")
	}
	// Quantiles non-decreasing in q within each (target, model, metric, window).
	type group struct{ name, key string }
	byGroup := map[group][]sample{}
	for _, name := range []string{"vllm_slo_latency_seconds", "vllm_slo_latency_lower_seconds", "vllm_slo_latency_upper_seconds"} {
		for _, s := range ss.find(name, nil) {
			rest := with(s.labels)
			delete(rest, exporter.QuantileLabel)
			byGroup[group{name, sample{labels: rest}.key()}] = append(byGroup[group{name, sample{labels: rest}.key()}], s)
		}
	}
	for g, list := range byGroup {
		sort.Slice(list, func(i, j int) bool { return q(list[i]) < q(list[j]) })
		for i := 1; i < len(list); i++ {
			if list[i].value < list[i-1].value {
				t.Errorf("%s%s: quantile %s = %v < quantile %s = %v", g.name, g.key, list[i].labels[exporter.QuantileLabel], list[i].value, list[i-1].labels[exporter.QuantileLabel], list[i-1].value)
			}
		}
	}
}

func q(s sample) float64 {
	v, err := strconv.ParseFloat(s.labels[exporter.QuantileLabel], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
