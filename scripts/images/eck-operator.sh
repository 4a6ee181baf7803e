#!/usr/bin/env bash
# The real ECK operator's image without a registry: the binary scripts/eck-operator.sh builds
# from ECK's Go module, on a Debian bookworm `essential` root filesystem, packed as
# docker.io/local/eck-operator:VERSION (entrypoint /elastic-operator, as in Elastic's image;
# ECK's own Helm chart passes `manager --config=...`). User 1001, numeric, for the chart's runAsNonRoot.
# Prints the archive's path. Cached by a hash of the binary and these scripts.
source "$(dirname "$0")/lib.sh"
binary=$(bash "$repo_root/scripts/eck-operator.sh" | sed 's/^[^:]*: //; s/ (.*//')
version=$(basename "$(dirname "$binary")")
version=${version#v}
name=docker.io/local/eck-operator:$version
hash=$(content_hash "$images_dir/eck-operator.sh" "$images_dir/lib.sh" "$images_dir/oci-pack.py" "$binary")
archive="$image_cache/eck-operator-$version-$hash.tar"
[ -s "$archive" ] && { echo "$archive"; exit 0; }

work=$(mktemp -d "$image_cache/.eck-operator.XXXXXX")
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --variant=essential \
  --customize-hook="copy-in $binary /" \
  --customize-hook='mv "$1/eck-operator" "$1/elastic-operator"' \
  "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >&2
python3 "$images_dir/oci-pack.py" --rootfs "$work/rootfs" --name "$name" --out "$archive" \
  --entrypoint '["/elastic-operator"]' --user 1001:1001 >/dev/null
prune_older "eck-operator-$version" "$archive"
echo "$archive"
