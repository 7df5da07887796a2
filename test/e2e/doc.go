// Package e2e holds end-to-end tests of the vllm-slo-exporter binary: the
// replay goldens over simulator recordings (checked against the simulator's
// ground truth), and the daemon run as a subprocess against a simulated vLLM
// (readiness, window counts, reload, state file, TLS and basic auth, the
// SLO console in headless Chromium, the demo and check-config commands).
//
// The package has no code of its own; `go test ./test/e2e/` builds the binary once
// and runs it. `go test ./test/e2e/ -update` rewrites the recordings and goldens
// under testdata/.
package e2e
