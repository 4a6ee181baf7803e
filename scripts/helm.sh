#!/usr/bin/env bash
# Installs Helm (used by the chart tests: lint, template) from the Go module proxy: there is
# no release download on the test machines. Prints the path of the helm binary.
# Idempotent: returns at once when this version is already cached. Cold: about 1-2 minutes.
source "$(dirname "$0")/lib.sh"

HELM_VERSION=v3.17.3
helm="$cache/helm/$HELM_VERSION/helm"

exit_if_cached "$helm" test -x "$helm"
need_go 1.23

# Stamp what Helm's own Makefile stamps. Above all the Kubernetes version of its client-go
# (v0.32 -> 1.32): without it, `helm template` and `helm lint` assume Kubernetes 1.20 and
# refuse charts that declare a newer kubeVersion (ours needs >= 1.25).
K8S_MAJOR=1 K8S_MINOR=32
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=$K8S_MAJOR -X $pkg.k8sVersionMinor=$K8S_MINOR"
done

go_install "$helm" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ldflags"
echo "$helm"
