#!/usr/bin/env bash
# Installs Helm (used by the chart tests: lint, template) from the Go module proxy: there is
# no release download on the test machines. Prints the path of the helm binary.
# Idempotent: returns at once when this version is already cached. Cold: about 1-2 minutes.
set -euo pipefail

HELM_VERSION=v3.17.3
cache=${ESBENCH_CACHE:-$HOME/.cache/esbench}
out="$cache/helm/$HELM_VERSION"
helm="$out/helm"

if [ -x "$helm" ]; then
  echo "$helm"
  exit 0
fi

command -v go >/dev/null || { echo "helm.sh: 'go' not found on PATH (need Go >= 1.23)" >&2; exit 1; }

# Stamp what Helm's own Makefile stamps. Above all the Kubernetes version of its client-go
# (v0.32 -> 1.32): without it, `helm template` and `helm lint` assume Kubernetes 1.20 and
# refuse charts that declare a newer kubeVersion (ours needs >= 1.25).
K8S_MAJOR=1 K8S_MINOR=32
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=$K8S_MAJOR -X $pkg.k8sVersionMinor=$K8S_MINOR"
done

# Build into a scratch GOBIN and rename, so an interrupted build never looks finished.
# Run outside any module; the checksum database is unreachable here, so skip it.
tmp="$out/.build"
rm -rf "$tmp"
mkdir -p "$tmp"
(
  cd /
  GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$tmp" \
    go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
)
mv "$tmp/helm" "$helm"
rm -rf "$tmp"
echo "$helm"
