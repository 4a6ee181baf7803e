#!/usr/bin/env bash
# Builds CoreDNS (the cluster DNS of the offline single node, scripts/node/) from the Go module
# proxy: there is no container registry here to pull the coredns image from. Runs as a host
# process next to the kubelet. Prints the path of the binary.
# Idempotent: returns at once when this version is already cached. Cold: about 80 s on 2 cores.
source "$(dirname "$0")/lib.sh"

COREDNS_VERSION=v1.11.3
bin="$cache/coredns/$COREDNS_VERSION/coredns"

exit_if_cached "$bin" test -x "$bin"
need_go 1.21
go_install "$bin" "github.com/coredns/coredns@$COREDNS_VERSION"
echo "$bin"
