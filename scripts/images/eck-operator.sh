#!/usr/bin/env bash
# The real ECK operator's image without a registry: the binary scripts/eck-operator.sh builds
# from ECK's Go module, packed as docker.io/local/eck-operator:VERSION (entrypoint
# /elastic-operator, as in Elastic's image; ECK's own Helm chart passes `manager --config=...`).
# User 1001, numeric, for the chart's runAsNonRoot. Prints the archive's path.
source "$(dirname "$0")/lib.sh"
binary=$(built_binary eck-operator.sh)
version=$(basename "$(dirname "$binary")")
binary_image eck-operator "${version#v}" "$binary" /elastic-operator 1001:1001
