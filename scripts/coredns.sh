#!/usr/bin/env bash
# Builds CoreDNS (the cluster DNS of the offline single node, scripts/node/) from the Go module
# proxy: there is no container registry here to pull the coredns image from. Runs as a host
# process next to the kubelet. Prints the path of the binary.
# Idempotent: returns at once when this version is already cached. Cold: about 80 s on 2 cores.
set -euo pipefail

COREDNS_VERSION=v1.11.3
cache=${ESBENCH_CACHE:-$HOME/.cache/esbench}
out="$cache/coredns/$COREDNS_VERSION"
bin="$out/coredns"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

# Non-login shells (CI) may lack the Go install dir on PATH.
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "coredns.sh: 'go' not found on PATH (need Go >= 1.21)" >&2; exit 1; }

# Build into a scratch GOBIN and rename, so an interrupted build never looks finished.
# Run outside any module; the checksum database is unreachable here, so skip it.
tmp="$out/.build"
rm -rf "$tmp"
mkdir -p "$tmp"
(
  cd /
  GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$tmp" \
    go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION" >&2
)
mv "$tmp/coredns" "$bin"
rm -rf "$tmp"
echo "$bin"
