package exporter

import (
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// newCapacityCollector returns the report collector over reports that hold
// nothing but the source's estimates (Report.Capacity) and the replica
// signal computed from them as online.Stage computes it (Report.Replicas):
// what renders estimates learned outside a pipeline (a benchmark of the
// learners, the series documentation's test). The daemon's and replay's
// estimates are in their reports, which NewCollector renders whole.
func newCapacityCollector(source CapacitySource) *Collector {
	return NewCollector(func() *pipeline.Report { return capacityReport(source()) })
}

// capacityReport is a report holding nothing but reps and their replica
// signal.
func capacityReport(reps []capacity.Report) *pipeline.Report {
	return &pipeline.Report{Capacity: reps, Replicas: capacity.ModelNeeds(reps, nil, capacity.DefaultReplicaPolicy())}
}
