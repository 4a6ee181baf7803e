#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries the integration tests run
# (kube-apiserver, kube-controller-manager) plus kubectl, and the node binaries the offline
# end-to-end tests run (kube-scheduler, kubelet, kube-proxy), from the Go module proxy:
# there is no container registry or release download on the test machines.
# Idempotent: returns at once when the binaries for this version are already cached.
# Cold: about 6 minutes on 2 cores and ~3.5 GB of Go caches.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

out=$k8s_bin
binaries=(kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet kube-proxy)

have_all() {
  local b
  for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
}

exit_if_cached "Kubernetes $K8S_VERSION binaries: $out" have_all
need_go 1.23

# Build in a scratch copy so `-mod=mod` never rewrites the committed go.mod/go.sum.
work="$cache/k8s/$K8S_VERSION/build"
rm -rf "$work"
mkdir -p "$work" "$out"
cp "$here/k8s-build/go.mod" "$here/k8s-build/go.sum" "$work/"

# The checksum database is unreachable here; the committed go.sum still pins every hash.
export GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0

# Stamp the real version (as Kubernetes' hack/lib/version.sh does) so /version and
# `kubectl version` report v1.32.4 instead of v0.0.0-master.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

start=$(date +%s)
(
  cd "$work"
  for b in "${binaries[@]}"; do
    # An older cache may hold only some of them: build just the missing ones.
    [ -x "$out/$b" ] && continue
    echo "building $b $K8S_VERSION ..."
    # Build to a temporary name and rename, so an interrupted build never looks finished.
    go build -trimpath -ldflags "$ldflags" -o "$out/.$b.tmp" "k8s.io/kubernetes/cmd/$b"
    mv "$out/.$b.tmp" "$out/$b"
  done
)
rm -rf "$work"
echo "built in $(( $(date +%s) - start ))s"
echo "Kubernetes $K8S_VERSION binaries: $out"
