#!/usr/bin/env bash
# Installs what the test suite needs when it is missing: staticcheck and Helm
# (pinned, built through the Go module proxy) and, from Debian's packages,
# Prometheus (promtool), Alertmanager, Chromium, GLPK (glpsol) and
# VictoriaMetrics (victoria-metrics, vmalert). Runs apt-get update once.
set -euo pipefail

staticcheck_version=v0.8.2 # staticcheck 2026.2.2
staticcheck="$(go env GOPATH)/bin/staticcheck"
if ! "$staticcheck" -version 2>/dev/null | grep -qF "(${staticcheck_version#v})"; then
	echo "installing staticcheck ${staticcheck_version}"
	go install "honnef.co/go/tools/cmd/staticcheck@${staticcheck_version}"
fi

# Helm, for deploy/helm_test.go (helm lint and helm template on the chart).
# Built from its module (about 5 minutes on 2 cores the first time, then
# cached in $(go env GOPATH)/bin). go install leaves `helm version` at the
# branch ("v3.22"); the -X flag stamps the release as Helm's own Makefile does.
helm_version=v3.22.0
helm="$(go env GOPATH)/bin/helm"
if [ "$("$helm" version --short 2>/dev/null)" != "$helm_version" ]; then
	echo "installing helm ${helm_version}"
	go install -ldflags "-X helm.sh/helm/v3/internal/version.version=${helm_version}" \
		"helm.sh/helm/v3/cmd/helm@${helm_version}"
fi

need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v glpsol >/dev/null 2>&1 || need+=(glpk-utils)
command -v victoria-metrics >/dev/null 2>&1 || need+=(victoria-metrics)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing test dependencies: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for a lock another apt holds (a second checkout installing at the
# same time) instead of failing at once.
lock=(-o DPkg::Lock::Timeout=600)
$sudo apt-get "${lock[@]}" update -qq
$sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
