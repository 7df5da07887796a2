package exporter

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// CapacitySource returns capacity estimates.
type CapacitySource func() []capacity.Report

// replicasDesc describes the replica signal (Report.Replicas: capacity.Replicas
// under its default policy), per model and SLO over every target serving
// the model.
func replicasDesc() *prometheus.Desc {
	p := capacity.DefaultReplicaPolicy()
	return prometheus.NewDesc(Namespace+"_capacity_replicas",
		fmt.Sprintf("Replicas the model needs to keep the SLO, fractional (an autoscaler rounds up): "+
			"the load summed over the targets serving the model, brought to now and, when rising, %g minutes ahead along its trend, "+
			"over the load planned per replica: %g%% of the median lower end of the bounded answers' 90%% prediction intervals, "+
			"or the highest lower_only answer (a load the SLO held at) when that is higher. "+
			"A prediction, not a bound; absent while no target has a capacity. Where each exporter scrapes one replica, sum it over them.",
			p.Lead.Minutes(), 100*(1-p.Margin)),
		[]string{"model_name", "slo"}, nil)
}

// capacityDescs are the capacity series for one set of extra label names.
type capacityDescs struct {
	requests, tokens, concurrency, headroom predictionDescs
	breach, breachEarliest, load, since     *prometheus.Desc
	method                                  *prometheus.Desc
}

// predictionDescs describe an estimate and the ends of its prediction interval.
type predictionDescs struct{ estimate, lower, upper *prometheus.Desc }

func newCapacityDescs(extra []string) *capacityDescs {
	labels := append(append([]string{"target"}, extra...), "model_name", "slo", "kind")
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_"+name, help, labels, nil)
	}
	// Named as the bounded series are: the ends go between prefix and
	// unit (vllm_slo_capacity_lower_requests_per_second).
	pred := func(prefix, suffix, help string) predictionDescs {
		name := func(end string) string {
			parts := []string{prefix}
			if end != "" {
				parts = append(parts, end)
			}
			return strings.Join(append(parts, suffix), "_")
		}
		return predictionDescs{
			estimate: desc(name(""), "Prediction of "+help+" (kind=bounded: with a two-sided interval; lower_only: the highest load seen with the SLO met)."),
			lower:    desc(name("lower"), "Lower end of the 90% prediction interval of "+help+"."),
			upper:    desc(name("upper"), "Upper end of the 90% prediction interval of "+help+"; absent when the history supports a lower end only."),
		}
	}
	return &capacityDescs{
		requests:       pred("capacity", "requests_per_second", "the highest sustained arrival rate at which the SLO's attainment stays at its goal, for the mix observed"),
		tokens:         pred("capacity", "tokens_per_second", "the generated tokens per second at that arrival rate"),
		concurrency:    pred("capacity", "concurrency", "the requests in flight (running + waiting) at that arrival rate, by Little's law"),
		headroom:       pred("capacity_headroom", "ratio", "1 − current load / capacity, the load averaged over the last 10 minutes"),
		breach:         desc("capacity_time_to_breach_seconds", "When the load, growing at its trend of the last 30 minutes, reaches the predicted capacity; absent unless the trend points there."),
		breachEarliest: desc("capacity_time_to_breach_earliest_seconds", "When the load, growing at its trend, reaches the lower end of the capacity's prediction interval."),
		load:           desc("capacity_load_requests_per_second", "Arrival rate over the last 10 minutes, the load the headroom is taken at."),
		since:          desc("capacity_learning_since_timestamp_seconds", "Start of the history the capacity is learned from: a change of the workload mix or of the SLO starts it over."),
		method: prometheus.NewDesc(Namespace+"_capacity_method_info", "Which fit placed a bounded capacity's interval, always 1: method=isotonic (a monotone fit, no shape assumed between observed loads) or gumbel (a Gumbel curve of attainment against load bridging a gap in the loads seen, cut to the isotonic interval).",
			append(slices.Clone(labels), "method"), nil),
	}
}

// capacity renders a report's capacity estimates as const metrics. They
// are predictions with prediction intervals, not bounds, and their help
// strings say so. A series whose value the history cannot support is
// absent: the upper ends of a lower_only answer, everything but the load
// and the learning start of an unknown one, and the time to breach unless
// the load's trend points at the capacity. Their extra label names are
// those of the estimates' targets.
func (c *Collector) capacity(ch chan<- prometheus.Metric, reps []capacity.Report) {
	if len(reps) == 0 {
		return
	}
	set := map[string]bool{}
	for _, r := range reps {
		for k := range r.Labels {
			set[k] = true
		}
	}
	extra := make([]string, 0, len(set))
	for k := range set {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	d := c.capacityDescSet(extra)
	for _, r := range reps {
		values := append(append([]string{r.Target}, extraValues(extra, r.Labels)...), r.Model, r.SLO, string(r.Estimate.Kind))
		renderCapacity(ch, d, r.Estimate, values)
	}
}

// renderReplicas emits the replica signal of each model and SLO, as the
// report holds it (Report.Replicas, computed where the capacity is).
func renderReplicas(ch chan<- prometheus.Metric, desc *prometheus.Desc, needs []capacity.ModelNeed) {
	for _, n := range needs {
		if math.IsNaN(n.Replicas) || math.IsInf(n.Replicas, 0) {
			continue
		}
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, n.Replicas, n.Model, n.SLO); err == nil {
			ch <- m
		}
	}
}

func (c *Collector) capacityDescSet(extra []string) *capacityDescs {
	key := strings.Join(extra, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.capDescs[key]; ok {
		return d
	}
	d := newCapacityDescs(extra)
	c.capDescs[key] = d
	return d
}

// renderCapacity emits one estimate's series.
func renderCapacity(ch chan<- prometheus.Metric, d *capacityDescs, e capacity.Estimate, values []string) {
	gauge := func(desc *prometheus.Desc, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, values...); err == nil {
			ch <- m
		}
	}
	gauge(d.load, e.Load)
	if !e.Since.IsZero() {
		gauge(d.since, float64(e.Since.UnixNano())/1e9)
	}
	if e.Kind == capacity.Unknown {
		return
	}
	for _, p := range []struct {
		ds predictionDescs
		r  capacity.Range
	}{{d.requests, e.Requests}, {d.tokens, e.Tokens}, {d.concurrency, e.Concurrency}, {d.headroom, e.Headroom}} {
		gauge(p.ds.estimate, p.r.Estimate)
		gauge(p.ds.lower, p.r.Lower)
		if e.Kind == capacity.Bounded {
			gauge(p.ds.upper, p.r.Upper)
		}
	}
	if e.Kind == capacity.Bounded && e.Method != "" {
		if m, err := prometheus.NewConstMetric(d.method, prometheus.GaugeValue, 1, append(slices.Clone(values), string(e.Method))...); err == nil {
			ch <- m
		}
	}
	if e.HasBreach {
		if e.TimeToBreach > 0 {
			gauge(d.breach, e.TimeToBreach.Seconds())
		}
		if e.TimeToBreachLower > 0 {
			gauge(d.breachEarliest, e.TimeToBreachLower.Seconds())
		}
	}
}
