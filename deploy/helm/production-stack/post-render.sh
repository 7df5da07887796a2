#!/bin/sh
# A Helm post-renderer that adds the vllm-slo-exporter sidecar to
# production-stack's vLLM engine Deployments, whose chart has no value for an
# extra container:
#
#   helm install <release> vllm/vllm-stack -f <values> \
#     --post-renderer deploy/helm/production-stack/post-render.sh
#
# Helm writes the rendered manifests to its standard input and applies what
# it prints. kustomization.yaml patches slo-exporter-patch.yaml into every
# Deployment labelled app.kubernetes.io/component=serving-engine; the rest
# passes through unchanged. Needs kustomize, or kubectl (kubectl kustomize).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/rendered.yaml"
cp "$here/kustomization.yaml" "$here/slo-exporter-patch.yaml" "$work/"
if command -v kustomize >/dev/null 2>&1; then
	kustomize build "$work"
else
	kubectl kustomize "$work"
fi
