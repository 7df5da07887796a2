#!/usr/bin/env bash
# Installs what the test suite needs when it is missing: staticcheck (pinned,
# through the Go module proxy) and, from Debian's packages, Prometheus
# (promtool), Alertmanager, Chromium, GLPK (glpsol) and VictoriaMetrics
# (victoria-metrics, vmalert). Runs apt-get update once.
set -euo pipefail

staticcheck_version=v0.8.2 # staticcheck 2026.2.2
staticcheck="$(go env GOPATH)/bin/staticcheck"
if ! "$staticcheck" -version 2>/dev/null | grep -qF "(${staticcheck_version#v})"; then
	echo "installing staticcheck ${staticcheck_version}"
	go install "honnef.co/go/tools/cmd/staticcheck@${staticcheck_version}"
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
