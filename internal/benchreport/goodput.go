package benchreport

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Objective is one goodput objective as vLLM's --goodput takes it: a metric
// (ttft, tpot or e2el) and a threshold in milliseconds.
type Objective struct {
	Metric string  `json:"metric"`
	Ms     float64 `json:"ms"`
}

// Seconds is the threshold in seconds, computed exactly as vLLM does
// (milliseconds divided by 1000), so that comparisons agree bit for bit.
func (o Objective) Seconds() float64 { return o.Ms / 1000 }

// goodputMetrics are the keys vLLM's --goodput accepts.
var goodputMetrics = []string{"ttft", "tpot", "e2el"}

// ParseGoodput reads objectives written as vLLM's --goodput flag takes them:
// "KEY:VALUE" items (KEY ttft, tpot or e2el, VALUE in milliseconds), given
// as separate arguments or separated by spaces or commas in one. A key given
// twice keeps its last value, as a Python dict would.
func ParseGoodput(items []string) ([]Objective, error) {
	var out []Objective
	for _, item := range items {
		for _, f := range strings.FieldsFunc(item, func(r rune) bool { return r == ' ' || r == ',' }) {
			key, val, ok := strings.Cut(f, ":")
			if !ok {
				return nil, fmt.Errorf("goodput %q: want KEY:VALUE with KEY one of %s and VALUE in ms", f, strings.Join(goodputMetrics, ", "))
			}
			key = strings.ToLower(strings.TrimSpace(key))
			known := false
			for _, m := range goodputMetrics {
				known = known || m == key
			}
			if !known {
				return nil, fmt.Errorf("goodput %q: unknown metric %q, want one of %s", f, key, strings.Join(goodputMetrics, ", "))
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 {
				return nil, fmt.Errorf("goodput %q: threshold %q is not a non-negative number of milliseconds", f, val)
			}
			replaced := false
			for i := range out {
				if out[i].Metric == key {
					out[i].Ms, replaced = ms, true
				}
			}
			if !replaced {
				out = append(out, Objective{Metric: key, Ms: ms})
			}
		}
	}
	return out, nil
}

// threshold returns the objective's threshold in seconds for a vLLM metric key.
func threshold(objs []Objective, metric string) (float64, bool) {
	for _, o := range objs {
		if o.Metric == metric {
			return o.Seconds(), true
		}
	}
	return 0, false
}

// SLOOf turns goodput objectives into an slo.SLO for the histogram math
// (e2el is the histograms' e2e); nil objectives give no SLO.
func SLOOf(objs []Objective) []slo.SLO {
	if len(objs) == 0 {
		return nil
	}
	s := slo.SLO{Name: "goodput"}
	for _, o := range objs {
		m := slo.Metric(o.Metric)
		if o.Metric == "e2el" {
			m = slo.E2E
		}
		s.Objectives = append(s.Objectives, slo.Objective{Metric: m, Threshold: o.Seconds()})
	}
	return []slo.SLO{s}
}

// implausibleMs is the threshold below which a goodput objective is taken
// to be a mistake: no vLLM server delivers a first token, an output token
// or a whole request in under a millisecond, so a value like ttft:0.5 is
// almost surely seconds written where vLLM's --goodput takes milliseconds,
// and it would silently count every request bad.
const implausibleMs = 1.0

// GoodputWarnings returns one warning per objective whose threshold is below
// implausibleMs, saying that the value is read as milliseconds and what the
// same number in seconds would be written as. The objectives are still
// used as given: vLLM would read them the same way.
func GoodputWarnings(objs []Objective) []string {
	var out []string
	for _, o := range objs {
		if o.Ms >= implausibleMs {
			continue
		}
		w := fmt.Sprintf("goodput %s:%s is %s ms (vLLM's --goodput takes milliseconds), below the %s ms that hardly any request meets",
			o.Metric, fmtG(o.Ms), fmtG(o.Ms), fmtG(implausibleMs))
		if o.Ms > 0 {
			w += fmt.Sprintf("; for %s s write %s:%s", fmtG(o.Ms), o.Metric, fmtG(o.Ms*1000))
		}
		out = append(out, w)
	}
	return out
}
