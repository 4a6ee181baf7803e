#!/usr/bin/env bash
# Imports OCI archives (from the scripts in this folder) into the offline node's containerd
# (scripts/node/up.sh), where pods find them by name with imagePullPolicy Never/IfNotPresent.
# Skips an archive whose image is already there with the same manifest digest.
# Usage: scripts/images/import.sh ARCHIVE...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../node/common.sh"
[ -S "$CONTAINERD_SOCK" ] || die "the node's containerd is not running (scripts/node/up.sh)"
for archive in "$@"; do
  read -r name digest < <(tar -xOf "$archive" index.json | python3 -c '
import json, sys
m = json.load(sys.stdin)["manifests"][0]
print(m["annotations"]["io.containerd.image.name"], m["digest"])')
  if ctr images ls -q "name==$name" 2>/dev/null | grep -qx "$name" \
     && [ "$(ctr images ls "name==$name" | awk 'NR == 2 {print $3}')" = "$digest" ]; then
    echo "$name: already imported ($digest)" >&2
    continue
  fi
  ctr images import "$archive" >/dev/null
  echo "$name: imported ($digest)" >&2
done
