package bench

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// ParseExpfmt is the alternative to scrape.Parse that the benchmarks compare
// with: the same extraction (the profile's families per model_name, engines
// summed, the maximum over pid for gauges, the largest `_created`) built on
// prometheus/common's expfmt.TextParser, which decodes the whole body into
// MetricFamily protobuf structs first. It reads the classic text format only
// (the format vLLM's Python server speaks) and validates less than
// scrape.Parse; on well-formed input both give the same snapshot.
func ParseExpfmt(body []byte, p scrape.Profile, t time.Time) (*scrape.Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("expfmt: %w", err)
	}
	snap := &scrape.Snapshot{Time: t, Models: map[string]*scrape.ModelSample{}, Found: map[scrape.Family]string{}}
	created := map[string]float64{}
	for _, spec := range p.Families {
		name, mf := chooseFamily(mfs, spec)
		if mf == nil {
			if !spec.Family.Optional() { // as scrape.Parse: never missing
				snap.Missing = append(snap.Missing, spec.Family)
			}
			continue
		}
		snap.Found[spec.Family] = name
		switch spec.Kind {
		case scrape.KindHistogram:
			err = addHistograms(snap, spec.Family, name, mf)
		case scrape.KindCounter:
			addValues(snap, spec.Family, mf, false)
		default:
			addValues(snap, spec.Family, mf, true)
		}
		if err != nil {
			return nil, err
		}
		if spec.Kind == scrape.KindGauge {
			continue
		}
		metric, label, value := scrape.SplitName(name)
		cname := metric + "_created"
		if spec.Kind == scrape.KindCounter {
			cname = strings.TrimSuffix(metric, "_total") + "_created"
		}
		if cf := mfs[cname]; cf != nil {
			for _, m := range matching(cf.GetMetric(), label, value) {
				mn := labelValue(m, "model_name")
				created[mn] = math.Max(created[mn], metricValue(m))
			}
		}
	}
	for mn, v := range created {
		if ms := snap.Models[mn]; ms != nil {
			ms.Created = v
		}
	}
	return snap, nil
}

// chooseFamily returns the first of spec's names exposed with a compatible
// type and at least one sample.
func chooseFamily(mfs map[string]*dto.MetricFamily, spec scrape.FamilySpec) (string, *dto.MetricFamily) {
	want := map[scrape.Kind]dto.MetricType{
		scrape.KindHistogram: dto.MetricType_HISTOGRAM,
		scrape.KindCounter:   dto.MetricType_COUNTER,
		scrape.KindGauge:     dto.MetricType_GAUGE,
	}[spec.Kind]
	for _, name := range spec.Names {
		metric, label, value := scrape.SplitName(name)
		mf := mfs[metric]
		if mf == nil && spec.Kind == scrape.KindCounter {
			mf = mfs[strings.TrimSuffix(metric, "_total")] // OpenMetrics-style family name
		}
		if mf == nil {
			continue
		}
		if t := mf.GetType(); t != want && t != dto.MetricType_UNTYPED {
			continue
		}
		if label != "" {
			mf = &dto.MetricFamily{Name: mf.Name, Type: mf.Type, Metric: matching(mf.GetMetric(), label, value)}
		}
		if len(mf.GetMetric()) == 0 {
			continue
		}
		return name, mf
	}
	return "", nil
}

// matching returns the metrics whose label has the value; all of them when
// label is empty (a profile name without a label matcher).
func matching(ms []*dto.Metric, label, value string) []*dto.Metric {
	if label == "" {
		return ms
	}
	var out []*dto.Metric
	for _, m := range ms {
		if labelValue(m, label) == value {
			out = append(out, m)
		}
	}
	return out
}

// childKey is a metric's identity without le and pid (when dropPID), in
// sorted label order, so children are summed in a fixed order.
func childKey(m *dto.Metric, dropPID bool) string {
	ls := slices.Clone(m.GetLabel())
	sort.Slice(ls, func(i, j int) bool { return ls[i].GetName() < ls[j].GetName() })
	var b strings.Builder
	for _, l := range ls {
		if l.GetName() == "le" || dropPID && l.GetName() == "pid" {
			continue
		}
		for _, s := range []string{l.GetName(), l.GetValue()} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	return b.String()
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

func sample(snap *scrape.Snapshot, model string) *scrape.ModelSample {
	ms := snap.Models[model]
	if ms == nil {
		ms = &scrape.ModelSample{
			Histograms: map[scrape.Family]slo.Histogram{},
			Counters:   map[scrape.Family]float64{},
			Gauges:     map[scrape.Family]float64{},
		}
		snap.Models[model] = ms
	}
	return ms
}

// sortedMetrics returns mf's metrics with their keys, in key order.
func sortedMetrics(mf *dto.MetricFamily, dropPID bool) ([]string, []*dto.Metric) {
	ms := mf.GetMetric()
	keys := make([]string, len(ms))
	idx := make([]int, len(ms))
	for i, m := range ms {
		keys[i], idx[i] = childKey(m, dropPID), i
	}
	sort.Slice(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	outK := make([]string, len(ms))
	outM := make([]*dto.Metric, len(ms))
	for i, j := range idx {
		outK[i], outM[i] = keys[j], ms[j]
	}
	return outK, outM
}

// addHistograms sums one histogram family's children per model.
func addHistograms(snap *scrape.Snapshot, fam scrape.Family, name string, mf *dto.MetricFamily) error {
	_, metrics := sortedMetrics(mf, false)
	for _, m := range metrics {
		h := m.GetHistogram()
		bs := slices.Clone(h.GetBucket())
		sort.Slice(bs, func(i, j int) bool { return bs[i].GetUpperBound() < bs[j].GetUpperBound() })
		if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
			return fmt.Errorf("expfmt: %s: no +Inf bucket", name)
		}
		hg := slo.Histogram{Edges: make([]float64, len(bs)), Counts: make([]float64, len(bs)), Sum: h.GetSampleSum()}
		for i, b := range bs {
			hg.Edges[i] = b.GetUpperBound()
			hg.Counts[i] = float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				hg.Counts[i] = b.GetCumulativeCountFloat()
			}
		}
		ms := sample(snap, labelValue(m, "model_name"))
		prev, ok := ms.Histograms[fam]
		if !ok {
			ms.Histograms[fam] = hg
			continue
		}
		if !slices.Equal(prev.Edges, hg.Edges) {
			return fmt.Errorf("expfmt: %s: bucket layout %v differs from %v", name, hg.Edges, prev.Edges)
		}
		for i := range prev.Counts {
			prev.Counts[i] += hg.Counts[i]
		}
		prev.Sum += hg.Sum
		ms.Histograms[fam] = prev
	}
	return nil
}

// addValues sums a counter's children per model, or a gauge's after taking
// the maximum over pid within each group.
func addValues(snap *scrape.Snapshot, fam scrape.Family, mf *dto.MetricFamily, gauge bool) {
	keys, metrics := sortedMetrics(mf, gauge)
	type group struct {
		model string
		v     float64
	}
	var groups []group
	for i, m := range metrics {
		v := metricValue(m)
		if gauge && i > 0 && keys[i] == keys[i-1] {
			g := &groups[len(groups)-1]
			g.v = math.Max(g.v, v)
			continue
		}
		groups = append(groups, group{labelValue(m, "model_name"), v})
	}
	for _, g := range groups {
		ms := sample(snap, g.model)
		if gauge {
			ms.Gauges[fam] += g.v
		} else {
			ms.Counters[fam] += g.v
		}
	}
}
