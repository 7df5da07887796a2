package otlp

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

// metrics are the receiver's own series.
type metrics struct {
	store *traces.Store

	exports, spanOutcomes, forwarded *prometheus.CounterVec
	retained, retainedBytes          *prometheus.Desc
}

func newMetrics(store *traces.Store) *metrics {
	const ns = "vllm_slo_exporter_otlp"
	return &metrics{
		store: store,
		exports: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "exports_total",
			Help: "OTLP export requests received, by transport and outcome: ok; on HTTP bad_payload, too_large, unsupported_media_type, method_not_allowed, throttled (503: the receiver's memory budget or in-flight cap was in use; the sender retries); on gRPC the status code (unavailable when throttled, resource_exhausted for a message over the limit or the decoding budget, invalid_argument for one that does not decode, canceled, ...)."}, []string{"transport", "outcome"}),
		spanOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "spans_total",
			Help: "Spans received, by outcome: stored, duplicate (same request id and end time), too_old (ended before the retention), too_new (ended more than a minute after the receiver's clock), invalid_value (a negative, infinite or non-numeric latency or token count), refused (over the model or adapter cap), unknown_target, no_end_time, other_span (not llm_request)."}, []string{"outcome"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "forwarded_exports_total",
			Help: "Exports forwarded downstream, by outcome (ok, failed, dropped: the queue was full)."}, []string{"outcome"}),
		retained:      prometheus.NewDesc(ns+"_retained_requests", "Per-request records kept for exact mode.", nil, nil),
		retainedBytes: prometheus.NewDesc(ns+"_retained_bytes", "Bytes of the arrays holding the per-request records.", nil, nil),
	}
}

func (m *metrics) export(transport, outcome string) {
	m.exports.WithLabelValues(transport, outcome).Inc()
}

func (m *metrics) spans(outcome string, n int) {
	if n > 0 {
		m.spanOutcomes.WithLabelValues(outcome).Add(float64(n))
	}
}

// Describe sends the descriptors of every series.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.exports.Describe(ch)
	m.spanOutcomes.Describe(ch)
	m.forwarded.Describe(ch)
	ch <- m.retained
	ch <- m.retainedBytes
}

// Collect sends the counters and the store's size.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.exports.Collect(ch)
	m.spanOutcomes.Collect(ch)
	m.forwarded.Collect(ch)
	n, bytes := m.store.Retained()
	ch <- prometheus.MustNewConstMetric(m.retained, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(m.retainedBytes, prometheus.GaugeValue, float64(bytes))
}
