#!/usr/bin/env bash
# Installs what the test suite needs when it is missing: staticcheck, Helm,
# Prometheus 3 and Thanos (pinned, built through the Go module proxy) and,
# from Debian's packages, Prometheus 2 (promtool), Alertmanager, Chromium,
# GLPK (glpsol) and VictoriaMetrics (victoria-metrics, vmalert). Runs
# apt-get update once.
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

# Prometheus 3 (prometheus3, promtool3) and the Thanos ruler (thanos), built
# from the Go module proxy into GOPATH/bin under names that do not shadow
# Debian's 2.x prometheus and promtool; skipped when the cached binaries
# carry the pinned module version and build tags. Prometheus is built
# without its service discovery plugins (remove_all_sd: the tests scrape
# static targets), which are most of its build (the Kubernetes, AWS, Azure
# and GCE clients). The Thanos module pins replacements of some
# dependencies in its go.mod, which `go install module@version` refuses, so
# it is built in a scratch module that repeats them, with the build tags of
# its releases (slicelabels: its querier panics decoding label sets
# without it). Both are for test/alertquality's live runs
# (TestRulesLiveOnPrometheus3, TestRulesLiveOnThanosRuler). Each is built
# once. Cold (an empty GOPATH, build and module caches, modules from the
# proxy) on 2 cores, Prometheus took 290 s and Thanos 323 s, and this whole
# script 15 min (staticcheck and Helm first). Cached,
# the three checks below took 0.8 s and this whole script 2.9 s on 2 cores
# under a load of 18 (make test runs it every time).
prometheus3_version=v0.316.0 # Prometheus 3.16.0
thanos_version=v0.42.4       # v0.42.5 needs Go 1.26.10
gobin="$(go env GOPATH)/bin"
# built BINARY MODULE: the module version and build tags BINARY was built with.
built() { go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { v = $3 } $1 == "build" && $2 ~ /^-tags=/ { t = $2 } END { print v, t }'; }
if [ "$(built "$gobin/prometheus3" github.com/prometheus/prometheus)" != "$prometheus3_version -tags=remove_all_sd" ] ||
	[ "$(built "$gobin/promtool3" github.com/prometheus/prometheus)" != "$prometheus3_version -tags=remove_all_sd" ]; then
	echo "building Prometheus ${prometheus3_version} (prometheus3, promtool3)"
	t0=$SECONDS
	tmp="$(mktemp -d)"
	GOBIN="$tmp" go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/prometheus@${prometheus3_version}" \
		"github.com/prometheus/prometheus/cmd/promtool@${prometheus3_version}"
	mkdir -p "$gobin"
	mv "$tmp/prometheus" "$gobin/prometheus3"
	mv "$tmp/promtool" "$gobin/promtool3"
	rm -rf "$tmp"
	echo "built Prometheus in $((SECONDS - t0)) s"
fi
if [ "$(built "$gobin/thanos" github.com/thanos-io/thanos)" != "$thanos_version -tags=netgo,slicelabels" ]; then
	echo "building Thanos ${thanos_version} (thanos)"
	t0=$SECONDS
	tmp="$(mktemp -d)"
	(
		cd "$tmp"
		go mod init thanos-build >/dev/null 2>&1
		go mod edit -require="github.com/thanos-io/thanos@${thanos_version}"
		go mod download -json "github.com/thanos-io/thanos@${thanos_version}" >/dev/null
		gomod="$(go env GOMODCACHE)/cache/download/github.com/thanos-io/thanos/@v/${thanos_version}.mod"
		awk '/^replace \(/ { on = 1; next } on && /^\)/ { on = 0 } on && /=>/ { print }' "$gomod" |
			while read -r from _ to ver; do go mod edit -replace="$from=$to@$ver"; done
		GOFLAGS=-mod=mod go build -tags netgo,slicelabels -o "$tmp/thanos" github.com/thanos-io/thanos/cmd/thanos
	)
	mkdir -p "$gobin"
	mv "$tmp/thanos" "$gobin/thanos"
	rm -rf "$tmp"
	echo "built Thanos in $((SECONDS - t0)) s"
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
