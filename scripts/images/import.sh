#!/usr/bin/env bash
# Imports OCI archives (from the scripts in this folder) into the offline node's containerd
# (scripts/node/up.sh), where pods find them by name with imagePullPolicy Never/IfNotPresent.
# Skips an archive whose image is already there with the same manifest digest, and of the others
# sends only the blobs containerd lacks: an image's unchanged lower layers would otherwise stream
# through its importer again (containerd keeps its images across nodes: scripts/node/common.sh).
# Usage: scripts/images/import.sh ARCHIVE...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../node/common.sh"
[ -S "$CONTAINERD_SOCK" ] || die "the node's containerd is not running (scripts/node/up.sh)"
# new_blobs ARCHIVE: the archive, as a stream, without the blobs containerd has.
new_blobs() {
  ctr content ls -q | python3 -c '
import sys, tarfile
have = {"blobs/" + digest.replace(":", "/") for digest in sys.stdin.read().split()}
with tarfile.open(sys.argv[1]) as archive, \
        tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT) as stream:
    for member in archive:
        if member.name not in have:
            stream.addfile(member, archive.extractfile(member))' "$1"
}

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
  new_blobs "$archive" | ctr images import - >/dev/null
  echo "$name: imported ($digest)" >&2
done
