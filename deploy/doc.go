// Package deploy holds the tests of the files under deploy/: the Grafana
// dashboard, the Kubernetes manifests, the container files and the systemd
// unit. It has no code of its own.
//
// Every shipped file is checked against the real program rather than a hand
// list: the dashboard's metric and label names against the exposition that
// `vllm-slo-exporter replay` prints for a simulated vLLM, the configurations
// with `check-config`, and the PrometheusRule against `rules`. The tests
// build the binary once with the go command. The Helm chart is rendered with
// the pinned helm (scripts/install-test-deps.sh), and its objects checked
// the same way.
//
// Regenerate deploy/kubernetes/prometheusrule.yaml from
// deploy/prometheus/rules.yml with:
//
//	go test ./deploy -run TestPrometheusRule -update
//
// and the Helm chart's files/rules.yml and files/dashboard.json with:
//
//	go test ./deploy -run TestHelmChartFiles -update
package deploy
