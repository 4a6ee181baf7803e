#!/usr/bin/env bash
# Builds etcd from its Go module for the test control planes and the local node. Debian's
# etcd 3.4.23 predates the watch-progress fixes (3.4.31+, 3.5.13+) that kube-apiserver 1.32's
# watch cache relies on: under load the API server then answers watches with 504 "Too large
# resource version" for tens of seconds, which stalled tests and `make bench`.
# Idempotent: returns at once when this version is cached. Cold: about 30 s plus downloads.
# Prints the binary's path on its last line.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

ETCD_VERSION=v3.5.21  # must match scripts/etcd-build/go.mod
out="$cache/etcd/$ETCD_VERSION/bin"
exit_if_cached "$out/etcd" test -x "$out/etcd"
need_go 1.23

# Build in a scratch copy so `-mod=mod` never rewrites the committed go.mod/go.sum.
work="$cache/etcd/$ETCD_VERSION/build"
rm -rf "$work"
mkdir -p "$work" "$out"
cp "$here/etcd-build/go.mod" "$here/etcd-build/go.sum" "$here/etcd-build/main.go" "$work/"
start=$(date +%s)
(
  cd "$work"
  # The checksum database is unreachable here; the committed go.sum still pins every hash.
  GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/.etcd.tmp" . >&2
)
mv "$out/.etcd.tmp" "$out/etcd"
rm -rf "$work"
"$out/etcd" --version >&2  # all of it: `| head -1` kills etcd with SIGPIPE now and then (exit 141)
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$out/etcd"
