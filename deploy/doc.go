// Package deploy holds the tests of the files under deploy/: the Grafana
// dashboard, the Kubernetes manifests, the container files and the systemd
// unit. It has no code of its own.
//
// Every shipped file is checked against the real program rather than a hand
// list: the dashboard's metric and label names against the exposition that
// `vllm-slo-exporter replay` prints for a simulated vLLM, the configurations
// with `check-config`, and the PrometheusRule against `rules`. The tests
// build the binary once with the go command.
//
// Regenerate deploy/kubernetes/prometheusrule.yaml from
// deploy/prometheus/rules.yml with:
//
//	go test ./deploy -run TestPrometheusRule -update
package deploy
