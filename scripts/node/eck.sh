#!/usr/bin/env bash
# Installs the real ECK operator on the node of up.sh the way users install it: ECK's own Helm
# chart (deploy/eck-operator from its Go module, scripts/eck-operator.sh) with the image of
# scripts/images/eck-operator.sh, its validating webhook on (self-managed certificates), into
# namespace elastic-system; all of ECK's CRDs applied server-side first (not by the chart), so
# that a node whose ECK CRD came from elsewhere takes them without an ownership conflict.
# Usage: scripts/node/eck.sh [NAMESPACE]   (ECK manages NAMESPACE only; default every namespace)
# Idempotent (helm upgrade --install): running it again reconfigures the same release.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../.." && pwd)
source "$here/common.sh"
export KUBECONFIG=${KUBECONFIG:-$NODE_DIR/admin.kubeconfig}
kubectl() { "${ESBENCH_CACHE:-$HOME/.cache/esbench}/k8s/v1.32.4/bin/kubectl" "$@"; }

binary=$(bash "$repo_root/scripts/eck-operator.sh" | sed 's/^[^:]*: //; s/ (.*//')
cache=$(dirname "$binary")
version=$(basename "$cache")
bash "$repo_root/scripts/images/import.sh" "$(bash "$repo_root/scripts/images/eck-operator.sh")"
kubectl apply --server-side --force-conflicts -f "$cache/all-crds.yaml" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/elasticsearches.elasticsearch.k8s.elastic.co >/dev/null
"$(bash "$repo_root/scripts/helm.sh")" upgrade --install elastic-operator "$cache/chart" \
  --namespace elastic-system --create-namespace --set installCRDs=false \
  --set image.repository=docker.io/local/eck-operator --set "image.tag=${version#v}" --set image.pullPolicy=Never \
  --set telemetry.disabled=true --set "managedNamespaces={${1:-}}" --wait --timeout 180s >/dev/null
echo "ECK ${version#v} installed in elastic-system, managing ${1:-every namespace}" >&2
