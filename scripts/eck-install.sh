#!/usr/bin/env bash
# Installs the real ECK operator the way users install it: ECK's own Helm chart (deploy/eck-operator
# of its Go module, at the version of our CRDs) into namespace elastic-system, its validating
# webhook on (self-managed certificates); all of ECK's CRDs applied server-side first (not by the
# chart), so that a cluster whose ECK CRD came from elsewhere takes them without an ownership conflict.
# Usage: scripts/eck-install.sh [--registry] [NAMESPACE]
#   default     the offline node of scripts/node/up.sh: the operator built from the module
#               (scripts/images/eck-operator.sh), imported into the node's containerd
#   --registry  Elastic's released image, pulled from its registry (kind: make e2e-kind)
#   NAMESPACE   ECK manages that namespace only; default every namespace
# Cluster: $KUBECONFIG (default the node's). Idempotent (helm upgrade --install).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
source "$here/node/common.sh"
export KUBECONFIG=${KUBECONFIG:-$NODE_DIR/admin.kubeconfig}

image=(--set image.repository=docker.io/local/eck-operator --set image.pullPolicy=Never)
if [ "${1:-}" = --registry ]; then
  image=()
  shift
else
  bash "$here/images/import.sh" "$(bash "$here/images/eck-operator.sh")"
fi
need_go
module=$(go_module_dir "github.com/elastic/cloud-on-k8s/v3@$ECK_VERSION")
kubectl apply --server-side --force-conflicts -f "$module/config/crds/v1/all-crds.yaml" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/elasticsearches.elasticsearch.k8s.elastic.co >/dev/null
"$(bash "$here/helm.sh")" upgrade --install elastic-operator "$module/deploy/eck-operator" \
  --namespace elastic-system --create-namespace --set installCRDs=false "${image[@]}" \
  --set "image.tag=${ECK_VERSION#v}" --set telemetry.disabled=true --set "managedNamespaces={${1:-}}" \
  --wait --timeout 180s >/dev/null
echo "ECK ${ECK_VERSION#v} installed in elastic-system, managing ${1:-every namespace}" >&2
