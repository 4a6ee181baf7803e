#!/usr/bin/env bash
# Rancher's local-path provisioner without a registry: the binary scripts/local-path-provisioner.sh
# builds from its Go module, packed as docker.io/local/local-path-provisioner:VERSION, on PATH as
# its chart runs it. The same image serves as the provisioner's helper pod image (upstream:
# busybox), which only runs `sh` with mkdir/rm on the node's volume folder. Runs as root like
# Rancher's image (the helper writes to a hostPath). Prints the archive's path.
source "$(dirname "$0")/lib.sh"
binary=$(built_binary local-path-provisioner.sh)
version=$(basename "$(dirname "$binary")")
binary_image local-path-provisioner "$version" "$binary" /usr/local/bin/local-path-provisioner 0:0
